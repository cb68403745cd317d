package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An I/O server killed (SIGKILL) in the middle of a flow: the writer sees EIO within the
 * configured timeout, not a hang; files on the other servers keep working; after the server
 * comes back, the same mount reads its files again.
 */
class IoServerFailureTest {
  private static final Pattern SERVER = Pattern.compile("\"server\":(\\d+)");

  static int serverOf(Path m, String file) {
    Matcher x = SERVER.matcher(Sh.ok(m, "getfattr --only-values -n flowfs.layout " + file));
    assertTrue(x.find());
    return Integer.parseInt(x.group(1));
  }

  @Test
  void ioServerKilledMidFlow_writerGetsEio_othersKeepWorking(@TempDir Path tmp) throws Exception {
    // one datafile per file, so that files live on different servers; short timeout
    try (ProcessDeployment fs = new ProcessDeployment(tmp, 3, "rpc.timeout = 4s\nlayout.servers = 1\n")) {
      Path m = fs.mountPoint();
      Map<Integer, String> fileOn = new HashMap<>();
      for (int i = 0; i < 6 && fileOn.size() < 3; i++) {
        Sh.ok(m, "head -c 300000 /dev/urandom > f" + i + " && cp f" + i + " /tmp/flowfs-ref-f" + i);
        fileOn.putIfAbsent(serverOf(m, "f" + i), "f" + i);
      }
      assertEquals(3, fileOn.size(), "files landed on every server: " + fileOn);
      Sh.ok(m, "touch big");
      int victim = serverOf(m, "big");

      Process dd = new ProcessBuilder("bash", "-c", "dd if=/dev/zero of=big bs=1M count=100000 2>&1")
          .directory(m.toFile()).start();
      Thread.sleep(3000);
      assertTrue(dd.isAlive(), "dd ended too early");
      long killed = System.nanoTime();
      fs.io(victim).kill();
      boolean ended = dd.waitFor(60, TimeUnit.SECONDS);
      long secs = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - killed);
      String out = new String(dd.getInputStream().readAllBytes());
      assertTrue(ended, "dd still running 60 s after its I/O server died");
      assertNotEquals(0, dd.exitValue(), "dd succeeded: " + out);
      assertTrue(out.contains("Input/output error"), out);
      assertTrue(secs <= 4 + 10, "dd failed after " + secs + " s, the timeout is 4 s");

      // the other servers' files work, for reading and writing
      fileOn.forEach((server, f) -> {
        if (server != victim) {
          Sh.ok(m, "cmp " + f + " /tmp/flowfs-ref-" + f + " && echo more >> " + f + " && tail -c 5 " + f + " | grep -q more");
        }
      });
      // the dead server's file fails with EIO, in bounded time (cold: not from the page cache)
      Sh.ok(m, "echo 3 > /proc/sys/vm/drop_caches");
      Sh.Result r = Sh.run(m, "cat " + fileOn.get(victim) + " > /dev/null", 60);
      assertNotEquals(0, r.exit());
      assertTrue(r.err().contains("Input/output error"), r.err());

      // back again: the same mount reads its file
      fs.restartIo(victim);
      Sh.ok(m, "cmp " + fileOn.get(victim) + " /tmp/flowfs-ref-" + fileOn.get(victim));
    } finally {
      Sh.run(tmp, "rm -f /tmp/flowfs-ref-f*");
    }
  }
}
