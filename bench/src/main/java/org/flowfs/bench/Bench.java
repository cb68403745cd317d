package org.flowfs.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.flowfs.common.CpuSet;
import org.flowfs.common.HugePagePool;
import org.flowfs.common.ServiceCpus;
import org.flowfs.common.config.NodeConfig;
import org.flowfs.fuse.MountTable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The benchmark suite: every workload on FlowFS (metadata server, 4 I/O servers and the mount as
 * separate processes), on bindfs over a local directory, on the local ext4 directory itself and,
 * for the sequential rows, on a Java FUSE file system that stores nothing; in one run, the
 * systems taking turns within each repetition; medians of the repetitions; a table on stdout,
 * and results.txt, results.json and results.svg in the output directory.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
    description = "Run the FlowFS benchmark suite against the local disk, bindfs and a store-nothing Java FUSE file system.")
public final class Bench implements Callable<Integer> {
  @Option(names = "--smoke", description = "A short run with small sizes and one repetition (what CI runs).")
  boolean smoke;

  @Option(names = "--reps", description = "Repetitions (default: 3; --smoke: 1).")
  Integer reps;

  @Option(names = "--warmup", description = "Warm-up repetitions run before the measured ones and not counted, "
      + "on every system alike, each system's round of a group repeated until the JIT compilers of its "
      + "processes take at most 5%% of the CPU (at most 8 rounds): the JVMs of FlowFS's six processes compile "
      + "their hot paths over the first gigabytes (default: 1; --smoke: 0). Not for scale, protocols or soak.")
  Integer warmup;

  @Option(names = "--work", description = "Where the systems keep their data (default: /var/tmp/flowfs-bench); must be on the local disk.")
  Path work = Path.of("/var/tmp/flowfs-bench");

  @Option(names = "--out", description = "Where the results go (default: bench/results).")
  Path out = Path.of("bench/results");

  @Option(names = "--groups", split = ",", description = "Workload groups to run (default: all): seq,par,rand,small,dirs,tree,api,scale,soak; and protocols (the client API with each flow protocol, not in the default).")
  List<String> groups;

  @Option(names = "--ioservers", description = "I/O servers of the FlowFS under test (default: 4).")
  int ioServers = 4;

  @Option(names = "--flowfs-config", paramLabel = "KEY=VALUE",
      description = "A setting for the FlowFS under test, e.g. flow.protocol=single_buffer (repeatable).")
  List<String> flowfsConfig = new ArrayList<>();

  @Option(names = "--service-cpus", paramLabel = "LIST|last|none",
      description = "node.service-cpus of the FlowFS under test (its servers, and its mount's threads but the FUSE workers;"
          + " not the scale group's servers, which stand for other machines). Default: last, the machine's last CPU when it"
          + " has two or more; none: anywhere.")
  String serviceCpus = "last";

  @Option(names = "--huge-pages", paramLabel = "N|none",
      description = "Huge pages of 2 MiB the benchmark adds to the machine's pool for the run (vm.nr_hugepages, given back at"
          + " the end) and mounts a hugetlbfs of, where the FlowFS under test keeps its shared memory (node.shm-dir), as a"
          + " site that gives FlowFS huge pages runs it (io.direct-read = auto then reads large pieces from the device"
          + " straight into it). Default: 256 (512 MiB); none: /dev/shm, FlowFS's default.")
  String hugePages = String.valueOf(HUGE_PAGES);

  /** Huge pages for the mount's and the API client's files of shared memory with 4 I/O servers, and room to spare. */
  static final int HUGE_PAGES = 256;

  @Option(names = "--scale-servers", split = ",", paramLabel = "N",
      description = "I/O server counts of the scale group (default: 1,2,4,8; --smoke: 1,2); at most 8.")
  List<Integer> scaleServers;

  public static void main(String[] args) {
    System.exit(new CommandLine(new Bench()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    Workloads.Sizes sizes = smoke ? Workloads.Sizes.SMOKE : Workloads.Sizes.FULL;
    if (scaleServers != null) {
      if (scaleServers.isEmpty() || scaleServers.stream().anyMatch(c -> c < 1 || c > 8)) {
        throw new CommandLine.ParameterException(new CommandLine(this), "--scale-servers: counts from 1 to 8");
      }
      sizes = sizes.withScaleServers(scaleServers);
    }
    int n = reps != null ? reps : smoke ? 1 : 3;
    List<String> run = groups != null ? groups : new ArrayList<>(Workloads.GROUPS);
    if (groups == null) {
      run.addAll(List.of("api", "scale", "soak"));
    }
    int w = warmup != null ? warmup : smoke ? 0 : 1;
    if (w < 0 || n < 1) {
      throw new CommandLine.ParameterException(new CommandLine(this), "--reps must be at least 1 and --warmup at least 0");
    }
    Report report = run(sizes, w, n, run);
    System.out.print(report.table());
    report.write(out);
    System.out.println("wrote " + out.toAbsolutePath() + "/results.{txt,json,svg}");
    return 0;
  }

  /** Whether a {@code --flowfs-config} sets {@code key}. */
  private boolean configSets(String key) {
    return flowfsConfig.stream().anyMatch(kv -> kv.startsWith(key + "="));
  }

  /** The CPU list {@code --service-cpus} names ("" for none), unless a --flowfs-config sets the key itself. */
  private String serviceCpus() {
    if (configSets(NodeConfig.SERVICE_CPUS)) {
      return "";
    }
    return switch (serviceCpus) {
      case "none" -> "";
      case "last" -> {
        CpuSet mine = ServiceCpus.current();
        yield mine.size() >= 2 ? String.valueOf(mine.last()) : "";
      }
      default -> {
        try {
          yield CpuSet.parse(serviceCpus).toString();
        } catch (IllegalArgumentException e) {
          throw new CommandLine.ParameterException(new CommandLine(this), "--service-cpus: " + e.getMessage());
        }
      }
    };
  }

  /**
   * Empties the work directory for a new run: first detaches what a killed run left mounted there
   * (its FUSE processes are gone, so the mounts answer "Transport endpoint is not connected" and
   * rm cannot descend), then removes the rest.
   */
  static void clearWork(Path work) throws IOException, InterruptedException {
    for (Path stale : MountTable.mountsUnder(work)) {
      Workloads.sh(Path.of("/"), "umount -l '" + stale + "'");
    }
    Workloads.sh(Path.of("/"), "rm -rf '" + work + "'");
    Files.createDirectories(work);
  }

  Report run(Workloads.Sizes sizes, int warmups, int n, List<String> groups) throws Exception {
    clearWork(work);
    Report report = new Report();
    Report discarded = new Report(); // what the warm-up repetitions measure
    report.note("machine", Workloads.sh(Path.of("/"), "echo $(nproc) cores, $(free -g | awk '/Mem/{print $2}') GiB, $(uname -r)").strip());
    report.note("sizes", sizes.toString());
    report.note("repetitions", n + (warmups > 0 ? " (after " + warmups + " warm-up repetition" + (warmups > 1 ? "s" : "")
        + " of the same workloads on every system, not counted)" : ""));
    List<String> tested = new ArrayList<>(flowfsConfig);
    String cpus = serviceCpus();
    if (!cpus.isEmpty()) {
      tested.add(NodeConfig.SERVICE_CPUS + "=" + cpus);
    }
    List<AutoCloseable> opened = new ArrayList<>(); // closed in reverse, at the end or on SIGTERM/Ctrl-C
    Thread onSignal = new Thread(() -> closeAll(opened), "bench-cleanup");
    Runtime.getRuntime().addShutdownHook(onSignal);
    HugePagePool huge = hugePages(opened, report);
    if (huge != null) {
      tested.add(NodeConfig.SHM_DIR + "=" + huge.dir());
    }
    if (!tested.isEmpty()) {
      report.note("flowfs config", String.join(", ", tested));
    }
    List<Target> targets = new ArrayList<>();
    ScaleWorkload scale = null;
    try (MemorySampler mem = new MemorySampler()) {
      targets.add(opened(opened, Targets.flowfs(work, ioServers, tested)));
      targets.add(opened(opened, Targets.bindfs(work)));
      targets.add(opened(opened, Targets.local(work)));
      targets.add(opened(opened, Targets.nullFuse(work)));
      for (Target t : targets) {
        mem.watch(t.name(), t.pids());
      }
      if (groups.contains("scale")) {
        scale = opened(opened, new ScaleWorkload(sizes.scaleServers().stream().mapToInt(Integer::intValue).max().orElse(1)));
        report.scaleServers(sizes.scaleServers());
      }
      for (int rep = -warmups; rep < n; rep++) {
        Report sink = rep < 0 ? discarded : report;
        for (String group : groups) {
          long t0 = System.nanoTime();
          mem.phase(group + (rep < 0 ? " (warm-up)" : " (rep " + (rep + 1) + ")"));
          if (rep < 0 && List.of("soak", "scale", "protocols").contains(group)) {
            continue; // each starts processes of its own, or runs once
          }
          switch (group) {
            case "soak" -> {
              continue; // once, after the repetitions
            }
            case "api" -> {
              Target flowfs = targets.get(0);
              Path conf = ((Targets.FlowFsTarget) flowfs).conf;
              JitActivity.Round api = () -> ApiWorkload.run(conf, sizes.apiMib(), r -> sink.add("flowfs", r));
              if (rep < 0) {
                // the client runs in this JVM, a few seconds per repetition: warm it as the servers
                // and the mount are warm (after one round its compilers took 30-50% of this JVM's CPU)
                JitActivity.untilQuiet("api", () -> List.of(ProcessHandle.current().pid()), warmRounds(), api);
              } else {
                // the mount the api rows compare with, measured here too, the two taking turns at
                // going first, after a round through the mount that is not counted: the first large
                // read after the tree group's removals on the local disk ran at about half speed,
                // whichever read it (mount first: 560 then API 1,153 MB/s; API first: 856 then
                // mount 1,031), and compared with the seq group's figures from long before
                JitActivity.Round settle = () -> sequentialOnMount(flowfs, sizes.apiMib(), "settle", r -> { });
                JitActivity.Round mount = () -> sequentialOnMount(flowfs, sizes.apiMib(), "mount", r -> sink.add("flowfs", r));
                settle.run();
                for (JitActivity.Round round : rep % 2 == 0 ? List.of(mount, api) : List.of(api, mount)) {
                  round.run();
                }
              }
              log(rep, group, "flowfs", t0);
              continue;
            }
            case "protocols" -> {
              ApiWorkload.protocols(work, ioServers, sizes.apiMib(), mem, r -> report.add("flowfs", r));
              log(rep, group, "flowfs", t0);
              continue;
            }
            case "scale" -> {
              scale.run(work, sizes.scaleServers(), sizes.scaleMib(), warmRounds(), flowfsConfig, mem, r -> report.add("flowfs", r));
              log(rep, group, "flowfs", t0);
              continue;
            }
            default -> { }
          }
          for (int i = 0; i < targets.size(); i++) {
            Target t = targets.get(Math.floorMod(i + rep, targets.size())); // take turns: a different system first each time
            if (t.name().equals("nullfuse") && !Workloads.forNull(group)) {
              continue;
            }
            t0 = System.nanoTime();
            JitActivity.Round round = () -> {
              Workloads.empty(t.root());
              new Workloads(sizes).run(group, t.root(), r -> sink.add(t.name(), r));
              if (group.equals("seq") && t.name().equals("local")) {
                Workloads.disk(t.root(), sizes.seqMib(), r -> sink.add(t.name(), r)); // what the disk gives, in turn with the rest
              }
            };
            if (rep < 0) {
              // a JVM (FlowFS's six, nullfuse) compiles the hot paths of each workload over its first
              // rounds of it: a fresh FlowFS's cold 1 GiB read went 2.4, 2.2, 1.6, 1.1 s over its
              // first four rounds and 0.7-0.9 s from the seventh, when its compilers fell quiet
              JitActivity.untilQuiet(t.name() + " " + group, () -> t.pids().values(), warmRounds(), round);
            } else {
              round.run();
            }
            log(rep, group, t.name(), t0);
          }
        }
      }
      if (groups.contains("soak")) {
        long t0 = System.nanoTime();
        mem.phase("soak");
        report.soak(SoakWorkload.run(targets.get(0), sizes.soakRound(), sizes.soakSeconds()));
        log(n - 1, "soak", "flowfs", t0);
      }
      report.memory(mem.peaksMib());
      report.note("peak RSS reached during", mem.peakPhases());
    } finally {
      closeAll(opened);
      try {
        Runtime.getRuntime().removeShutdownHook(onSignal);
      } catch (IllegalStateException e) {
        // already shutting down: the hook runs (and finds nothing left to close)
      }
    }
    return report;
  }

  /**
   * The huge pages {@code --huge-pages} asks for, mounted under the work directory (closed with
   * {@code opened}); null for none, or when the machine has no hugetlbfs (said in the report).
   */
  private HugePagePool hugePages(List<AutoCloseable> opened, Report report) throws IOException {
    if (hugePages.equals("none") || configSets(NodeConfig.SHM_DIR)) {
      return null;
    }
    int pages;
    try {
      pages = Integer.parseInt(hugePages);
    } catch (NumberFormatException e) {
      pages = -1;
    }
    if (pages < 1) {
      throw new CommandLine.ParameterException(new CommandLine(this), "--huge-pages: a count of at least 1, or none");
    }
    HugePagePool pool;
    try {
      pool = opened(opened, HugePagePool.mount(work.resolve("hugepages"), pages, "mode=1777"));
    } catch (IOException e) {
      report.note("huge pages", "none: " + e.getMessage());
      return null;
    }
    report.note("huge pages", pages + " added to the machine's pool for the run, " + HugePagePool.available()
        + " available at the start, mounted at " + pool.dir() + " (node.shm-dir)");
    return pool;
  }

  /** {@link Workloads#sequential} of {@code mib} MiB in {@code target}'s emptied root. */
  private static void sequentialOnMount(Target target, int mib, String prefix, java.util.function.Consumer<Workloads.Result> out)
      throws Exception {
    Workloads.empty(target.root());
    Workloads.sequential(target.root(), mib, prefix, out);
  }

  /** Warm-up rounds at most until the JIT compilers are quiet: one in a smoke run (it checks the suite runs, not figures). */
  private int warmRounds() {
    return smoke ? 1 : JitActivity.MAX_ROUNDS;
  }

  private static <T extends AutoCloseable> T opened(List<AutoCloseable> opened, T t) {
    synchronized (opened) {
      opened.add(t);
    }
    return t;
  }

  /** Closes what is open, last first; each once, whoever gets here first (the run or the shutdown hook). */
  private static void closeAll(List<AutoCloseable> opened) {
    synchronized (opened) {
      for (int i = opened.size() - 1; i >= 0; i--) {
        try {
          opened.get(i).close();
        } catch (Exception e) {
          System.err.println("bench: closing " + opened.get(i) + ": " + e);
        }
      }
      opened.clear();
    }
  }

  private static void log(int rep, String group, String system, long t0) {
    System.err.printf(Locale.ROOT, "%-7s %-5s %-8s %6.1f s%n", rep < 0 ? "warm-up" : "rep " + (rep + 1), group, system,
        (System.nanoTime() - t0) / 1e9);
  }
}
