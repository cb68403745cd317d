package org.flowfs.common.flow;

import java.util.Arrays;
import org.flowfs.common.request.Request;

/**
 * Where each byte of a tiled request's data stream lies, found by walking the typemap element by
 * element ({@link Request#forEachElement}): a model that shares no code with the request processor
 * or its cursor, to check flows against.
 */
final class RequestModel {
  private RequestModel() {}

  /**
   * The offset of each of the first {@code aggregate} bytes of {@code req} tiled from {@code
   * displacement} (instance {@code k} at {@code displacement + k * extent}), in stream order.
   */
  static long[] offsets(Request req, long displacement, long aggregate) {
    long[] out = new long[Math.toIntExact(aggregate)];
    if (aggregate == 0) {
      return out;
    }
    if (req.size() == 0) {
      throw new IllegalArgumentException("a request without data cannot cover " + aggregate + " bytes");
    }
    int[] n = {0};
    for (long k = 0; n[0] < out.length; k++) {
      req.forEachElement(displacement + k * req.extent(), (off, type) -> {
        for (int b = 0; b < type.size() && n[0] < out.length; b++) {
          out[n[0]++] = off + b;
        }
        return n[0] < out.length;
      });
    }
    return out;
  }

  /** The stream prefix a read moves: it stops at the first byte at or past {@code fsize}. */
  static long[] cutAt(long[] offsets, long fsize) {
    for (int i = 0; i < offsets.length; i++) {
      if (offsets[i] >= fsize) {
        return Arrays.copyOf(offsets, i);
      }
    }
    return offsets;
  }

  /** The highest offset plus one, or 0. */
  static long end(long[] offsets) {
    long e = 0;
    for (long o : offsets) {
      e = Math.max(e, o + 1);
    }
    return e;
  }

  /** {@code n} bytes of a pattern that differs at every position (mod 251) and from seed to seed. */
  static byte[] pattern(int n, int seed) {
    byte[] b = new byte[n];
    for (int i = 0; i < n; i++) {
      b[i] = (byte) ((i * 31 + seed * 7 + (i >>> 8)) % 251 + 1);
    }
    return b;
  }
}
