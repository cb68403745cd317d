package org.flowfs.bench;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Scale: each I/O server in a network namespace of its own, reached from the client (and the
 * metadata server, in the benchmark's namespace) over a veth pair whose two ends are each shaped
 * with {@code tc tbf} to {@link #LINK_MBIT} Mbit/s; a file written and read through the client API
 * with 1, 2, 4 and 8 I/O servers. The aggregate is judged against N times the link rate.
 *
 * <p>The namespaces are {@code ffsb-io0..7}, the links {@code ffsbNh} (here) and {@code ffsbNn}
 * (there), the addresses 10.201.N.1 and 10.201.N.2; all of them are removed at the end, and ones a
 * killed run left behind are removed first.
 */
final class ScaleWorkload implements AutoCloseable {
  static final int LINK_MBIT = 400;
  /** The link rate in MB/s (10^6 bytes). */
  static final double LINK_MBPS = LINK_MBIT / 8.0;

  private final int namespaces;

  /** Creates {@code namespaces} namespaces with their shaped links. */
  ScaleWorkload(int namespaces) throws IOException, InterruptedException {
    this.namespaces = namespaces;
    removeAll();
    String used = Workloads.sh(Path.of("/"), "ip -o -4 addr show");
    if (used.contains(" 10.201.")) {
      throw new IOException("the scale workload uses 10.201.0.0/16, which this machine already has:\n" + used);
    }
    try {
      for (int i = 0; i < namespaces; i++) {
        String ns = ns(i);
        String h = "ffsb" + i + "h";
        String n = "ffsb" + i + "n";
        String shape = " root tbf rate " + LINK_MBIT + "mbit burst 512kb latency 50ms";
        Workloads.sh(Path.of("/"), String.join(" && ",
            "ip netns add " + ns,
            "ip link add " + h + " type veth peer name " + n,
            "ip link set " + n + " netns " + ns,
            "ip addr add 10.201." + i + ".1/24 dev " + h,
            "ip link set " + h + " up",
            "ip -n " + ns + " addr add 10.201." + i + ".2/24 dev " + n,
            "ip -n " + ns + " link set " + n + " up",
            "ip -n " + ns + " link set lo up",
            "tc qdisc add dev " + h + shape,
            "tc -n " + ns + " qdisc add dev " + n + shape));
      }
    } catch (IOException | InterruptedException | RuntimeException e) {
      close();
      throw e;
    }
  }

  private static String ns(int i) {
    return "ffsb-io" + i;
  }

  /**
   * For each server count in {@code counts}: a FlowFS with that many I/O servers in the
   * namespaces, {@code mib} MiB written and read through the client API; rows {@code
   * scale-N-write} and {@code scale-N-read} in MB/s; {@code config}: settings of the FlowFS under
   * test ({@code KEY=VALUE}), for these servers and client too; {@code warmupRounds}: at most
   * this many warm-up rounds (see {@link #warmUp}).
   */
  void run(Path work, List<Integer> counts, int mib, int warmupRounds, List<String> config, MemorySampler mem,
      Consumer<Workloads.Result> out) throws Exception {
    ServerProcesses.Placement inNamespaces = new ServerProcesses.Placement() {
      public String host(int i) {
        return "10.201." + i + ".2";
      }

      public List<String> wrapper(int i) {
        return List.of("ip", "netns", "exec", ns(i));
      }
    };
    for (int n : counts) {
      if (n > namespaces) {
        throw new IllegalArgumentException(n + " I/O servers asked for, " + namespaces + " namespaces made");
      }
      Path dir = work.resolve("scale-" + n);
      Workloads.sh(Path.of("/"), "rm -rf '" + dir + "'");
      try (ServerProcesses servers = new ServerProcesses(dir, n, config, inNamespaces)) {
        mem.watch("scale", servers.pids());
        // new JVMs: warmed up until their compilers are quiet, so that the figure is that of warm
        // servers, as every other row's (the mount's servers run through all groups, gigabytes
        // each, before they are measured). After one round of a quarter of the size per server, 8
        // servers on 2 cores spent the measured write compiling (their C2 threads 30-65% of the
        // machine during it); rounds until the compilers took at most 5%: 4 of them.
        warmUp(servers, n, mib, warmupRounds);
        // calls of 1 MiB per I/O server: each call keeps every link busy
        ApiWorkload.Throughput t = ApiWorkload.measure(servers.conf, mib, n);
        out.accept(new Workloads.Result("scale-" + n + "-write", t.write()));
        out.accept(new Workloads.Result("scale-" + n + "-read", t.read()));
      } finally {
        mem.unwatch("scale");
      }
      Workloads.sh(Path.of("/"), "rm -rf '" + dir + "'");
    }
  }

  /**
   * Writes and reads a quarter of {@code mib} per server, again, until the servers' JIT
   * compilers are quiet (see {@link JitActivity#untilQuiet}; at most {@code rounds} rounds): the
   * figure is then that of warm servers, as every other row's.
   */
  private static void warmUp(ServerProcesses servers, int n, int mib, int rounds) throws Exception {
    JitActivity.untilQuiet("scale: " + n + " I/O servers", () -> servers.pids().values(), rounds,
        () -> ApiWorkload.measure(servers.conf, n * Math.max(1, mib / 4), n));
  }

  /** Removes every namespace of this workload (their veth pairs go with them). */
  private static void removeAll() throws IOException, InterruptedException {
    List<String> ours = new ArrayList<>();
    for (String line : Workloads.lines(Workloads.sh(Path.of("/"), "ip netns list"))) {
      String name = line.split(" ")[0];
      if (name.matches("ffsb-io[0-9]+")) {
        ours.add(name);
      }
    }
    for (String name : ours) {
      Workloads.sh(Path.of("/"), "ip netns del " + name);
    }
  }

  @Override
  public void close() {
    try {
      removeAll();
    } catch (IOException e) {
      System.err.println("scale: could not remove the namespaces: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
