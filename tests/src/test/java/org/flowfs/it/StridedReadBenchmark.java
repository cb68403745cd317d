package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.ResourceLeakDetector;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Locale;
import org.flowfs.client.Caller;
import org.flowfs.client.api.AccessMode;
import org.flowfs.client.api.FlowFile;
import org.flowfs.client.api.FlowIo;
import org.flowfs.client.api.Hints;
import org.flowfs.client.api.Memory;
import org.flowfs.client.api.View;
import org.flowfs.common.datarep.NativeOrder;
import org.flowfs.common.request.Request;
import org.junit.jupiter.api.Test;

/**
 * Seed 004's strided case, "a node reading every k-th value of N vectors", over the same embedded
 * file system in one run: through a file view (one read: one flow per I/O server), through the
 * same view with data sieving, and through the FUSE mount with one {@code pread} per value (and,
 * for scale, the whole file in one contiguous read). The variants take turns within each round,
 * so a busy machine slows them alike; the report gives the median and the best of the rounds and
 * the ratios, on stdout and in {@code target/strided-read-benchmark.txt}. A benchmark, not a
 * test: outside the default run (the name does not match surefire's patterns); run it with
 *
 * <pre>mvn -q -pl tests test -Dtest=StridedReadBenchmark</pre>
 *
 * Sizes: {@code -Dbench.vectors} (N, 64), {@code -Dbench.length} (doubles per vector, 32768),
 * {@code -Dbench.stride} (k, 16), {@code -Dbench.runs} (rounds, 9); {@code -Dbench.cold=true} (as
 * root) drops the page cache before every read, so no variant reads from memory.
 */
class StridedReadBenchmark {
  @Test
  void everyKthValueOfNVectors_viewVersusPreadPerValue() throws Exception {
    // the test JVMs run Netty's leak detector in paranoid mode, which records a stack trace at
    // every buffer access: right for tests, ruinous for timings
    ResourceLeakDetector.Level leaks = ResourceLeakDetector.getLevel();
    ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.DISABLED);
    try {
      run();
    } finally {
      ResourceLeakDetector.setLevel(leaks);
    }
  }

  private void run() throws Exception {
    Path dir = Files.createTempDirectory("strided-bench");
    int n = Integer.getInteger("bench.vectors", 64);
    int m = Integer.getInteger("bench.length", 32768);
    int k = Integer.getInteger("bench.stride", 16);
    int runs = Integer.getInteger("bench.runs", 9);
    boolean cold = Boolean.getBoolean("bench.cold");
    int perVector = (m + k - 1) / k;
    long values = (long) n * perVector;
    long fileBytes = 8L * n * m;

    try (EmbeddedDeployment d = new EmbeddedDeployment(dir, 4)) {
      FlowIo io = FlowIo.over(d.client(), Caller.ROOT);
      ByteBuf dst = Unpooled.directBuffer((int) (8 * values), (int) (8 * values));
      ByteBuf whole = Unpooled.directBuffer((int) fileBytes, (int) fileBytes);
      try {
        // N vectors of M doubles, one after another: element j of vector v holds v * M + j
        try (FlowFile f = io.open("/vectors", EnumSet.of(AccessMode.CREATE, AccessMode.WRITE_ONLY), Hints.NONE)) {
          for (long i = 0; i < (long) n * m; i++) {
            NativeOrder.setDouble(whole, (int) (8 * i), i);
          }
          f.writeAt(0, Memory.of(whole, fileBytes, Request.BYTE));
          f.sync();
        }

        View view = View.of(0, Request.DOUBLE, Request.resized(0, 8L * m, Request.vector(perVector, 1, k, Request.DOUBLE)));
        long[][] ns = new long[4][runs];
        long flowOps = 0;
        try (FlowFile plain = io.open("/vectors", AccessMode.READ_ONLY);
            FlowFile sieve = io.open("/vectors", EnumSet.of(AccessMode.READ_ONLY), Hints.of(Hints.DS_READ, "enable"));
            FlowFile bytes = io.open("/vectors", AccessMode.READ_ONLY);
            FileChannel ch = FileChannel.open(d.mountPoint().resolve("vectors"), StandardOpenOption.READ)) {
          plain.setView(view);
          sieve.setView(view);
          ByteBuffer one = ByteBuffer.allocateDirect(8);
          for (int r = 0; r < runs; r++) {
            for (int turn = 0; turn < 4; turn++) {
              int variant = (turn + r) % 4;
              dst.setZero(0, dst.capacity());
              if (cold) {
                dropCaches();
              }
              long t0 = System.nanoTime();
              switch (variant) {
                case 0 -> {
                  long before = d.client().counters().get("path.flow.ops");
                  assertEquals(8 * values, plain.readAt(0, Memory.of(dst, values, Request.DOUBLE)));
                  flowOps = d.client().counters().get("path.flow.ops") - before;
                }
                case 1 -> assertEquals(8 * values, sieve.readAt(0, Memory.of(dst, values, Request.DOUBLE)));
                case 2 -> assertEquals(fileBytes, bytes.readAt(0, Memory.of(whole, fileBytes, Request.BYTE)));
                default -> {
                  int out = 0;
                  for (int v = 0; v < n; v++) {
                    for (int j = 0; j < m; j += k) {
                      one.clear();
                      while (one.hasRemaining()) {
                        if (ch.read(one, 8L * ((long) v * m + j) + one.position()) < 0) {
                          throw new IOException("unexpected end of file");
                        }
                      }
                      dst.setBytes(8 * out++, one.flip());
                    }
                  }
                }
              }
              ns[variant][r] = System.nanoTime() - t0;
              if (variant != 2) {
                check(dst, n, m, k, perVector);
              }
            }
          }
        }

        String report = String.format(Locale.ROOT,
            "strided read (seed 004): every %d-th double of %d vectors of %d doubles (%d values of a %.1f MiB file), "
                + "4 I/O servers, %d rounds (median / best), %s%n"
                + "  view, one read         : %8.1f / %8.1f ms  (%d flows per read: one per server)%n"
                + "  view, data sieving     : %8.1f / %8.1f ms  (romio_ds_read=enable, 4 MiB windows)%n"
                + "  FUSE, pread per value  : %8.1f / %8.1f ms  (%d preads)%n"
                + "  whole file, contiguous : %8.1f / %8.1f ms  (for scale: all %.1f MiB in one read)%n"
                + "  ratio pread/view       : %.1fx median, %.1fx best%n"
                + "  ratio pread/view+sieve : %.1fx median, %.1fx best%n",
            k, n, m, values, fileBytes / 1048576.0, runs,
            cold ? "page cache dropped before every read (cold)" : "page cache kept (warm after round 1)",
            median(ns[0]) / 1e6, min(ns[0]) / 1e6, flowOps,
            median(ns[1]) / 1e6, min(ns[1]) / 1e6,
            median(ns[3]) / 1e6, min(ns[3]) / 1e6, values,
            median(ns[2]) / 1e6, min(ns[2]) / 1e6, fileBytes / 1048576.0,
            (double) median(ns[3]) / median(ns[0]), (double) min(ns[3]) / min(ns[0]),
            (double) median(ns[3]) / median(ns[1]), (double) min(ns[3]) / min(ns[1]));
        System.out.print(report);
        Path out = Path.of("target", "strided-read-benchmark.txt");
        Files.createDirectories(out.getParent());
        Files.writeString(out, report);
      } finally {
        dst.release();
        whole.release();
        io.close();
      }
    } finally {
      try (var files = Files.walk(dir)) {
        files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  /** Empties the kernel's page cache (the servers' datafiles and the mount's pages); needs root. */
  private static void dropCaches() throws IOException, InterruptedException {
    new ProcessBuilder("sync").inheritIO().start().waitFor();
    Files.writeString(Path.of("/proc/sys/vm/drop_caches"), "3");
  }

  private static void check(ByteBuf b, int n, int m, int k, int perVector) {
    int i = 0;
    for (int v = 0; v < n; v++) {
      for (int j = 0; j < m; j += k) {
        assertEquals((double) ((long) v * m + j), NativeOrder.getDouble(b, 8 * i), "value " + i);
        i++;
      }
    }
    assertEquals((long) n * perVector, i);
  }

  private static long min(long[] a) {
    return Arrays.stream(a).min().orElseThrow();
  }

  private static long median(long[] a) {
    long[] s = a.clone();
    Arrays.sort(s);
    return s[s.length / 2];
  }
}
