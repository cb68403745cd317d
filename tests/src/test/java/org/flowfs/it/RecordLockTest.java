package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * POSIX record locks ({@code fcntl(2)}) across clients: two mounts of one file system, each its
 * own {@code flowfs mount} process beside the servers' (as on two nodes), locking with a small C
 * program ({@code lockprobe.c}, compiled here with {@code cc}). A byte range locked through one
 * mount holds against the other, {@code F_GETLK} there names it, a waiter gets it at the holder's
 * close; and writers on both mounts that read-modify-write blocks of one file under locks, as
 * MPI-IO's data sieving does, lose none of each other's bytes (an unlock pushes the writes, a
 * grant drops the cached pages and learns the grown size).
 */
class RecordLockTest {
  @TempDir
  Path tmp;
  private final List<Process> holders = new ArrayList<>();
  private ProcessDeployment fs;
  private Path a;
  private Path b;
  private Path probe;

  @BeforeEach
  void up() throws Exception {
    Path bin = Files.createDirectories(tmp.resolve("bin"));
    try (InputStream in = RecordLockTest.class.getResourceAsStream("lockprobe.c")) {
      Files.copy(in, bin.resolve("lockprobe.c"));
    }
    Sh.Result r = Sh.run(bin, "command -v cc >/dev/null || { echo 'no C compiler: install gcc'; exit 1; }; "
        + "cc -O1 -Wall -o lockprobe lockprobe.c", 120);
    assertEquals(0, r.exit(), () -> "cannot compile lockprobe.c (bin/test installs gcc):\n" + r.out() + r.err());
    probe = bin.resolve("lockprobe");
    fs = new ProcessDeployment(tmp.resolve("fs"), 2, "meta.lock-term = 2s\n");
    a = fs.mountPoint();
    b = tmp.resolve("mnt2");
    fs.mountAt(b);
  }

  @AfterEach
  void cleanUp() {
    for (Process p : holders) {
      p.destroyForcibly();
    }
    if (fs != null) { // the second mount too
      fs.close();
    }
  }

  private String probe(Path dir, String args) throws Exception {
    return Sh.run(dir, "'" + probe + "' " + args, 60).out().strip();
  }

  /** Starts {@code lockprobe hold f TYPE START LEN SECONDS} in {@code dir}; returns once it holds. */
  private Process hold(Path dir, String range, int seconds) throws Exception {
    Process p = new ProcessBuilder(probe.toString(), "hold", "f", range.split(" ")[0], range.split(" ")[1],
        range.split(" ")[2], String.valueOf(seconds)).directory(dir.toFile()).redirectErrorStream(true).start();
    holders.add(p);
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    assertEquals("held", out.readLine());
    return p;
  }

  @Test
  void aRange_holdsAgainstTheOtherMount_whichSeesIt_andWhoseWaiterGetsItAtTheClose() throws Exception {
    Sh.ok(a, "echo x > f");
    long t0 = System.nanoTime();
    Process holder = hold(a, "w 0 100", 3);
    assertEquals("EAGAIN", probe(b, "try f w 50 10"), "overlapping write lock");
    assertEquals("EAGAIN", probe(b, "try f r 0 1"), "a read lock under a write lock");
    assertEquals("OK", probe(b, "try f w 100 100"), "the bytes after it are free");
    assertEquals("w 0 100 0", probe(b, "test f w 0 0"), "F_GETLK names the range (another node's process: pid 0)");
    assertEquals("w 0 100 " + holder.pid(), probe(a, "test f r 10 10"), "on the holder's mount, with its pid");
    assertEquals("OK", probe(b, "wait f w 0 10"));
    assertTrue(System.nanoTime() - t0 > 2_900_000_000L, "the waiter got the lock before the holder's 3 s were up");
    assertEquals("none", probe(b, "test f w 0 0"), "the holder's close released it");
    // read locks share across the mounts
    hold(a, "r 0 0", 2);
    assertEquals("OK", probe(b, "try f r 0 0"));
    assertEquals("EAGAIN", probe(b, "try f w 5 5"));
  }

  @Test
  void writersOnBothMounts_readModifyWritingUnderLocks_loseNothing() throws Exception {
    int writers = 4;
    int blocks = 120;
    StringBuilder cmd = new StringBuilder();
    for (int w = 0; w < writers; w++) {
      Path dir = w % 2 == 0 ? a : b; // two processes on each mount
      cmd.append("( cd '").append(dir).append("' && '").append(probe).append("' sieve s ").append(w).append(' ')
          .append(writers).append(' ').append(blocks).append(" ) & ");
    }
    cmd.append("wait");
    assertEquals("OK\nOK\nOK\nOK", Sh.ok(a, cmd.toString()).strip().replaceAll("(?m)^\\s+", ""));
    byte[] file = Files.readAllBytes(b.resolve("s"));
    assertEquals(blocks * 4096, file.length);
    int wrong = 0;
    for (int i = 0; i < file.length; i++) {
      if (file[i] != 'A' + (i % 4096) % writers) {
        wrong++;
      }
    }
    assertEquals(0, wrong, "bytes of one writer that another's read-modify-write undid");
  }
}
