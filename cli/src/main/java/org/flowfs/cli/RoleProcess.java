package org.flowfs.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The command line that runs a {@code flowfs} subcommand in a new JVM with this JVM's classpath. */
public final class RoleProcess {
  private RoleProcess() {}

  /**
   * The heap (and direct memory) {@code bin/flowfs}, and so the systemd units, give a subcommand:
   * keep the two in step.
   */
  public static String defaultHeap(String subcommand) {
    return switch (subcommand) {
      case "up" -> "1g";
      case "mount" -> "512m";
      default -> "256m";
    };
  }

  /**
   * Whether the subcommand is a server, whose heap {@code bin/flowfs} commits and touches at start
   * ({@code -Xms} = {@code -Xmx}, {@code -XX:+AlwaysPreTouch}): a long-running server's resident
   * memory is then what it will stay, rather than creeping up as the collector first uses each
   * part of the heap over hours.
   */
  public static boolean preTouched(String subcommand) {
    return subcommand.equals("metaserver") || subcommand.equals("ioserver");
  }

  /** {@link #command(String, List)} with the heap {@code bin/flowfs} gives the subcommand. */
  public static List<String> command(List<String> args) {
    String heap = defaultHeap(args.get(0));
    List<String> touch = preTouched(args.get(0)) ? List.of("-Xms" + heap, "-XX:+AlwaysPreTouch") : List.of();
    return java(heap, touch, Main.class.getName(), args);
  }

  /** {@code java <flags> -cp <this classpath> org.flowfs.cli.Main args...} */
  public static List<String> command(String heap, List<String> args) {
    return java(heap, Main.class.getName(), args);
  }

  /** {@code java <flags> -cp <this classpath> mainClass args...}: the flags FlowFS's JVMs need. */
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
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(mainClass);
    cmd.addAll(args);
    return cmd;
  }
}
