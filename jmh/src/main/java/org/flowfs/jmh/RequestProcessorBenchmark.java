package org.flowfs.jmh;

import java.util.concurrent.TimeUnit;
import org.flowfs.common.dist.Distribution;
import org.flowfs.common.dist.SimpleStripe;
import org.flowfs.common.request.FileData;
import org.flowfs.common.request.Request;
import org.flowfs.common.request.RequestCursor;
import org.flowfs.common.request.RequestProcessor;
import org.flowfs.common.request.Segments;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Segments per second of the request processor (SERVER mode, all four servers of a file striped
 * in 64 KiB strips, one after the other). The {@code segments} counter is the figure to read; the
 * primary score counts whole requests.
 *
 * <ul>
 *   <li>{@code contiguous1GiB}: 1 GiB contiguous, {@code bytemax} 256 KiB (a flow buffer);
 *   <li>{@code vectorOneCall}: a vector of 1,000,000 blocks of 8 bytes with stride 32, each
 *       server's part in one call (arrays big enough for all of it);
 *   <li>{@code vectorResumed}: the same chunk by chunk, every call resuming at the offset the
 *       last one returned, for chunks of {@code segmax:bytemax} = 8192:262144 (what a flow asks
 *       for on this request: its 256 KiB buffer, and segment arrays grown from 1,024 to 8,192
 *       because every call filled them), 1024:262144 (a flow's first calls), 256:262144 and 32:250
 *       (the seed's sample loop).
 * </ul>
 *
 * <p>A call costs a fixed ~10-20 ns (setting up, the general path for the split blocks at both
 * ends of the chunk, the exits of its loops, one of them mispredicted) on top of ~0.3 ns per
 * segment, independent of the position in the request: the per-segment cost of a resumed call is
 * that of one call, the fixed cost shows in proportion to how few segments a call returns, and a
 * chunk whose arrays stay in the core's caches makes up for it (the one call writes 4 MB of
 * segments per server).
 *
 * <p>Run: {@code java -jar jmh/target/benchmarks.jar -f1 -wi 2 -i 3}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class RequestProcessorBenchmark {
  static final int SERVERS = 4;
  static final long GIB = 1L << 30;
  static final int VECTOR_BLOCKS = 1_000_000;

  final Distribution dist = new SimpleStripe(SimpleStripe.DEFAULT_STRIP_SIZE);
  final Request contiguous = Request.bytes(GIB);
  final Request vector = Request.vector(VECTOR_BLOCKS, 8, 32, Request.BYTE);
  final FileData[] contiguousFile = new FileData[SERVERS];
  final FileData[] vectorFile = new FileData[SERVERS];
  final RequestCursor[] contiguousCursors = new RequestCursor[SERVERS];
  final RequestCursor[] vectorCursors = new RequestCursor[SERVERS];
  final Segments flowChunk = new Segments(64);
  final Segments whole = new Segments(VECTOR_BLOCKS / SERVERS + 1024);

  /** Chunk sizes for the resumed benchmark. */
  @State(Scope.Thread)
  public static class Chunk {
    @Param({"8192:262144", "1024:262144", "256:262144", "32:250"})
    public String chunk;

    int segmax;
    long bytemax;
    Segments segments;

    @Setup
    public void setUp() {
      String[] p = chunk.split(":");
      segmax = Integer.parseInt(p[0]);
      bytemax = Long.parseLong(p[1]);
      segments = new Segments(segmax);
    }
  }

  /** Segments produced, reported per second. */
  @State(Scope.Thread)
  @AuxCounters(AuxCounters.Type.OPERATIONS)
  public static class Counts {
    public long segments;

    @Setup(Level.Iteration)
    public void reset() {
      segments = 0;
    }
  }

  @Setup
  public void setUp() {
    for (int s = 0; s < SERVERS; s++) {
      contiguousFile[s] = new FileData(GIB, s, SERVERS, dist, false);
      vectorFile[s] = new FileData(32L * VECTOR_BLOCKS, s, SERVERS, dist, false);
      contiguousCursors[s] = RequestCursor.of(contiguous);
      vectorCursors[s] = RequestCursor.of(vector);
    }
  }

  private static long run(
      RequestCursor c, FileData fd, Segments segs, int segmax, long bytemax, Counts counts) {
    c.reset();
    long offset = 0;
    long bytes = 0;
    do {
      offset =
          RequestProcessor.process(
              c, fd, segmax, segs, offset, bytemax, RequestProcessor.Mode.SERVER);
      counts.segments += segs.count();
      bytes += segs.bytes();
    } while (offset != RequestProcessor.DONE);
    return bytes;
  }

  @Benchmark
  public long contiguous1GiB(Counts counts) {
    long bytes = 0;
    for (int s = 0; s < SERVERS; s++) {
      bytes += run(contiguousCursors[s], contiguousFile[s], flowChunk, 64, 256 * 1024, counts);
    }
    return bytes;
  }

  @Benchmark
  public long vectorOneCall(Counts counts) {
    long bytes = 0;
    for (int s = 0; s < SERVERS; s++) {
      bytes +=
          run(vectorCursors[s], vectorFile[s], whole, whole.capacity(), Long.MAX_VALUE, counts);
    }
    return bytes;
  }

  @Benchmark
  public long vectorResumed(Chunk chunk, Counts counts) {
    long bytes = 0;
    for (int s = 0; s < SERVERS; s++) {
      bytes +=
          run(vectorCursors[s], vectorFile[s], chunk.segments, chunk.segmax, chunk.bytemax, counts);
    }
    return bytes;
  }
}
