package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * File data through the mount: O_APPEND from several processes, O_EXCL, O_TRUNC, sparse files,
 * random small writes, ftruncate, fsync and fdatasync, statfs, fcntl locks and flock between processes, and mmap.
 *
 * <p>Where the kernel's page cache could hide what FlowFS stored (mmap, fsync), a second client of
 * the same servers reads the file past the mount: that is what another machine would see.
 */
class PosixFileIoTest extends PosixSuite {
  /** Records of 13 bytes: many cross a page, which the kernel then sends in two requests. */
  @Test
  void oAppend_severalProcessesAtOnce_loseNoRecord() throws Exception {
    posix("append", """
        for x in A B C; do probe append log $x 3000 13 >/dev/null & done
        wait
        wc -l < log; sort -u log | wc -l; stat -c %s log
        grep -cvE '^[ABC] {2}[0-9]{9}$' log || true
        for x in A B C; do grep "^$x " log | sort -c && echo "$x in order"; done
        """, """
        9000
        9000
        117000
        0
        A in order
        B in order
        C in order
        """);
  }

  /**
   * libfuse 2's high-level API gives every name its own kernel inode, whose idea of the size lags
   * behind the other name's appends: the client puts O_APPEND writes at the end it knows. Records
   * of 16 bytes never cross a page: the kernel serializes appends per inode only, and a write it
   * splits at a page boundary can interleave with the other name's (README, "POSIX").
   */
  @Test
  void oAppend_throughTwoHardLinks_losesNoRecord() throws Exception {
    posix("appendlinks", """
        touch one; ln one two
        probe append one A 2000 >/dev/null & probe append two B 2000 >/dev/null &
        wait
        wc -l < one; sort -u two | wc -l; grep -c '^A' one; grep -c '^B' two
        """, """
        4000
        4000
        2000
        2000
        """);
  }

  @Test
  void oAppend_afterAnotherProcessesBufferedWrites_landsAtTheEnd() throws Exception {
    posix("appendbuffered", """
        exec 3> f
        head -c 1000000 /dev/zero | tr '\\0' x >&3
        probe append f Z 1 >/dev/null
        exec 3>&-
        stat -c %s f; tail -c 17 f
        """, """
        1000016
        xZ     000000000
        """);
  }

  @Test
  void oExcl_failsOnEveryExistingName_andOneOfTwoRacersWins() throws Exception {
    posix("excl", """
        t probe open f wronly,creat,excl
        t probe open f wronly,creat,excl
        t probe open f wronly,excl
        ln -s f link; ln -s nowhere dangling; mkdir d
        t probe open link wronly,creat,excl
        t probe open dangling wronly,creat,excl
        t probe open d rdonly,creat,excl
        ls
        for i in $(seq 1 20); do
          probe open race$i wronly,creat,excl > a & probe open race$i wronly,creat,excl > b & wait
          cat a b | sort | tr '\\n' ' '; echo
        done | sort | uniq -c | sed 's/^ *//'
        """, """
        probe open f wronly,creat,excl: OK
        probe open f wronly,creat,excl: EEXIST
        probe open f wronly,excl: OK
        probe open link wronly,creat,excl: EEXIST
        probe open dangling wronly,creat,excl: EEXIST
        probe open d rdonly,creat,excl: EEXIST
        d
        dangling
        f
        link
        20 EEXIST OK\s
        """);
  }

  @Test
  void oTrunc_emptiesTheFile_evenUnderAnotherProcessesBufferedWrites() throws Exception {
    assumeRoot();
    posix("trunc", """
        echo hello world > f
        t probe open f wronly,trunc
        stat -c %s f
        echo hello > g; chmod 644 g
        t bob probe open g wronly,trunc
        stat -c %s g
        exec 3> h
        head -c 300000 /dev/zero | tr '\\0' a >&3
        t probe open h rdwr,trunc
        stat -c %s h
        printf end >&3
        exec 3>&-
        stat -c %s h; head -c 300000 h | tr -d '\\0' | wc -c; tail -c 3 h; echo
        """, """
        probe open f wronly,trunc: OK
        0
        bob probe open g wronly,trunc: EACCES
        6
        probe open h rdwr,trunc: OK
        0
        300003
        0
        end
        """);
  }

  @Test
  void sparseFile_holesReadAsZeros() throws Exception {
    posix("sparse", """
        probe write f wronly,creat head >/dev/null
        probe pwrite f 200000 mid >/dev/null
        probe pwrite f 20000000 tail >/dev/null
        stat -c %s f
        head -c 200003 f | tail -c 199999 | tr -d '\\0' | wc -c
        dd if=f bs=65536 skip=10 count=290 status=none | tr -d '\\0' | wc -c
        tr -d '\\0' < f; echo
        truncate -s 30000000 f; tail -c 9999996 f | tr -d '\\0' | wc -c
        dd if=f bs=1 skip=30000000 count=10 status=none | wc -c
        """, """
        20000004
        3
        0
        headmidtail
        0
        0
        """);
  }

  @Test
  void ftruncate_shrinksAndGrows_andNeverShowsOldBytesAgain() throws Exception {
    posix("ftrunc", """
        head -c 500000 /dev/zero | tr '\\0' q > f
        probe ftruncate f 10
        probe ftruncate f 400000
        head -c 10 f; echo; tail -c +11 f | tr -d '\\0' | wc -c
        exec 3>> f
        printf more >&3
        probe ftruncate f 5
        printf last >&3
        exec 3>&-
        stat -c %s f; tr -d '\\0' < f; echo
        """, """
        10
        400000
        qqqqqqqqqq
        0
        5
        9
        qqqqqlast
        """);
  }

  @Test
  void fsyncAndFdatasync_makeTheDataVisibleToAnotherClient() throws Exception {
    Path f = onMount("fsync").resolve("f");
    byte[] first = "durable bytes ".getBytes(StandardCharsets.US_ASCII);
    byte[] second = "and more".getBytes(StandardCharsets.US_ASCII);
    try (FileChannel ch = FileChannel.open(f, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        OtherClient other = new OtherClient(fs)) {
      ch.write(ByteBuffer.wrap(first));
      ch.force(true); // fsync
      assertEquals(first.length, other.size("/fsync/f"), "size after fsync, file still open");
      ch.write(ByteBuffer.wrap(second));
      ch.force(false); // fdatasync
      assertEquals(first.length + second.length, other.size("/fsync/f"), "size after fdatasync");
      assertEquals("durable bytes and more", new String(other.read("/fsync/f"), StandardCharsets.US_ASCII));
    }
    // and through the shell: the calls succeed on files and directories
    assertEquals("OK\nOK\n", sh(f.getParent(), "probe fsync g abc; probe fdatasync g def"));
    sh(f.getParent(), "sync g; sync -d g; sync -f g; sync .; test \"$(cat g)\" = abcdef");
  }

  @Test
  void closeOfAFileOpenedForReading_sendsNoFlush_whileAWritersCloseStillPublishesItsBytes() throws Exception {
    Path d = onMount("noflush");
    sh(d, "echo abc > f");
    long flushes = fs.counter("fuse.flush");
    assertEquals("abc\n".repeat(20), sh(d, "for i in $(seq 20); do cat f; done"));
    assertEquals(flushes, fs.counter("fuse.flush"), "the close of a file read sent the mount a FLUSH");
    try (FileChannel w = FileChannel.open(d.resolve("g"), StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        OtherClient other = new OtherClient(fs)) {
      w.write(ByteBuffer.wrap("written".getBytes(StandardCharsets.US_ASCII)));
      try (FileChannel r = FileChannel.open(d.resolve("g"), StandardOpenOption.READ)) {
        r.read(ByteBuffer.allocate(16)); // a reader of the same file comes and goes meanwhile
      }
      w.close(); // close-to-open: the writer's close publishes its bytes
      assertEquals("written", new String(other.read("/noflush/g"), StandardCharsets.US_ASCII));
    }
    assertTrue(fs.counter("fuse.flush") > flushes, "the writer's close sent no FLUSH");
  }

  @Test
  void statfs_reportsCapacityAndCountsObjects() throws Exception {
    Path d = onMount("statfs");
    String[] s = sh(d, "probe statfs .").strip().split(" ");
    long bsize = Long.parseLong(s[0]);
    long blocks = Long.parseLong(s[1]);
    long free = Long.parseLong(s[2]);
    long avail = Long.parseLong(s[3]);
    long files = Long.parseLong(s[4]);
    long ffree = Long.parseLong(s[5]);
    assertTrue(bsize > 0 && blocks > 0 && free <= blocks && avail <= free, String.join(" ", s));
    assertEquals("255", s[6], "name length");
    long used = files - ffree;
    assertEquals(used + 6, used(sh(d, "for i in 1 2 3 4 5; do touch f$i; done; mkdir sub; probe statfs .")),
        "objects in use after creating six");
    assertEquals(used + 3, used(sh(d, "rm f1 f2; rmdir sub; probe statfs .")), "after removing three");
    // df agrees with statfs
    assertEquals(String.valueOf(blocks * bsize), sh(d, "df -B1 --output=size . | tail -1").strip());
    // the servers all store under this test's directory: df shows that one disk, not once per server
    assertEquals(sh(tmp, "df -B1 --output=size . | tail -1").strip(), String.valueOf(blocks * bsize));
  }

  /** Files less free files, from probe statfs's output. */
  private static long used(String statfs) {
    String[] s = statfs.strip().split(" ");
    return Long.parseLong(s[4]) - Long.parseLong(s[5]);
  }

  @Test
  void fcntlLocks_betweenProcesses() throws Exception {
    posix("fcntl", """
        echo lockme > L
        c=$(mktemp -d); mkfifo $c/go
        probe lock L w 0 10 < $c/go > $c/out &
        holder=$!
        exec 3> $c/go
        await $c/out LOCKED
        t probe trylock L w 0 10
        t probe trylock L r 9 1
        t probe trylock L w 10 5
        test "$(probe getlk L r 0 1)" = "WRLCK $holder" && echo "getlk names the holder"
        probe lockw L r 0 1 > $c/waiter 3>&- &
        sleep 0.2; cat $c/waiter; echo "waiting"
        exec 3>&-
        wait
        cat $c/waiter
        t probe trylock L w 0 10
        probe lock L r 0 100 < $c/go > $c/out &
        exec 3> $c/go
        await $c/out LOCKED
        t probe trylock L r 50 10
        t probe trylock L w 50 10
        echo "getlk: $(probe getlk L w 99 1 | cut -d' ' -f1)"
        exec 3>&-
        wait; rm -r $c
        """, """
        probe trylock L w 0 10: EAGAIN
        probe trylock L r 9 1: EAGAIN
        probe trylock L w 10 5: OK
        getlk names the holder
        waiting
        LOCKED
        probe trylock L w 0 10: OK
        probe trylock L r 50 10: OK
        probe trylock L w 50 10: EAGAIN
        getlk: RDLCK
        """);
  }

  @Test
  void flock_betweenProcesses_andIndependentOfFcntlLocks() throws Exception {
    posix("flock", """
        echo lockme > L
        c=$(mktemp -d); mkfifo $c/go
        flock -x L sh -c 'echo LOCKED; cat >/dev/null' < $c/go > $c/out &
        exec 3> $c/go
        await $c/out LOCKED
        flock -n -x L true || echo "exclusive: busy"
        flock -n -s L true || echo "shared: busy"
        t probe trylock L w 0 0
        exec 3>&-
        wait
        flock -n -x L true && echo "exclusive: free"
        flock -s L sh -c 'flock -n -s L true && echo "two shared"; flock -n -x L true || echo "exclusive: busy"'
        rm -r $c
        """, """
        exclusive: busy
        shared: busy
        probe trylock L w 0 0: OK
        exclusive: free
        two shared
        exclusive: busy
        """);
  }

  @Test
  void mmap_readsTheFile_andSharedWritesReachTheServers() throws Exception {
    Path d = onMount("mmap");
    byte[] data = new byte[300_000]; // spans several 64 KiB strips on both I/O servers
    new Random(7).nextBytes(data);
    Files.write(d.resolve("f"), data);
    assertEquals("same\n", sh(d, "probe mmap-read f | cmp - f && echo same"));
    assertEquals("OK\nOK\nOK\n", sh(d, "probe mmap-write f 70000 SHARED; probe mmap-write f 299990 END-OF-FILE;"
        + "probe mmap-write f 131072 NOSYNC nosync"));
    // through an O_APPEND descriptor, pages still go where they are mapped
    assertEquals("OK\n", sh(d, "probe mmap-write f 5 APPEND-FD append"));
    put(data, 70000, "SHARED");
    put(data, 299990, "END-OF-FILE"); // the file ends after "END-OF-FIL": the rest is not written
    put(data, 131072, "NOSYNC");
    put(data, 5, "APPEND-FD");
    assertEquals(data.length, Files.size(d.resolve("f")));
    assertArrayEquals(data, Files.readAllBytes(d.resolve("f")), "through the mount");
    try (OtherClient other = new OtherClient(fs)) {
      assertArrayEquals(data, other.read("/mmap/f"), "on the servers");
    }
    // and Java's mapping of the same file
    try (FileChannel ch = FileChannel.open(d.resolve("f"), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_WRITE, 0, ch.size());
      assertEquals(data[123_456], m.get(123_456));
      m.put(200_000, (byte) '!');
      m.force();
    }
    data[200_000] = '!';
    try (OtherClient other = new OtherClient(fs)) {
      assertArrayEquals(data, other.read("/mmap/f"), "a Java MappedByteBuffer's write on the servers");
    }
  }

  /**
   * A read-only open of a small file reads its first bytes while it asks for fresh attributes;
   * what another client wrote and closed before the open still shows, whether the file stayed
   * within those bytes or grew past them.
   */
  /**
   * Small writes all over a file, many overlapping earlier ones (write-behind gathers those that do
   * not overlap into noncontiguous writes, a flow per server listing the regions): after fsync
   * another client reads exactly what a local file would hold, and so does the mount meanwhile.
   */
  @Test
  void randomSmallWrites_gathered_reachTheServersInTheirOrder() throws Exception {
    Path f = onMount("gather").resolve("f");
    int size = 3 << 20;
    byte[] expect = new byte[size];
    Random r = new Random(11);
    long gathered = fs.client().counters().get("path.gathered.ops");
    try (FileChannel ch = FileChannel.open(f, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE);
        OtherClient other = new OtherClient(fs)) {
      ch.write(ByteBuffer.wrap(expect), 0);
      int end = 0;
      for (int i = 0; i < 3000; i++) {
        int len = new int[] {1, 17, 512, 4096, 4096, 9000, 70_000}[r.nextInt(7)];
        int at = i % 3 == 0 ? r.nextInt(size / 4096) * 4096 : r.nextInt(size - len); // some overlap earlier ones
        if (i % 5 == 0) {
          at = end; // continues the last write, perhaps into an earlier one
        }
        at = Math.min(at, size - len);
        end = at + len;
        byte[] b = new byte[len];
        r.nextBytes(b);
        ch.write(ByteBuffer.wrap(b), at);
        System.arraycopy(b, 0, expect, at, len);
        if (i % 500 == 499) { // a read meanwhile sees every write before it
          ByteBuffer got = ByteBuffer.allocate(8192);
          int from = r.nextInt(size - 8192);
          ch.read(got, from);
          assertArrayEquals(java.util.Arrays.copyOfRange(expect, from, from + 8192), got.array(), "read at " + from);
        }
      }
      ch.force(false);
      assertArrayEquals(expect, other.read("/gather/f"), "what another client reads after fsync");
    }
    assertTrue(fs.client().counters().get("path.gathered.ops") > gathered, "small writes were gathered");
    assertArrayEquals(expect, Files.readAllBytes(f));
  }

  /** Opens that read a small file's first bytes with it: from the I/O servers, or with its attributes from its head. */
  private long firstReads() {
    return fs.client().counters().get("read.first") + fs.client().counters().get("read.first.head");
  }

  /**
   * Close-to-open after the kernel forgot the inode (its caches dropped, as under memory
   * pressure): the lookup that brings it back is answered from this client's caches, with the
   * old size, and the open, which finds the new one, must make the kernel drop that, or every
   * read ends at the old size.
   */
  @Test
  void anotherClientsWrite_showsAtTheNextOpen_afterTheKernelForgotTheInode() throws Exception {
    assumeRoot(); // drop_caches
    Path d = onMount("cto-evicted");
    byte[] before = new byte[100_000]; // past what an open reads first: the attributes alone
    new Random(7).nextBytes(before);
    Files.write(d.resolve("big"), before);
    Files.writeString(d.resolve("small"), "abc");
    assertArrayEquals(before, Files.readAllBytes(d.resolve("big")));
    assertEquals("abc", Files.readString(d.resolve("small")));
    byte[] after = new byte[150_000];
    new Random(8).nextBytes(after);
    try (OtherClient other = new OtherClient(fs)) {
      other.overwrite("/cto-evicted/big", after);
      other.overwrite("/cto-evicted/small", "written elsewhere".getBytes(StandardCharsets.US_ASCII));
    }
    sh(d, "sync; echo 3 > /proc/sys/vm/drop_caches");
    assertArrayEquals(after, Files.readAllBytes(d.resolve("big")));
    assertEquals("written elsewhere", sh(d, "cat small"));
  }

  @Test
  void smallFile_rewrittenByAnotherClient_showsTheNewBytesAtTheNextOpen() throws Exception {
    Path f = onMount("cto").resolve("f");
    Files.writeString(f, "old\n");
    assertEquals("old\n", Files.readString(f));
    long first = firstReads();
    try (OtherClient other = new OtherClient(fs)) {
      other.overwrite("/cto/f", "new and longer\n".getBytes(StandardCharsets.US_ASCII));
      assertEquals("new and longer\n", Files.readString(f));
      assertTrue(firstReads() > first, "the open read the first bytes");
      byte[] big = new byte[70_000]; // past what an open reads first, and over both I/O servers
      new Random(3).nextBytes(big);
      other.overwrite("/cto/f", big);
      assertArrayEquals(big, Files.readAllBytes(f));
      other.overwrite("/cto/f", "short again\n".getBytes(StandardCharsets.US_ASCII));
      assertEquals("short again\n", Files.readString(f));
    }
  }

  private static void put(byte[] data, int at, String s) {
    byte[] b = s.getBytes(StandardCharsets.US_ASCII);
    System.arraycopy(b, 0, data, at, Math.min(b.length, data.length - at));
  }
}
