package org.flowfs.client.api;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.flowfs.common.datarep.DatarepRegistry;
import org.flowfs.common.request.Request;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The view arithmetic (stream positions, file offsets, end of file) against the request processor. */
class ViewStateTest {
  static List<View> views() {
    return List.of(
        View.BYTES,
        View.of(10, Request.INT32, Request.contiguous(3, Request.INT32)),
        View.of(7, Request.INT16, Request.vector(4, 1, 3, Request.INT16)),
        View.of(0, Request.BYTE, Request.struct(new long[] {1, 1}, new long[] {2, 20}, Request.INT32, Request.DOUBLE)),
        View.of(64, Request.INT64, Request.resized(0, 80, Request.hindexed(new long[] {1, 2}, new long[] {8, 40}, Request.INT64))),
        View.of(3, Request.FLOAT, Request.subarray(new long[] {5, 6}, new long[] {2, 3}, new long[] {1, 2}, Request.Order.C, Request.FLOAT)));
  }

  @ParameterizedTest
  @MethodSource("views")
  void offsetsAndEnds_agreeWithTheTypemap(View view) {
    ViewState v = new ViewState(view, new DatarepRegistry().get(view.datarep()));
    long n = 5 * view.filetype().size();
    long[] off = SlicesTest.offsets(view.filetype(), view.displacement(), n);
    for (int p = 0; p < n; p++) {
      assertEquals(off[p], v.fileOffset(p), "stream byte " + p);
    }
    for (long end = 0; end <= off[(int) n - 1] + 1; end++) {
      long before = 0;
      for (long o : off) {
        before += o < end ? 1 : 0;
      }
      assertEquals(before, v.streamBytesBefore(end), "bytes before " + end);
      long e = view.etype().size();
      assertEquals((before + e - 1) / e, v.endPosition(end), "end position of a " + end + "-byte file");
    }
  }
}
