package org.flowfs.common;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Huge pages of 2 MiB for FlowFS's shared memory ({@code node.shm-dir}) on this machine, set up
 * by whoever runs it (the benchmark, the tests): pages added to the machine's pool ({@code
 * vm.nr_hugepages}) and a hugetlbfs mounted on a directory; {@link #close} unmounts it and gives
 * the pages back. A site sets the same up once, with sysctl and a mount (README, "Huge pages for
 * shared memory"). Needs root.
 */
public final class HugePagePool implements AutoCloseable {
  private static final Path POOL = Path.of("/proc/sys/vm/nr_hugepages");
  private final Path dir;
  private final long before;
  private boolean mounted;

  private HugePagePool(Path dir, long before) {
    this.dir = dir;
    this.before = before;
  }

  /**
   * Adds {@code pages} huge pages to the machine's pool (0: none; the kernel may find fewer, see
   * {@link #available}) and mounts a hugetlbfs on {@code dir} (made if missing) with the mount
   * options {@code options} ("" for none, or e.g. {@code size=2M}).
   */
  public static HugePagePool mount(Path dir, int pages, String options) throws IOException {
    Files.createDirectories(dir);
    HugePagePool h = new HugePagePool(dir, pool());
    try {
      if (pages > 0) {
        Files.writeString(POOL, Long.toString(h.before + pages));
      }
      run(List.of("mount", "-t", "hugetlbfs", "-o", "pagesize=2M" + (options.isEmpty() ? "" : "," + options), "none", dir.toString()));
      h.mounted = true;
      return h;
    } catch (IOException | RuntimeException e) {
      h.close();
      throw e;
    }
  }

  /** The pages of the machine's pool (not Files.readString: a file of /proc says it has no bytes, and is then read only in part). */
  private static long pool() throws IOException {
    return Long.parseLong(Files.readAllLines(POOL).get(0).trim());
  }

  /**
   * Huge pages of the machine's pool that a new mapping may still have: free and not reserved (a
   * shared mapping reserves its pages when it is made, and takes them when first touched).
   */
  public static long available() throws IOException {
    return meminfo("HugePages_Free:") - meminfo("HugePages_Rsvd:");
  }

  private static long meminfo(String key) throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
      if (line.startsWith(key)) {
        return Long.parseLong(line.substring(key.length()).trim());
      }
    }
    return 0;
  }

  public Path dir() {
    return dir;
  }

  @Override
  public void close() throws IOException {
    try {
      if (mounted) {
        mounted = false;
        run(List.of("umount", dir.toString()));
      }
    } finally {
      if (pool() != before) {
        Files.writeString(POOL, Long.toString(before)); // pages still mapped somewhere are freed when let go
      }
    }
  }

  private static void run(List<String> command) throws IOException {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    try {
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IOException(String.join(" ", command) + " did not finish in 30 s");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroyForcibly();
      throw new IOException(String.join(" ", command) + " interrupted");
    }
    String out = new String(p.getInputStream().readAllBytes()).trim();
    if (p.exitValue() != 0) {
      throw new IOException(String.join(" ", command) + " failed (" + p.exitValue() + "): " + out);
    }
  }
}
