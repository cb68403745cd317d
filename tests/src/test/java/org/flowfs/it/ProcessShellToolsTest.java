package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The shell tools over separate metaserver, ioserver and mount processes (the systemd shape), the
 * mount's FUSE threads at a raised priority (client.fuse-nice; the tests run as root).
 */
class ProcessShellToolsTest extends ShellToolsContract {
  private static final int NICE = -10;

  @Override
  Deployment deploy(Path root) throws Exception {
    return new ProcessDeployment(root, 4, "client.fuse-nice = " + NICE + "\n");
  }

  /** The mount's FUSE workers run at client.fuse-nice, its other threads (also those a worker started) at 0. */
  @Test
  void mount_fuseWorkersRunAtTheirNice_otherThreadsAtTheDefault() throws Exception {
    Sh.ok(dir("nice"), "echo x > f && cat f"); // every worker has started by now
    Map<String, Integer> nice = threadNice(((ProcessDeployment) fs).mount().process().pid());
    Map<String, Integer> workers = new TreeMap<>(nice);
    workers.keySet().removeIf(name -> !name.matches("fuse-\\d+"));
    assertFalse(workers.isEmpty(), () -> "no fuse-N thread in " + nice);
    workers.forEach((name, n) -> assertEquals(NICE, n, () -> name + " of " + nice));
    assertTrue(nice.entrySet().stream().anyMatch(e -> e.getKey().startsWith("client-net")), () -> "" + nice);
    nice.forEach((name, n) -> {
      if (!workers.containsKey(name)) {
        assertEquals(0, n, () -> name + " of " + nice);
      }
    });
  }

  /** Each thread name's nice value (field 19 of /proc/PID/task/TID/stat); MIN_VALUE where threads of one name differ. */
  private static Map<String, Integer> threadNice(long pid) throws IOException {
    Map<String, Integer> out = new TreeMap<>();
    try (Stream<Path> tasks = Files.list(Path.of("/proc", String.valueOf(pid), "task"))) {
      for (Path t : tasks.toList()) {
        String stat;
        try {
          stat = Files.readString(t.resolve("stat"));
        } catch (IOException gone) {
          continue; // the thread ended meanwhile
        }
        String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        int n = Integer.parseInt(f[19 - 3]);
        out.merge(name, n, (a, b) -> a.equals(b) ? a : Integer.MIN_VALUE);
      }
    }
    return out;
  }
}
