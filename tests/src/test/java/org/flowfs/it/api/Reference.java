package org.flowfs.it.api;

import org.flowfs.common.request.Request;

/** Expected offsets computed by walking typemaps directly: the in-memory reference of the tests. */
final class Reference {
  private Reference() {}

  /** Byte offsets of stream bytes {@code from .. from+n-1} of {@code t} tiled from {@code disp}. */
  static long[] offsets(Request t, long disp, long from, long n) {
    long[] out = new long[(int) n];
    long[] k = {0};
    long[] skip = {from};
    for (long tile = 0; k[0] < n; tile++) {
      t.forEachElement(disp + tile * t.extent(), (off, type) -> {
        for (int b = 0; b < type.size() && k[0] < n; b++) {
          if (skip[0] > 0) {
            skip[0]--;
          } else {
            out[(int) k[0]++] = off + b;
          }
        }
        return k[0] < n;
      });
    }
    return out;
  }

  /** One past the largest of {@code offsets}. */
  static long end(long[] offsets) {
    long e = 0;
    for (long o : offsets) {
      e = Math.max(e, o + 1);
    }
    return e;
  }
}
