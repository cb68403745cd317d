package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An I/O server whose disk is full (its storage directory is a 16 MiB tmpfs): the writer gets
 * ENOSPC ("No space left on device"), not EIO, carried from the server's store through the flow
 * and the client's write-behind to the write or close that reports it; the other files are
 * intact; the server keeps serving, and takes writes again once a file is deleted.
 */
class DiskFullTest {
  @Test
  void ioServerDiskFull_writerGetsEnospc_othersIntact_serverRecovers(@TempDir Path tmp) throws Exception {
    Path small = tmp.resolve("data").resolve("io1");
    Files.createDirectories(small);
    Sh.ok(tmp, "mount -t tmpfs -o size=16m flowfs-test-full '" + small + "'");
    try (ProcessDeployment fs = new ProcessDeployment(tmp, 2, "layout.servers = 1\nrpc.timeout = 5s\n")) {
      Path m = fs.mountPoint();
      String on0 = fileOn(m, 0, "keep");
      String on1 = fileOn(m, 1, "keep");
      Sh.ok(m, "head -c 1000000 /dev/urandom > " + on0 + " && head -c 1000000 /dev/urandom > " + on1
          + " && sync " + on0 + " " + on1 + " && sha256sum " + on0 + " " + on1 + " > " + tmp.resolve("sums"));

      // fill I/O server 1
      String full = fileOn(m, 1, "full");
      Sh.Result r = Sh.run(m, "dd if=/dev/zero of=" + full + " bs=1M count=32 conv=fsync 2>&1", 120);
      assertNotEquals(0, r.exit(), "32 MiB fit on a 16 MiB disk: " + r.out());
      assertTrue(r.out().contains("No space left on device"), r.out());
      assertFalse(r.out().contains("Input/output error"), r.out());

      // the other files are intact, and the full server still serves
      Sh.ok(m, "echo 3 > /proc/sys/vm/drop_caches && sha256sum -c " + tmp.resolve("sums"));
      Sh.ok(m, "ls -l && df . && echo more >> " + on0 + " && tail -c 5 " + on0 + " | grep -q more");

      // room again: the server takes writes
      Sh.ok(m, "rm " + full);
      assertTrue(waitForFree(small, 10 << 20), "removing the file freed no space on I/O server 1");
      String again = fileOn(m, 1, "again");
      Sh.ok(m, "head -c 4000000 /dev/urandom > " + tmp.resolve("again") + " && cp " + tmp.resolve("again") + " " + again
          + " && sync " + again + " && cmp " + again + " " + tmp.resolve("again"));

      // without fsync the write-behind reports it too, at a later write or at close
      String full2 = fileOn(m, 1, "full");
      r = Sh.run(m, "head -c 32000000 /dev/zero > " + full2, 120);
      assertNotEquals(0, r.exit(), r.err());
      assertTrue(r.err().contains("No space left on device"), r.err());
      Sh.ok(m, "rm " + full2 + " && cmp " + again + " " + tmp.resolve("again"));
    } finally {
      Sh.run(tmp, "umount '" + small + "' || umount -l '" + small + "'");
    }
  }

  /** Creates empty files named {@code prefix}N until one lands on I/O server {@code io}; removes the others. */
  static String fileOn(Path m, int io, String prefix) {
    StringBuilder others = new StringBuilder();
    for (int i = 0; i < 8; i++) {
      String f = prefix + io + "_" + i;
      Sh.ok(m, "touch " + f);
      if (IoServerFailureTest.serverOf(m, f) == io) {
        Sh.ok(m, "rm -f" + others);
        return f;
      }
      others.append(' ').append(f);
    }
    throw new AssertionError("no file landed on I/O server " + io);
  }

  /** Waits (10 s at most) until {@code dir}'s file system has {@code bytes} free. */
  static boolean waitForFree(Path dir, long bytes) throws Exception {
    for (int i = 0; i < 100; i++) {
      if (Files.getFileStore(dir).getUsableSpace() >= bytes) {
        return true;
      }
      Thread.sleep(100);
    }
    return false;
  }
}
