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

  /** {@link #command(String, List)} with the heap {@code bin/flowfs} gives the subcommand. */
  public static List<String> command(List<String> args) {
    return command(defaultHeap(args.get(0)), args);
  }

  /** {@code java <flags> -cp <this classpath> org.flowfs.cli.Main args...} */
  public static List<String> command(String heap, List<String> args) {
    return java(heap, Main.class.getName(), args);
  }

  /** {@code java <flags> -cp <this classpath> mainClass args...}: the flags FlowFS's JVMs need. */
  public static List<String> java(String heap, String mainClass, List<String> args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx" + heap);
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
