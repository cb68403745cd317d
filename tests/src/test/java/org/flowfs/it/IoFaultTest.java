package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An I/O server killed (SIGKILL) while files are being written: what needs it fails with EIO
 * within {@code rpc.timeout}; files on the other servers keep working; after a restart every file
 * that was fsync'ed before the kill reads back intact (files on that server alone and files striped
 * over all servers), and the same mount writes and reads on it again.
 */
class IoFaultTest {
  private static final int TIMEOUT_S = 4;

  @Test
  void ioServerKilledDuringWrites_fsyncedFilesIntactAfterRestart(@TempDir Path tmp) throws Exception {
    // files on one server each, and a directory whose files are striped over all three
    String config = "rpc.timeout = " + TIMEOUT_S + "s\nlayout.servers = 1\n";
    try (ProcessDeployment fs = new ProcessDeployment(tmp, 3, config)) {
      Path m = fs.mountPoint();
      Path ref = tmp.resolve("ref");
      Sh.ok(tmp, "mkdir " + ref);
      Sh.ok(m, "mkdir wide && setfattr -n flowfs.stripe -v servers=3 wide");
      List<String> files = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        files.add("one" + i);
      }
      for (int i = 0; i < 3; i++) {
        files.add("wide/f" + i);
      }
      for (int i = 0; i < files.size(); i++) {
        String f = files.get(i);
        String r = ref.resolve(f.replace('/', '_')).toString();
        // written in pieces, each made durable: fsync'ed data of several writes and sizes
        Sh.ok(m, "head -c " + (200_000 + i * 150_000) + " /dev/urandom > " + r
            + " && dd if=" + r + " of=" + f + " bs=64k conv=fsync status=none"
            + " && head -c 70000 /dev/urandom >> " + r + " && tail -c 70000 " + r + " | dd of=" + f
            + " bs=70000 oflag=append conv=notrunc,fsync status=none");
      }
      int victim = IoServerFailureTest.serverOf(m, "one0");
      List<String> elsewhere = new ArrayList<>();
      for (int i = 1; i < 6; i++) {
        if (IoServerFailureTest.serverOf(m, "one" + i) != victim) {
          elsewhere.add("one" + i);
        }
      }
      assertTrue(elsewhere.size() >= 2, "files landed on other servers too");

      // writers on the victim: one to a file of its own, one to a striped file
      String own = DiskFullTest.fileOn(m, victim, "big");
      List<Process> writers = new ArrayList<>();
      for (String f : List.of(own, "wide/big")) {
        writers.add(new ProcessBuilder("bash", "-c", "dd if=/dev/zero of=" + f + " bs=1M count=100000 2>&1")
            .directory(m.toFile()).start());
      }
      Thread.sleep(2000);
      long killed = System.nanoTime();
      fs.io(victim).kill();
      for (Process p : writers) {
        assertTrue(p.waitFor(TIMEOUT_S + 20, TimeUnit.SECONDS), "a writer still runs after its I/O server died");
        String out = new String(p.getInputStream().readAllBytes());
        assertNotEquals(0, p.exitValue(), out);
        assertTrue(out.contains("Input/output error"), out);
      }
      long secs = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - killed);
      assertTrue(secs <= TIMEOUT_S + 6, "writers failed after " + secs + " s; rpc.timeout is " + TIMEOUT_S + " s");

      // while it is down: the other servers' files work; what needs the victim fails with EIO, in time
      for (String f : elsewhere) {
        Sh.ok(m, "cmp " + f + " " + ref.resolve(f) + " && echo more >> " + f + " && echo more >> " + ref.resolve(f));
      }
      Sh.ok(m, "echo 3 > /proc/sys/vm/drop_caches");
      long t0 = System.nanoTime();
      Sh.Result r = Sh.run(m, "cat wide/f0 > /dev/null", 60);
      assertNotEquals(0, r.exit());
      assertTrue(r.err().contains("Input/output error"), r.err());
      assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(TIMEOUT_S + 6), "the read took too long");

      // back: every file fsync'ed before the kill is intact, read cold, and the same mount writes again
      fs.restartIo(victim);
      Sh.ok(m, "echo 3 > /proc/sys/vm/drop_caches");
      for (String f : files) {
        Sh.ok(m, "cmp " + f + " " + ref.resolve(f.replace('/', '_')));
      }
      Path after = ref.resolve("after");
      Sh.ok(m, "head -c 3000000 /dev/urandom > " + after + " && cp " + after + " wide/after"
          + " && cp " + after + " one0.after && sync wide/after one0.after"
          + " && echo 3 > /proc/sys/vm/drop_caches && cmp wide/after " + after + " && cmp one0.after " + after
          + " && echo more >> one0 && tail -c 5 one0 | grep -q more");
    }
  }
}
