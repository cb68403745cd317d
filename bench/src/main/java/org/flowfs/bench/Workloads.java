package org.flowfs.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The workloads, in groups that share files (a read needs what the write before it wrote). Every
 * step measures wall time around real tools (dd, fio, tar, find, diff, ls, rm) or plain system
 * calls from Java, the same way on every system.
 */
final class Workloads {
  /**
   * Sizes of one run: the full suite, or a short smoke run for CI. {@code scaleServers}: the I/O
   * server counts of the scale workload; {@code soakSeconds}: the length of the mixed soak.
   */
  record Sizes(int seqMib, int parMib, int randMib, int randSeconds, int smallFiles, int dirs, String tree, int apiMib,
      int scaleMib, List<Integer> scaleServers, int soakSeconds) {
    static final Sizes FULL = new Sizes(1024, 256, 256, 10, 10_000, 10_000, "/usr/include", 1024, 2048, List.of(1, 2, 4, 8), 600);
    static final Sizes SMOKE = new Sizes(32, 8, 16, 1, 300, 300, "/usr/include/linux", 32, 32, List.of(1, 2), 30);

    /** These sizes with the scale group's I/O server counts {@code counts}. */
    Sizes withScaleServers(List<Integer> counts) {
      return new Sizes(seqMib, parMib, randMib, randSeconds, smallFiles, dirs, tree, apiMib, scaleMib, List.copyOf(counts), soakSeconds);
    }

    /** The sizes of one round of the soak: every group, smaller. */
    Sizes soakRound() {
      return new Sizes(Math.min(seqMib, 128), Math.min(parMib, 32), Math.min(randMib, 32), Math.min(randSeconds, 2),
          Math.min(smallFiles, 1000), Math.min(dirs, 1000), tree.equals("/usr/include") ? "/usr/include/linux" : tree, 0, 0, List.of(), 0);
    }
  }

  /** One measured figure. */
  record Result(String row, double value) {}

  private final Sizes sizes;

  Workloads(Sizes sizes) {
    this.sizes = sizes;
  }

  /** The groups, by name, in run order. */
  static final List<String> GROUPS = List.of("seq", "par", "rand", "small", "dirs", "tree");

  /** Whether a group runs on the store-nothing file system (only the sequential ones do). */
  static boolean forNull(String group) {
    return group.equals("seq") || group.equals("par");
  }

  void run(String group, Path root, Consumer<Result> out) throws Exception {
    switch (group) {
      case "seq" -> seq(root, out);
      case "par" -> par(root, out);
      case "rand" -> rand(root, out);
      case "small" -> small(root, out);
      case "dirs" -> dirs(root, out);
      case "tree" -> tree(root, out);
      default -> throw new IllegalArgumentException(group);
    }
  }

  /** Removes everything in {@code root}, the directory a round works in, before the round. */
  static void empty(Path root) throws Exception {
    sh(root, "rm -rf ./* ./.[!.]* 2>/dev/null; true");
  }

  // ---- sequential -----------------------------------------------------------------------------

  private void seq(Path root, Consumer<Result> out) throws Exception {
    sequential(root, sizes.seqMib, "seq", out);
  }

  /**
   * {@code mib} MiB written with {@code dd bs=1M conv=fsync}, then read cold: rows {@code
   * PREFIX-write} and {@code PREFIX-read}.
   */
  static void sequential(Path root, int mib, String prefix, Consumer<Result> out) throws Exception {
    Path f = root.resolve("seq.bin");
    long t = timed(() -> sh(root, "dd if=/dev/zero of=seq.bin bs=1M count=" + mib + " conv=fsync status=none"));
    out.accept(new Result(prefix + "-write", mbps(mib, t)));
    dropCaches();
    t = timed(() -> sh(root, "dd if=seq.bin of=/dev/null bs=1M status=none"));
    out.accept(new Result(prefix + "-read", mbps(mib, t)));
    Files.deleteIfExists(f);
  }

  /**
   * What the disk under {@code root} gives by itself, past every cache: {@code mib} MiB written and
   * read back by fio with {@code O_DIRECT} in 1 MiB pieces, 4 in flight (the most this kind of
   * disk gave: 1 MiB pieces one at a time, or 256 KiB ones, gave less): rows {@code disk-write} and
   * {@code disk-read} of the local system. The sequential and api rows' targets ask FlowFS for
   * figures; these say whether the disk has them to give. Where fio fails (a file system that
   * refuses {@code O_DIRECT}) they are left out, with fio's last line on stderr, and the run goes on.
   */
  static void disk(Path root, int mib, Consumer<Result> out) throws Exception {
    String common = "fio --name=disk --filename=disk.bin --size=" + mib + "M --bs=1M --direct=1 --ioengine=libaio "
        + "--iodepth=4 --output-format=json";
    try {
      String w = sh(root, common + " --rw=write --end_fsync=1");
      double write = fio(w, "write", "bw_bytes") / 1e6;
      dropCaches();
      String r = sh(root, common + " --rw=read");
      out.accept(new Result("disk-write", write));
      out.accept(new Result("disk-read", fio(r, "read", "bw_bytes") / 1e6));
    } catch (IOException | IllegalStateException e) {
      System.err.println("bench: what the disk gives by itself is not measured: " + e.getMessage().strip().lines().reduce((a, b) -> b).orElse(""));
    } finally {
      Files.deleteIfExists(root.resolve("disk.bin"));
    }
  }

  private void par(Path root, Consumer<Result> out) throws Exception {
    int each = sizes.parMib;
    long t = timed(() -> sh(root, "for i in 1 2 3 4; do dd if=/dev/zero of=par$i.bin bs=1M count=" + each
        + " conv=fsync status=none & done; wait"));
    out.accept(new Result("par4-write", mbps(4L * each, t)));
    dropCaches();
    t = timed(() -> sh(root, "for i in 1 2 3 4; do dd if=par$i.bin of=/dev/null bs=1M status=none & done; wait"));
    out.accept(new Result("par4-read", mbps(4L * each, t)));
    sh(root, "rm -f par1.bin par2.bin par3.bin par4.bin");
  }

  private static double mbps(long mib, long nanos) {
    return mib * 1048576.0 / 1e6 / (nanos / 1e9);
  }

  // ---- random 4 KiB ---------------------------------------------------------------------------

  private void rand(Path root, Consumer<Result> out) throws Exception {
    String common = "fio --name=rand --filename=rand.bin --size=" + sizes.randMib + "M --bs=4k --ioengine=psync "
        + "--runtime=" + sizes.randSeconds + " --time_based --output-format=json --group_reporting";
    // lay the file out first (untimed), so both runs see a full file
    sh(root, "dd if=/dev/zero of=rand.bin bs=1M count=" + sizes.randMib + " status=none");
    String w = sh(root, common + " --rw=randwrite");
    out.accept(new Result("rand-write-iops", fio(w, "write", "iops")));
    out.accept(new Result("rand-write-p99", fio(w, "write", "p99") / 1000.0));
    dropCaches();
    String r = sh(root, common + " --rw=randread");
    out.accept(new Result("rand-read-iops", fio(r, "read", "iops")));
    out.accept(new Result("rand-read-p99", fio(r, "read", "p99") / 1000.0));
    Files.deleteIfExists(root.resolve("rand.bin"));
  }

  /**
   * A figure of fio's JSON output: the {@code iops} of a direction, its {@code bw_bytes} (bytes
   * per second), or its 99th completion-latency percentile (ns, any other {@code what}).
   */
  static double fio(String json, String direction, String what) {
    int at = json.indexOf("\"" + direction + "\" : {");
    if (at < 0) {
      throw new IllegalStateException("no " + direction + " section in fio's output:\n" + json);
    }
    String section = json.substring(at);
    Pattern p = switch (what) {
      case "iops" -> Pattern.compile("\"iops\" : ([0-9.]+)");
      case "bw_bytes" -> Pattern.compile("\"bw_bytes\" : ([0-9]+)");
      default -> Pattern.compile("\"99\\.000000\" : ([0-9]+)");
    };
    Matcher m = p.matcher(section);
    if (!m.find()) {
      throw new IllegalStateException("no " + what + " for " + direction + " in fio's output");
    }
    return Double.parseDouble(m.group(1));
  }

  // ---- many small files -----------------------------------------------------------------------

  private void small(Path root, Consumer<Result> out) throws Exception {
    Path d = Files.createDirectories(root.resolve("small"));
    int n = sizes.smallFiles;
    byte[] data = new byte[4096];
    long t = timed(() -> {
      for (int i = 0; i < n; i++) {
        try (FileChannel ch = FileChannel.open(d.resolve("f" + i), StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
          ch.write(ByteBuffer.wrap(data));
        }
      }
    });
    out.accept(new Result("small-create", n / (t / 1e9)));
    cold();
    t = timed(() -> {
      for (int i = 0; i < n; i++) {
        Files.readAttributes(d.resolve("f" + i), BasicFileAttributes.class);
      }
    });
    out.accept(new Result("small-stat", n / (t / 1e9)));
    cold();
    t = timed(() -> sh(d, "ls -l > /dev/null"));
    out.accept(new Result("ls-l-cold", n / (t / 1e9)));
    sh(d, "ls -l > /dev/null");
    t = timed(() -> sh(d, "ls -l > /dev/null"));
    out.accept(new Result("ls-l-warm", n / (t / 1e9)));
    cold();
    ByteBuffer buf = ByteBuffer.allocate(8192);
    t = timed(() -> {
      for (int i = 0; i < n; i++) {
        try (FileChannel ch = FileChannel.open(d.resolve("f" + i), StandardOpenOption.READ)) {
          buf.clear();
          while (ch.read(buf) > 0) {
            buf.clear();
          }
        }
      }
    });
    out.accept(new Result("small-read", n / (t / 1e9)));
    t = timed(() -> {
      for (int i = 0; i < n; i++) {
        Files.delete(d.resolve("f" + i));
      }
    });
    out.accept(new Result("small-unlink", n / (t / 1e9)));
    Files.delete(d);
  }

  private void dirs(Path root, Consumer<Result> out) throws Exception {
    Path d = Files.createDirectories(root.resolve("dirs"));
    int n = sizes.dirs;
    long t = timed(() -> {
      for (int i = 0; i < n; i++) {
        Files.createDirectory(d.resolve("d" + i));
      }
    });
    out.accept(new Result("mkdir", n / (t / 1e9)));
    t = timed(() -> {
      for (int i = 0; i < n; i++) {
        Files.delete(d.resolve("d" + i));
      }
    });
    out.accept(new Result("rmdir", n / (t / 1e9)));
    Files.delete(d);
  }

  // ---- a real tree ----------------------------------------------------------------------------

  private void tree(Path root, Consumer<Result> out) throws Exception {
    Path src = Path.of(sizes.tree);
    String name = src.getFileName().toString();
    long entries = Long.parseLong(sh(src.getParent(), "find " + name + " | wc -l").strip());
    sh(src.getParent(), "tar -cf /dev/null " + name); // the source in the page cache, for every system alike
    long t = timed(() -> sh(root, "tar -C " + src.getParent() + " -cf - " + name + " | tar -xf -"));
    out.accept(new Result("untar", entries / (t / 1e9)));
    cold();
    t = timed(() -> sh(root, "find " + name + " > /dev/null"));
    out.accept(new Result("find", entries / (t / 1e9)));
    t = timed(() -> sh(root, "diff -r " + src + " " + name));
    out.accept(new Result("diff-r", entries / (t / 1e9)));
    t = timed(() -> sh(root, "rm -rf " + name));
    out.accept(new Result("rm-rf", entries / (t / 1e9)));
  }

  // ---- helpers --------------------------------------------------------------------------------

  interface Body {
    void run() throws Exception;
  }

  static long timed(Body b) throws Exception {
    long t0 = System.nanoTime();
    b.run();
    return System.nanoTime() - t0;
  }

  /** Drops the page, dentry and inode caches of the whole machine. */
  static void dropCaches() throws Exception {
    sh(Path.of("/"), "sync; echo 3 > /proc/sys/vm/drop_caches");
  }

  /** Cold metadata: no kernel caches, and client caches past their 1 s attribute/entry timeouts. */
  static void cold() throws Exception {
    dropCaches();
    Thread.sleep(1200);
  }

  /** Runs a shell command; its stdout, or an exception with its output if it fails. */
  static String sh(Path dir, String cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder("bash", "-c", cmd).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    if (!p.waitFor(1, TimeUnit.HOURS) || p.exitValue() != 0) {
      throw new IOException("'" + cmd + "' in " + dir + " failed:\n" + out);
    }
    return out;
  }

  static List<String> lines(String s) {
    List<String> l = new ArrayList<>();
    for (String x : s.split("\n")) {
      if (!x.isBlank()) {
        l.add(x);
      }
    }
    return l;
  }
}
