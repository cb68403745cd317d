package org.flowfs.it;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

/**
 * One {@code flowfs} role run as its own process, the way a systemd unit runs it: the same main
 * class with a subcommand, its output in a log file.
 */
final class ServerProcess {
  private final String name;
  private final Path log;
  private final Process process;

  private ServerProcess(String name, Path log, Process process) {
    this.name = name;
    this.log = log;
    this.process = process;
  }

  /** The lines of this process's log that hold {@code regex} (for a failing test's message). */
  String logLines(String regex) {
    java.util.regex.Pattern p = java.util.regex.Pattern.compile(regex);
    try {
      return String.join("\n", Files.readAllLines(log).stream().filter(l -> p.matcher(l).find()).toList());
    } catch (IOException e) {
      return "(" + log + ": " + e.getMessage() + ")";
    }
  }

  /** The java command that runs {@code org.flowfs.cli.Main args} with this JVM's classpath. */
  static List<String> command(List<String> args) {
    return org.flowfs.cli.RoleProcess.command("256m", args);
  }

  static ServerProcess start(String name, Path logDir, List<String> args) throws IOException {
    return launch(name, logDir, command(args));
  }

  private static ServerProcess launch(String name, Path logDir, List<String> command) throws IOException {
    Files.createDirectories(logDir);
    Path log = logDir.resolve(name.replace(' ', '-') + ".log");
    Process p = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    return new ServerProcess(name, log, p);
  }

  /**
   * As {@link #start}, but the process runs as {@code user} (this one must be root), as a unit's
   * {@code User=} runs it, with the classpath {@code classpath} (see {@link #readableClasspath}).
   */
  static ServerProcess startAs(String user, String classpath, String name, Path logDir, List<String> args) throws IOException {
    String group = Sh.ok(Path.of("/"), "id -gn '" + user + "'").strip();
    List<String> cmd = new ArrayList<>(List.of("setpriv", "--reuid=" + user, "--regid=" + group, "--clear-groups", "--"));
    List<String> java = command(args);
    int cp = java.indexOf("-cp");
    cmd.addAll(java.subList(0, cp + 1));
    cmd.add(classpath);
    cmd.addAll(java.subList(cp + 2, java.size()));
    return launch(name, logDir, cmd);
  }

  /**
   * This JVM's classpath copied into {@code dir}, where every user may read it (a build's
   * repository below root's home is root's alone); returns it as a classpath.
   */
  static String readableClasspath(Path dir) throws IOException {
    Files.createDirectories(dir);
    List<String> copies = new ArrayList<>();
    int n = 0;
    for (String entry : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
      Path from = Path.of(entry);
      if (!Files.exists(from)) {
        continue;
      }
      Path to = dir.resolve(n++ + "-" + from.getFileName());
      try (Stream<Path> tree = Files.walk(from)) {
        for (Path f : (Iterable<Path>) tree::iterator) {
          Files.copy(f, to.resolve(from.relativize(f).toString()));
        }
      }
      copies.add(to.toString());
    }
    try (Stream<Path> tree = Files.walk(dir)) {
      for (Path f : (Iterable<Path>) tree::iterator) {
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString(Files.isDirectory(f) ? "rwxr-xr-x" : "rw-r--r--"));
      }
    }
    return String.join(java.io.File.pathSeparator, copies);
  }

  /** Waits until {@code ready} holds; fails with the log's tail if the process dies or time runs out. */
  void awaitReady(BooleanSupplier ready, int seconds) throws IOException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (System.nanoTime() < deadline) {
      if (ready.getAsBoolean()) {
        return;
      }
      if (!process.isAlive()) {
        throw new IOException(name + " exited with " + process.exitValue() + ":\n" + logTail());
      }
      sleep(50);
    }
    throw new IOException(name + " not ready within " + seconds + " s:\n" + logTail());
  }

  static boolean listening(InetSocketAddress a) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(a.getHostString(), a.getPort()), 200);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  String logTail() {
    try {
      List<String> lines = Files.readAllLines(log);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    } catch (IOException e) {
      return "(no log)";
    }
  }

  Process process() {
    return process;
  }

  /** SIGTERM, then SIGKILL if it has not exited within {@code seconds}; returns the exit code. */
  int stop(int seconds) {
    process.destroy();
    try {
      if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
    return process.isAlive() ? -1 : process.exitValue();
  }

  /** SIGKILL, as a crash. */
  void kill() {
    process.destroyForcibly();
    try {
      process.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
