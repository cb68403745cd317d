package org.flowfs.client.api;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Random;
import org.flowfs.common.request.Request;
import org.flowfs.common.request.RequestCursor;
import org.flowfs.common.request.RequestProcessor;
import org.flowfs.common.request.Segments;
import org.flowfs.common.wire.RequestSpec;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** {@link Slices}: a slice of a tiled request's stream has the same bytes as the stream itself. */
class SlicesTest {
  static List<Request> types() {
    Request pair = Request.struct(new long[] {1, 1}, new long[] {0, 8}, Request.INT32, Request.DOUBLE);
    return List.of(
        Request.INT64,
        Request.contiguous(5, pair),
        Request.vector(7, 3, 5, Request.INT32),
        Request.hvector(4, 2, 100, Request.vector(3, 1, 2, Request.INT16)),
        Request.indexed(new long[] {2, 0, 5, 1}, new long[] {0, 3, 4, 12}, Request.DOUBLE),
        Request.hindexed(new long[] {3, 2}, new long[] {8, 200}, pair),
        Request.struct(new long[] {1, 2, 1}, new long[] {0, 16, 64}, Request.INT32, Request.DOUBLE, Request.INT8),
        Request.subarray(new long[] {6, 9, 4}, new long[] {2, 4, 3}, new long[] {1, 3, 1}, Request.Order.C, Request.INT16),
        Request.subarray(new long[] {6, 9}, new long[] {3, 2}, new long[] {2, 5}, Request.Order.FORTRAN, Request.FLOAT),
        Request.resized(0, 96, Request.vector(3, 1, 3, Request.INT64)),
        Request.resized(0, 40, Request.contiguous(5, Request.INT32)));
  }

  /** The file offsets of stream bytes [0, n) of {@code t} tiled from {@code disp}, by the request processor. */
  static long[] offsets(Request t, long disp, long n) {
    long[] out = new long[(int) n];
    RequestCursor c = RequestCursor.of(t, disp, n);
    Segments s = new Segments(16);
    int k = 0;
    long pos = 0;
    while (pos < n) {
      RequestProcessor.processMemory(c, 16, s, pos, n - pos);
      for (int i = 0; i < s.count(); i++) {
        for (long b = 0; b < s.size(i); b++) {
          out[k++] = s.offset(i) + b;
        }
      }
      pos += s.bytes();
    }
    return out;
  }

  @ParameterizedTest
  @MethodSource("types")
  void slice_fromAnyByte_coversTheSameFileBytes(Request t) {
    long disp = 1000;
    long total = 4 * t.size() + 3;
    long[] all = offsets(t, disp, total);
    Random rnd = new Random(t.size());
    for (int trial = 0; trial < 200; trial++) {
      long from = trial < t.size() ? trial : rnd.nextInt((int) total - 1);
      long len = 1 + rnd.nextInt((int) (total - from));
      Slices.Placed p = Slices.slice(t, disp, from, len);
      long[] got = offsets(p.request(), p.displacement(), len);
      long[] want = java.util.Arrays.copyOfRange(all, (int) from, (int) (from + len));
      assertArrayEquals(want, got, "bytes " + from + "+" + len + " of " + t + " as " + p);
      assertTrue(p.request().isMonotone(), "a slice of a monotone request stays monotone");
      RequestSpec.of(p.request()).toRequest(); // and travels on the wire
    }
  }
}
