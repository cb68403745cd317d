package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The mount survives a metadata server restart without a remount: operations issued while the
 * server is down wait for it (the client retries idempotent requests, changes of entries known
 * by their verifier, and any request that never left, within {@code rpc.timeout}) and succeed
 * once it is back; while it stays down longer, they
 * fail with EIO within the timeout; afterwards the same mount carries on.
 */
class MetaRestartTest {
  private static final int TIMEOUT_S = 8;

  /** A shell command started now, in the background. */
  private record Background(Process p, long startNanos) {
    /** Runs {@code script} in {@code dir}; the cd is part of it, so starting never waits on the mount. */
    static Background start(Path dir, String script) throws Exception {
      long t0 = System.nanoTime();
      return new Background(new ProcessBuilder("bash", "-c", "cd '" + dir + "' && " + script).start(), t0);
    }

    /** Waits for it: exit code, stdout + stderr, seconds it took. */
    Object[] finish() throws Exception {
      assertTrue(p.waitFor(TIMEOUT_S + 30, TimeUnit.SECONDS), "still running");
      double secs = (System.nanoTime() - startNanos) / 1e9;
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8)
          + new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
      return new Object[] {p.exitValue(), out, secs};
    }
  }

  @Test
  void mount_metaserverRestarts_carriesOnWithoutRemount(@TempDir Path tmp) throws Exception {
    try (ProcessDeployment fs = new ProcessDeployment(tmp, 2, "rpc.timeout = " + TIMEOUT_S + "s\n")) {
      Path m = fs.mountPoint();
      Sh.ok(m, "mkdir a && echo hello > a/f && ls a");

      // down for less than the timeout: what runs meanwhile waits and then succeeds
      fs.meta().kill();
      Thread.sleep(1200); // the kernel's and the client's caches (1 s) let go of a/ and a/f
      List<Background> during = List.of(
          Background.start(m, "ls a"),
          Background.start(m, "cat a/f"),
          Background.start(m, "stat -c %s a/f"),
          Background.start(m, "mkdir b")); // refused connections: the request never left, so it is sent again
      Thread.sleep(500);
      fs.startMeta();
      String[] expect = {"f\n", "hello\n", "6\n", ""};
      for (int i = 0; i < during.size(); i++) {
        Object[] r = during.get(i).finish();
        assertEquals(0, r[0], "command " + i + " failed: " + r[1]);
        assertEquals(expect[i], r[1]);
      }

      // down for longer than the timeout: EIO within it, not a hang
      fs.meta().kill();
      Thread.sleep(1200);
      Object[] r = Background.start(m, "ls a").finish();
      assertNotEquals(0, r[0]);
      assertTrue(((String) r[1]).contains("Input/output error"), (String) r[1]);
      double secs = (Double) r[2];
      assertTrue(secs >= TIMEOUT_S - 1 && secs <= TIMEOUT_S + 5,
          "ls failed after " + secs + " s; rpc.timeout is " + TIMEOUT_S);

      // back: the same mount carries on, for reading and for changing
      fs.startMeta();
      assertEquals("a\nb\n", Sh.ok(m, "ls"));
      Sh.ok(m, "cat a/f | grep -q hello && echo more >> a/f && mkdir c && mv c d && rmdir d && ln -s a/f s"
          + " && test \"$(cat s)\" = \"$(printf 'hello\\nmore')\"");
      assertEquals("a\nb\ns\n", Sh.ok(m, "ls"));
    }
  }

  /**
   * A writer making small files in a directory the mount made (so under a lease, in batches)
   * while the metadata server is killed and started again: every file whose close returned is
   * there afterwards, whole. Batches lost with the server, and files made meanwhile under a lease
   * the new server does not know, are made again one by one.
   */
  @Test
  void filesClosedAroundARestart_areAllThere(@TempDir Path tmp) throws Exception {
    try (ProcessDeployment fs = new ProcessDeployment(tmp, 2, "rpc.timeout = " + TIMEOUT_S + "s\n")) {
      Path m = fs.mountPoint();
      Sh.ok(m, "mkdir w");
      int n = 2_000;
      // bash's "echo > f" flushes the file once before it writes (the dup of its descriptor is closed)
      restartWhileWriting(fs, "for i in $(seq " + n + "); do echo \"file $i\" > w/f$i || exit 1; done", "lease.creates", 300);
      assertEquals(String.valueOf(n), Sh.ok(m, "ls w | wc -l").strip(), () -> leaseLog(fs));
      Sh.ok(m, "python3 -c \"\nfor i in range(1, " + (n + 1) + "):\n  got = open('w/f%d' % i).read()\n"
          + "  assert got == 'file %d\\n' % i, 'f%d holds %r' % (i, got)\n\"");
      assertTrue(mountCounter(fs, "lease.recreated") > 0, "files of lost batches made again");
    }
  }

  /**
   * Files made under a lease, four at a time, each written past its head (64 KiB) in two parts;
   * while one group is open between its parts, the metadata server is killed and started again:
   * a batch that carries files still open is lost, they (and the lease's files not sent yet) are
   * made again at once under their reserved handles and layouts, so their opens stay good, their
   * flushes and closes go on, and the bytes already in their datafiles stay their own.
   */
  @Test
  void filesOpenAcrossARestart_keepEveryByte_pastTheHeadToo(@TempDir Path tmp) throws Exception {
    try (ProcessDeployment fs = new ProcessDeployment(tmp, 2, "rpc.timeout = " + TIMEOUT_S + "s\n")) {
      Path m = fs.mountPoint();
      Sh.ok(m, "mkdir w");
      Path open = tmp.resolve("open");
      Path go = tmp.resolve("go");
      int groups = 40;
      String body = "bytes(((i * 7 + k) %% 251) for k in range(%d, %d))"; // file i's bytes from, to
      Background writer = Background.start(m, "python3 -c \"\nimport os, time\nfor g in range(" + groups + "):\n"
          + "  fs = [(i, open('w/f%d' % i, 'wb')) for i in range(4 * g, 4 * g + 4)]\n"
          + "  for i, f in fs:\n    f.write(" + body.formatted(0, 40_000) + ")\n    f.flush()\n"
          + "  if g == 20:\n    open('" + open + "', 'w').close()\n"
          + "    while not os.path.exists('" + go + "'):\n      time.sleep(0.01)\n"
          + "  for i, f in fs:\n    f.write(" + body.formatted(40_000, 140_000) + ")\n    f.close()\n\"");
      long deadline = System.nanoTime() + 60_000_000_000L;
      while (!Files.exists(open)) {
        assertTrue(System.nanoTime() < deadline, "the writer did not reach its 21st group in a minute");
        Thread.sleep(10);
      }
      fs.meta().kill();
      Thread.sleep(1500);
      fs.startMeta();
      Files.createFile(go);
      Object[] r = writer.finish();
      assertEquals(0, r[0], "the writer failed: " + r[1] + "\n" + leaseLog(fs));
      int n = 4 * groups;
      assertEquals(String.valueOf(n), Sh.ok(m, "ls w | wc -l").strip(), () -> leaseLog(fs));
      Sh.ok(m, "python3 -c \"\nfor i in range(" + n + "):\n  got = open('w/f%d' % i, 'rb').read()\n"
          + "  want = " + body.formatted(0, 140_000) + "\n  assert got == want, 'f%d: %d bytes, %d wanted' % (i, len(got), len(want))\n\"");
      // which of the open group were answered before the kill is a matter of timing (a file open
      // 50 ms has its create sent alone); the last ones made were not, and are made again
      assertTrue(mountCounter(fs, "lease.recreated") >= 1, "the open group made again\n" + leaseLog(fs));
    }
  }

  /**
   * Directories made under the lease on their parent, each with a file made in it at once (under
   * a lease of its own, asked once the batch that makes the directory is answered), while the
   * metadata server is killed and started again: every directory and file is there, whole.
   */
  @Test
  void directoriesMadeAroundARestart_areAllThere_withTheirFiles(@TempDir Path tmp) throws Exception {
    try (ProcessDeployment fs = new ProcessDeployment(tmp, 2, "rpc.timeout = " + TIMEOUT_S + "s\n")) {
      Path m = fs.mountPoint();
      Sh.ok(m, "mkdir w");
      int n = 300;
      restartWhileWriting(fs, "for i in $(seq " + n + "); do mkdir w/d$i && echo \"file $i\" > w/d$i/f || exit 1; done",
          "lease.mkdirs", 100);
      assertEquals(String.valueOf(n), Sh.ok(m, "ls w | wc -l").strip(), () -> leaseLog(fs));
      Sh.ok(m, "python3 -c \"\nfor i in range(1, " + (n + 1) + "):\n  got = open('w/d%d/f' % i).read()\n"
          + "  assert got == 'file %d\\n' % i, 'd%d/f holds %r' % (i, got)\n\"");
      assertEquals(String.valueOf(n + 2), Sh.ok(m, "stat -c %h w").strip(), "each directory links its parent");
    }
  }

  /**
   * Renames, hard links and removes, each a call of its own, while the metadata server is killed
   * and started again: a call whose answer was lost with the server is sent again, and known by
   * its verifier (rename, link) or by its name being gone (remove). None fails, and each took
   * effect once: every file has its one new name and one link.
   */
  @Test
  void renamesLinksAndRemovesAroundARestart_eachTookEffectOnce(@TempDir Path tmp) throws Exception {
    try (ProcessDeployment fs = new ProcessDeployment(tmp, 2, "rpc.timeout = " + TIMEOUT_S + "s\n")) {
      Path m = fs.mountPoint();
      int n = 200;
      Sh.ok(m, "mkdir w && for i in $(seq " + n + "); do echo $i > w/a$i; done");
      // four at a time: when the server dies, some call is likely out, its answer lost
      restartWhileWriting(fs, "cd w && for k in 1 2 3 4; do (for i in $(seq $k 4 " + n + "); do mv a$i b$i && ln b$i c$i"
          + " && rm b$i || exit 1; done) & pids=\"$pids $!\"; done; for p in $pids; do wait $p || exit 1; done",
          "meta.rename", 100);
      assertEquals(String.valueOf(n), Sh.ok(m, "ls w | wc -l").strip(), () -> leaseLog(fs));
      Sh.ok(m, "python3 -c \"\nimport os\nfor i in range(1, " + (n + 1) + "):\n  got = open('w/c%d' % i).read()\n"
          + "  assert got == '%d\\n' % i, 'c%d holds %r' % (i, got)\n"
          + "  assert os.stat('w/c%d' % i).st_nlink == 1, 'c%d has %d links' % (i, os.stat('w/c%d' % i).st_nlink)\n\"");
    }
  }

  /**
   * Runs {@code script} in the mount and kills the metadata server once the mount's counter
   * {@code counter} reached {@code atLeast} (well into the run: some batch is out or waiting when
   * the server dies), starts it again 1.5 s later, and waits for the script, which must succeed.
   */
  private static void restartWhileWriting(ProcessDeployment fs, String script, String counter, long atLeast) throws Exception {
    Background writer = Background.start(fs.mountPoint(), script);
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (mountCounter(fs, counter) < atLeast) {
      assertTrue(System.nanoTime() < deadline, counter + " " + mountCounter(fs, counter) + " after a minute");
      Thread.sleep(50);
    }
    fs.meta().kill();
    Thread.sleep(1500);
    fs.startMeta();
    Object[] r = writer.finish();
    assertEquals(0, r[0], "the writer failed: " + r[1] + "\n" + leaseLog(fs));
    Sh.ok(fs.mountPoint(), "sleep 1"); // the client's caches (1 s) let go: what follows asks the new server
  }

  /** What the mount logged of its leases and what the metadata server logged of batches: for a failure's message. */
  private static String leaseLog(ProcessDeployment fs) {
    String counters = OperatorToolsTest.ok("stats", "--config", fs.config().toString(), "--mount",
        fs.mountPoint().toString(), "--grep", "^lease\\.").out();
    return "mount:\n" + fs.mount().logLines("DirLeases|lease|batch|lost|WARN|ERROR|Exception|\\tat ") + "\n" + counters + "\nmetaserver:\n"
        + fs.meta().logLines("lease|batch|WARN|ERROR");
  }

  /** A counter of the mount's ({@code flowfs stats --mount}); 0 before it counted any. */
  private static long mountCounter(ProcessDeployment fs, String name) {
    OperatorToolsTest.Run r = OperatorToolsTest.ok("stats", "--config", fs.config().toString(), "--mount",
        fs.mountPoint().toString(), "--grep", "^" + name.replace(".", "\\.") + "$");
    for (String line : r.out().split("\n")) {
      String[] f = line.strip().split("\\s+");
      if (f.length == 2 && f[0].equals(name)) {
        return Long.parseLong(f[1]);
      }
    }
    return 0;
  }
}
