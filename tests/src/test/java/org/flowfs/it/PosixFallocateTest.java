package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * {@code fallocate(2)} on the mount: reservations (mode 0, {@code FALLOC_FL_KEEP_SIZE}, glibc's
 * {@code posix_fallocate}), holes punched and ranges zeroed, over a file that spans the head and
 * both I/O servers' datafiles; the same script on the local disk must print the same. Then what
 * only FlowFS can show: the reservation is storage taken on the I/O servers, and removing the file
 * gives it back.
 */
class PosixFallocateTest extends PosixSuite {
  private static final long MIB = 1 << 20;

  @Test
  void fallocate_reservesPunchesAndZeroes_asOnTheLocalDisk() throws Exception {
    // seq's 1,988,895 bytes: the 64 KiB head and both datafiles; offsets not block-aligned
    posix("modes", """
        seq 1 300000 > f
        fallocate -l 5000000 f; stat -c %s f; md5sum < f
        fallocate -n -o 6000000 -l 1000000 f; stat -c %s f
        fallocate -p -o 100 -l 200000 f; stat -c %s f; md5sum < f
        fallocate -z -o 1000000 -l 300000 f; md5sum < f
        fallocate -z -o 4900000 -l 200000 f; stat -c %s f; md5sum < f
        fallocate -z -n -o 5000000 -l 300000 f; stat -c %s f; md5sum < f
        fallocate -x -l 7000000 f; stat -c %s f; md5sum < f
        fallocate -l 100 f; stat -c %s f
        a=$(stat -c '%.9Y %.9Z' f); sleep 0.02; fallocate -n -l 100 f; b=$(stat -c '%.9Y %.9Z' f)
        [ "$a" != "$b" ] && echo "times moved"
        t fallocate -l 100 missing/g
        """, """
        5000000
        55586ab4abe1e90bcc63a3ec20498ace  -
        5000000
        5000000
        62b340d5d72b828607affa64dacb5704  -
        e7c026dfef7a20c1f1c1738c7256ab6f  -
        5100000
        a3b63e641d44249c86fc96d1f6634727  -
        5100000
        a3b63e641d44249c86fc96d1f6634727  -
        7000000
        8822c5f0ce4091328cff5af56d76ee9e  -
        7000000
        times moved
        fallocate -l 100 missing/g: fallocate: cannot open missing/g: No such file or directory
        """);
  }

  @Test
  void fallocate_byAnUnprivilegedOwner_clearsSetIdBits_asOnTheLocalDisk() throws Exception {
    assumeRoot();
    posix("setid", """
        alice sh -c 'echo x > f; chmod 6755 f; fallocate -n -l 10 f; stat -c %a f'
        alice sh -c 'chmod 6755 f; fallocate -l 100000 f; stat -c %a f'
        alice sh -c 'chmod 6745 f; fallocate -p -o 0 -l 1 f; stat -c %a f'
        echo x > g; chmod 6755 g; fallocate -l 10000 g; stat -c %a g
        """, """
        755
        755
        2745
        6755
        """);
  }

  @Test
  void reservation_isStorageOnTheIoServers_andARemovalGivesItBack() throws Exception {
    Path d = onMount("reserve");
    long before = stored();
    sh(d, "fallocate -l 64M grown; touch kept; fallocate -n -l 32M kept; stat -c %s grown kept");
    long reserved = stored() - before;
    assertTrue(reserved >= 96 * MIB - 128 * 1024, "96 MiB reserved on the servers (less the head): " + reserved);
    assertEquals("", sh(d, "cmp -n 67108864 grown /dev/zero; cmp -s kept /dev/null || echo kept has bytes"));
    // a truncate that reaches the datafiles (the file is past its head) frees what lies past the end
    sh(d, "head -c 100000 /dev/zero > cut; fallocate -n -l 32M cut");
    assertTrue(stored() - before >= 128 * MIB - 256 * 1024, "32 MiB more: " + (stored() - before));
    sh(d, "truncate -s 100000 cut");
    assertTrue(stored() - before < 97 * MIB, "the truncate freed the 32 MiB: " + (stored() - before));
    sh(d, "rm grown kept cut");
    long left = stored() - before;
    // removals go to the metadata server with the directory lease's batch, the datafiles' after
    for (long until = System.nanoTime() + 30_000_000_000L; left >= MIB && System.nanoTime() < until; ) {
      Thread.sleep(100);
      left = stored() - before;
    }
    assertTrue(left < MIB, "the removal gave the reservations back within 30 s: " + left + " bytes left");
  }

  @Test
  void reservation_largerThanTheDisksRoom_isEnospc_andReservesNothing() throws Exception {
    // both I/O servers keep their datafiles on the one disk under the test's directory: each
    // half fits, the two together do not
    Path d = onMount("full");
    long before = stored();
    assertEquals("fallocate: fallocate failed: No space left on device\nsize 0\n", sh(d, """
        touch f
        avail=$(df -B1 --output=avail . | tail -1)
        fallocate -l $((avail / 2 * 3)) f 2>&1 || true
        echo size $(stat -c %s f)
        """));
    assertTrue(stored() - before < MIB, "nothing reserved: " + (stored() - before));
  }

  @Test
  void otherModes_areNotSupported() throws Exception {
    // collapsing or inserting ranges would move every later byte between servers
    assertEquals("""
        fallocate -c -o 0 -l 65536 f: fallocate: fallocate failed: Operation not supported
        fallocate -i -o 0 -l 65536 f: fallocate: fallocate failed: Operation not supported
        """, sh(onMount("other"), """
        head -c 300000 /dev/urandom > f
        t fallocate -c -o 0 -l 65536 f
        t fallocate -i -o 0 -l 65536 f
        """));
  }

  /** Bytes of storage the I/O servers' datafiles hold, free pool included ({@code du}). */
  private long stored() throws Exception {
    StringBuilder dirs = new StringBuilder();
    for (int i = 0; i < fs.ioServers(); i++) {
      dirs.append(' ').append(fs.dataDir().resolve("io" + i).resolve("data"));
    }
    String out = sh(tmp, "du -s -B1 -c" + dirs + " | tail -1 | cut -f1");
    return Long.parseLong(out.strip());
  }
}
