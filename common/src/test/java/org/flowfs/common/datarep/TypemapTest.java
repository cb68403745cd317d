package org.flowfs.common.datarep;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.flowfs.common.request.Elementary;
import org.flowfs.common.request.Request;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** {@link Typemap} against a plain walk of the tiled typemap. */
class TypemapTest {
  record Item(long offset, Elementary type) {}

  static List<Request> types() {
    return List.of(
        Request.INT32,
        Request.vector(5, 2, 3, Request.DOUBLE),
        Request.hvector(3, 2, -40, Request.INT16),
        Request.indexed(new long[] {2, 0, 3}, new long[] {4, 1, 0}, Request.FLOAT),
        Request.struct(new long[] {1, 2, 1}, new long[] {0, 8, 40}, Request.INT32, Request.DOUBLE, Request.INT8),
        Request.subarray(new long[] {4, 6}, new long[] {2, 3}, new long[] {1, 2}, Request.Order.C, Request.INT64),
        Request.resized(-8, 64, Request.struct(new long[] {2, 1}, new long[] {0, 12}, Request.INT16, Request.UINT32)),
        Request.contiguous(3, Request.struct(new long[] {1, 1}, new long[] {0, 2}, Request.INT8, Request.INT16)));
  }

  static List<Item> walk(Request t, long instances) {
    List<Item> out = new ArrayList<>();
    for (long k = 0; k < instances; k++) {
      t.forEachElement(k * t.extent(), (o, e) -> out.add(new Item(o, e)));
    }
    return out;
  }

  @ParameterizedTest
  @MethodSource("types")
  void forEach_visitsTheSameValuesAsAWalk_fromEveryPosition(Request t) {
    long per = Typemap.items(t);
    assertEquals(walk(t, 1).size(), per, "values per instance");
    List<Item> all = walk(t, 3);
    for (int pos = 0; pos < all.size(); pos++) {
      for (int count = 0; pos + count <= all.size(); count += 1 + count / 2) {
        List<Item> got = new ArrayList<>();
        Typemap.forEach(t, pos, count, (o, e) -> got.add(new Item(o, e)));
        assertEquals(all.subList(pos, pos + count), got, "position " + pos + ", count " + count);
      }
    }
  }

  @ParameterizedTest
  @MethodSource("types")
  void fileType_scalesExtentCountedDisplacements(Request t) {
    Datarep wide = new DatarepRegistry().register("wide", (u, d, c, f, p, s) -> {}, (u, d, c, f, p, s) -> {},
        (e, s) -> 3L * e.size(), null);
    Request f = wide.fileType(t);
    assertEquals(3 * t.size(), f.size(), "file size of " + t);
    assertEquals(Typemap.items(t), walk(t, 1).size());
    // a native-sized representation keeps the very same request
    assertEquals(t, new DatarepRegistry().get(Datarep.EXTERNAL32).fileType(t));
  }
}
