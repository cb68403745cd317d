package org.flowfs.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The command line that runs a {@code flowfs} subcommand in a new JVM with this JVM's classpath. */
public final class RoleProcess {
  private RoleProcess() {}

  /**
   * The heap (and direct memory) {@code bin/flowfs}, and so the systemd units, give a subcommand:
   * keep the two in step. The mount's live heap stays under 100 MiB (attribute and name caches,
   * open files; file data is in direct buffers), and its heap is touched whole at start (see {@link
   * #preTouched}), so it is no bigger than the collector needs to run seldom: with the native part
   * (direct buffers, code, GC structures, FUSE threads) its resident set peaked at 921 MiB under
   * the benchmark's parallel writers with a 512 MiB heap, against a 1 GiB target.
   */
  public static String defaultHeap(String subcommand) {
    return switch (subcommand) {
      case "up" -> "1g";
      case "mount" -> "384m";
      default -> "256m";
    };
  }

  /**
   * Whether the subcommand is a long-running daemon (a server or the mount), whose heap {@code
   * bin/flowfs} commits and touches at start ({@code -Xms} = {@code -Xmx}, {@code
   * -XX:+AlwaysPreTouch}): its resident memory is then what it will stay, rather than creeping up
   * as the collector first uses each part of the heap over hours (the mount's heap pages grew from
   * 250 to 370 MiB over a 10-minute soak with the committed heap constant, before it was touched).
   */
  public static boolean preTouched(String subcommand) {
    return switch (subcommand) {
      case "metaserver", "ioserver", "mount" -> true;
      default -> false;
    };
  }

  /**
   * The JIT flags {@code bin/flowfs}, and so the systemd units, give a subcommand: for the daemons
   * ({@code up}, the servers, the mount) compile thresholds at a tenth of the JVM's defaults
   * ({@code -XX:CompileThresholdScaling=0.1}). Much of a server's Java code runs once per flow or
   * per message, not per byte: a 1 GiB write is about 128 flows per I/O server, so at the default
   * thresholds those methods reached the optimizing compiler only after some 40 GiB of traffic.
   * On the benchmark's process shape, after 10 rounds of 1 GiB written and read, the four I/O
   * servers spent 13-40 CPU ticks each per GiB written with the defaults and 4-11 with the scaling
   * (5-8 with the defaults only after 40 rounds); {@code bench/run --groups seq,par}, two runs each
   * way in turn: 9-32% more on every row. More code is compiled (the servers' resident sets 10-15
   * MiB larger) and the compilers stay as busy through the benchmark's warm-up, but the hot code is
   * compiled first ({@code bench/HISTORY.md}, "Compile thresholds for the daemons").
   */
  public static List<String> jitFlags(String subcommand) {
    return switch (subcommand) {
      case "up", "metaserver", "ioserver", "mount" -> List.of("-XX:CompileThresholdScaling=0.1");
      default -> List.of();
    };
  }

  /**
   * The environment {@code bin/flowfs}, and so the systemd units, give a subcommand beyond the
   * caller's: keep the two in step. The roles that mount limit glibc to two malloc arenas
   * ({@code MALLOC_ARENA_MAX=2}). libfuse mallocs each request's buffer (up to a MiB for a READ)
   * on the FUSE thread that takes the request, and by default glibc gives each of the 16 FUSE
   * threads an arena of its own (up to eight per core), each keeping the freed MiBs for the next
   * request of that thread: two arenas share them. On the benchmark's process shape the mount's
   * peak resident set after the sequential, random, small-file and tree workloads was 726, 784 and
   * 731 MiB with the default and 664 and 708 MiB with two arenas.
   */
  public static Map<String, String> environment(String subcommand) {
    return switch (subcommand) {
      case "up", "mount" -> Map.of("MALLOC_ARENA_MAX", "2");
      default -> Map.of();
    };
  }

  /** The JVM flags of {@code FLOWFS_JAVA_OPTS} ({@code opts}; null: none), split at blanks as the shell does for bin/flowfs. */
  static List<String> extraFlags(String opts) {
    return opts == null || opts.isBlank() ? List.of() : List.of(opts.strip().split("\\s+"));
  }

  /** {@link #command(String, List)} with the heap and JIT flags {@code bin/flowfs} gives the subcommand. */
  public static List<String> command(List<String> args) {
    String role = args.get(0);
    String heap = defaultHeap(role);
    List<String> flags = new ArrayList<>();
    if (preTouched(role)) {
      flags.add("-Xms" + heap);
      flags.add("-XX:+AlwaysPreTouch");
    }
    flags.addAll(jitFlags(role));
    return java(heap, flags, Main.class.getName(), args);
  }

  /** {@code java <flags> -cp <this classpath> org.flowfs.cli.Main args...} */
  public static List<String> command(String heap, List<String> args) {
    return java(heap, Main.class.getName(), args);
  }

  /**
   * {@code java <flags> -cp <this classpath> mainClass args...}: the flags FlowFS's JVMs need, then
   * those of {@code FLOWFS_JAVA_OPTS}, as {@code bin/flowfs} adds them.
   */
  public static List<String> java(String heap, String mainClass, List<String> args) {
    return java(heap, List.of(), mainClass, args);
  }

  private static List<String> java(String heap, List<String> heapFlags, String mainClass, List<String> args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx" + heap);
    cmd.addAll(heapFlags);
    cmd.add("-XX:MaxDirectMemorySize=" + heap);
    cmd.add("--add-opens");
    cmd.add("java.base/java.nio=ALL-UNNAMED");
    cmd.add("--add-opens");
    cmd.add("java.base/jdk.internal.misc=ALL-UNNAMED");
    cmd.add("-Dio.netty.tryReflectionSetAccessible=true");
    cmd.addAll(extraFlags(System.getenv("FLOWFS_JAVA_OPTS")));
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(mainClass);
    cmd.addAll(args);
    return cmd;
  }
}
