package org.flowfs.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.flowfs.cli.RoleProcess;

/** Starting and stopping FUSE servers for the benchmark. */
final class Mounts {
  private Mounts() {}

  /** Whether something is mounted at {@code dir}. */
  static boolean mounted(Path dir) {
    String want = " " + dir.toAbsolutePath().normalize() + " ";
    try {
      return Files.readAllLines(Path.of("/proc/self/mountinfo")).stream().anyMatch(l -> l.contains(want));
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * Starts a process that mounts {@code dir} in the environment {@code bin/flowfs} gives a mount,
   * waiting until the mount shows.
   */
  static Process start(List<String> cmd, Path dir, Path log) throws IOException, InterruptedException {
    Files.createDirectories(dir);
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().putAll(RoleProcess.environment("mount"));
    Process p = pb.start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!mounted(dir)) {
      if (!p.isAlive() || System.nanoTime() > deadline) {
        p.destroyForcibly();
        throw new IOException("mounting " + dir + " failed: " + String.join(" ", cmd) + "\n" + Files.readString(log));
      }
      Thread.sleep(50);
    }
    return p;
  }

  /** Unmounts {@code dir} and stops {@code p}. */
  static void stop(Process p, Path dir) {
    if (mounted(dir)) {
      run("fusermount", "-u", dir.toString());
    }
    if (p != null) {
      p.destroy();
      try {
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
          p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (mounted(dir)) {
      run("fusermount", "-u", "-z", dir.toString());
    }
  }

  static int run(String... cmd) {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      return p.waitFor(60, TimeUnit.SECONDS) ? p.exitValue() : -1;
    } catch (IOException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }
}
