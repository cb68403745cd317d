package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BinaryOperator;
import java.util.stream.Stream;
import org.flowfs.common.CpuSet;
import org.flowfs.common.ServiceCpus;
import org.flowfs.common.config.NodeConfig;
import org.junit.jupiter.api.Test;

/**
 * The shell tools over separate metaserver, ioserver and mount processes (the systemd shape), the
 * mount's FUSE threads at a raised priority (client.fuse-nice; the tests run as root), and, on a
 * machine of two CPUs or more, the file system's own work on its last CPU (node.service-cpus).
 */
class ProcessShellToolsTest extends ShellToolsContract {
  private static final int NICE = -10;
  /** The CPUs this JVM may use: where the mount's FUSE workers run. */
  private static final CpuSet ALL = ServiceCpus.current();
  /** The service CPUs: the last of them, when there are two or more (else none: nothing to keep apart). */
  private static final CpuSet SERVICE = ALL.size() >= 2 ? CpuSet.parse(String.valueOf(ALL.last())) : CpuSet.EMPTY;

  @Override
  Deployment deploy(Path root) throws Exception {
    return new ProcessDeployment(root, 4, "client.fuse-nice = " + NICE + "\n"
        + (SERVICE.isEmpty() ? "" : NodeConfig.SERVICE_CPUS + " = " + SERVICE + "\n"));
  }

  /**
   * With node.service-cpus, every thread of the servers runs on the service CPUs but the read
   * flows' pool (io.reads-anywhere: on all the CPUs the server had), and so does
   * every thread of the mount but its FUSE workers (also the pools' threads a worker started, as
   * the write-behind sender is when a write comes), which run on all the CPUs the mount had.
   */
  @Test
  void serviceCpus_serversAndMountThreadsOnThem_fuseWorkersEverywhere() throws Exception {
    assumeFalse(SERVICE.isEmpty(), "a machine of one CPU has no CPU to keep apart");
    // a cold read, so that the servers' read flows run (their pool starts with its first read)
    Sh.ok(dir("cpus"), "dd if=/dev/zero of=f bs=64k count=64 conv=fsync status=none && sync"
        + " && echo 3 > /proc/sys/vm/drop_caches && cat f > /dev/null");
    ProcessDeployment d = (ProcessDeployment) fs;
    boolean reads = false;
    for (ServerProcess server : d.servers()) {
      Map<String, String> cpus = threadCpus(server.process().pid());
      reads |= cpus.keySet().stream().anyMatch(n -> n.startsWith("io-read-"));
      assertTrue(cpus.size() > 10, () -> "" + cpus); // the JVM's threads, the event loops, the storage pool
      // but the read flows' pool (io.reads-anywhere), whose copies may run where the readers wait
      cpus.forEach((name, list) -> assertEquals(name.startsWith("io-read-") ? ALL.toString() : SERVICE.toString(), list,
          () -> name + " of " + cpus));
    }
    assertTrue(reads, "no server ran a read flow's reads on its io-read pool");
    Map<String, String> mount = threadCpus(d.mount().process().pid());
    assertTrue(mount.keySet().stream().anyMatch(n -> n.startsWith("flowfs-sender")), () -> "" + mount);
    assertTrue(mount.keySet().stream().anyMatch(n -> n.startsWith("client-net")), () -> "" + mount);
    mount.forEach((name, list) -> {
      if (name.matches("fuse-\\d+")) {
        assertEquals(ALL.toString(), list, () -> name + " of " + mount);
      } else if (!name.startsWith("ForkJoinPool")) { // the JVM's shared pool: started by whoever came first
        assertEquals(SERVICE.toString(), list, () -> name + " of " + mount);
      }
    });
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

  /** Each thread name's CPUs (Cpus_allowed_list of /proc/PID/task/TID/status); "differ" where threads of one name differ. */
  private static Map<String, String> threadCpus(long pid) throws IOException {
    return byThreadName(pid, t -> {
      String cpus = null;
      for (String line : Files.readAllLines(t.resolve("status"))) {
        if (line.startsWith("Cpus_allowed_list:")) {
          cpus = line.substring(line.indexOf(':') + 1).strip();
        }
      }
      return Map.entry(Files.readString(t.resolve("comm")).strip(), cpus);
    }, (a, b) -> a.equals(b) ? a : "differ: " + a + " and " + b);
  }

  /** Each thread name's nice value (field 19 of /proc/PID/task/TID/stat); MIN_VALUE where threads of one name differ. */
  private static Map<String, Integer> threadNice(long pid) throws IOException {
    return byThreadName(pid, t -> {
      String stat = Files.readString(t.resolve("stat"));
      String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      return Map.entry(name, Integer.parseInt(f[19 - 3]));
    }, (a, b) -> a.equals(b) ? a : Integer.MIN_VALUE);
  }

  /** What a thread's /proc/PID/task/TID directory says: its name and a value. */
  private interface ThreadRead<T> {
    Map.Entry<String, T> read(Path task) throws IOException;
  }

  /** {@code read} of every thread of {@code pid}, by name, threads of one name merged by {@code merge}. */
  private static <T> Map<String, T> byThreadName(long pid, ThreadRead<T> read, BinaryOperator<T> merge) throws IOException {
    Map<String, T> out = new TreeMap<>();
    try (Stream<Path> tasks = Files.list(Path.of("/proc", String.valueOf(pid), "task"))) {
      for (Path t : tasks.toList()) {
        Map.Entry<String, T> e;
        try {
          e = read.read(t);
        } catch (IOException gone) {
          continue; // the thread ended meanwhile
        }
        out.merge(e.getKey(), e.getValue(), merge);
      }
    }
    return out;
  }
}
