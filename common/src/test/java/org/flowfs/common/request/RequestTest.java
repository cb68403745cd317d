package org.flowfs.common.request;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class RequestTest {

  @Test
  void elementary_namesAndSizes() {
    assertEquals(1, Request.BYTE.size());
    assertEquals(1, Request.CHAR.size());
    assertEquals(2, Request.UINT16.size());
    assertEquals(4, Request.FLOAT.size());
    assertEquals(8, Request.DOUBLE.extent());
    assertEquals(8, Request.UINT64.size());
    assertEquals(Elementary.INT32, Elementary.byName("int32"));
    assertEquals("double", Elementary.DOUBLE.typeName());
    assertEquals(Optional.of(Elementary.INT16), Request.INT16.named());
    assertEquals(Request.Combiner.NAMED, Request.INT8.combiner());
    assertThrows(IllegalArgumentException.class, () -> Elementary.byName("int128"));
  }

  @Test
  void vector_sizeAndExtent() {
    Request v = Request.vector(3, 2, 4, Request.INT32);
    assertEquals(24, v.size());
    assertEquals(0, v.lb());
    assertEquals(((3 - 1) * 4 + 2) * 4, v.extent());
    assertEquals(v.extent(), v.trueExtent());
    assertTrue(v.isMonotone());
    assertFalse(v.isContiguous());
    assertEquals(Optional.of(Elementary.INT32), v.elementType());
    assertEquals(6, v.signature().size());
  }

  @Test
  void vector_negativeStride_goesBackwards() {
    Request v = Request.vector(3, 1, -2, Request.INT32);
    assertEquals(-16, v.lb());
    assertEquals(4, v.ub());
    assertEquals(20, v.extent());
    assertFalse(v.isMonotone());
  }

  @Test
  void contiguousOfContiguous_isOneBlock() {
    Request c = Request.contiguous(10, Request.contiguous(3, Request.DOUBLE));
    assertEquals(240, c.size());
    assertTrue(c.isContiguous());
    assertInstanceOf(Node.Block.class, c.node);
    // a vector whose blocks touch is contiguous too
    assertTrue(Request.vector(5, 4, 4, Request.INT16).isContiguous());
  }

  @Test
  void struct_hasNoImplicitPadding() {
    Request s =
        Request.struct(new long[] {1, 1}, new long[] {0, 4}, Request.INT32, Request.CHAR);
    assertEquals(5, s.size());
    assertEquals(5, s.extent());
    assertTrue(s.elementType().isEmpty());
    Request padded = Request.resized(0, 8, s);
    assertEquals(8, padded.extent());
    assertEquals(5, padded.trueExtent());
    assertEquals(List.of(Elementary.INT32, Elementary.CHAR), padded.signature());
  }

  @Test
  void resizedBounds_stickInEnclosingTypes() {
    Request r = Request.resized(-4, 20, Request.INT32);
    assertEquals(-4, r.lb());
    assertEquals(16, r.ub());
    assertEquals(0, r.trueLb());
    assertEquals(4, r.trueExtent());
    Request s = Request.struct(new long[] {1, 1}, new long[] {0, 100}, r, Request.INT32);
    // the explicit bounds win over the int at 100
    assertEquals(-4, s.lb());
    assertEquals(16, s.ub());
    assertEquals(104, s.trueUb());
    assertTrue(s.hasExplicitBounds());
    Request c = Request.contiguous(3, r);
    assertEquals(60, c.extent());
    assertEquals(44, c.trueExtent());
  }

  @Test
  void subarray_cAndFortranOrder() {
    long[] sizes = {4, 5};
    long[] sub = {2, 3};
    long[] starts = {1, 2};
    Request c = Request.subarray(sizes, sub, starts, Request.Order.C, Request.INT32);
    assertEquals(24, c.size());
    assertEquals(0, c.lb());
    assertEquals(80, c.extent());
    assertEquals((1 * 5 + 2) * 4, c.trueLb());
    assertEquals(((2 * 5) + 4 + 1) * 4, c.trueUb());
    Request f = Request.subarray(sizes, sub, starts, Request.Order.FORTRAN, Request.INT32);
    assertEquals(80, f.extent());
    assertEquals((2 * 4 + 1) * 4, f.trueLb());
    assertEquals(((4 * 4) + 2 + 1) * 4, f.trueUb());
    assertEquals(Request.Combiner.SUBARRAY, f.combiner());
    assertEquals(Optional.of(Request.Order.FORTRAN), f.order());
    assertThrows(
        IllegalArgumentException.class,
        () -> Request.subarray(sizes, new long[] {2, 4}, starts, Request.Order.C, Request.BYTE));
  }

  @Test
  void hugeVector_isOneLoopNotAMillionBlocks() {
    Request v = Request.vector(1_000_000, 8, 32, Request.BYTE);
    assertEquals(8_000_000, v.size());
    assertInstanceOf(Node.Repeat.class, v.node);
    Node.Repeat r = (Node.Repeat) v.node;
    assertEquals(1_000_000, r.count);
    assertInstanceOf(Node.Block.class, r.child);
    // nested: a vector of such vectors stays two loops
    Request vv = Request.hvector(1000, 1, 64_000_000, v);
    assertEquals(2, vv.node.depth);
  }

  @Test
  void indexedOfBytes_isOneListOfBlocks() {
    long[] bl = new long[100_000];
    long[] d = new long[100_000];
    for (int i = 0; i < bl.length; i++) {
      bl[i] = 3;
      d[i] = 10L * i;
    }
    Request x = Request.hindexed(bl, d, Request.BYTE);
    assertInstanceOf(Node.Blocks.class, x.node);
    assertEquals(300_000, x.size());
    assertTrue(x.isMonotone());
  }

  @Test
  void contents_canBeReadBack() {
    Request base = Request.DOUBLE;
    Request h = Request.hindexed(new long[] {1, 2}, new long[] {0, 64}, base);
    assertEquals(Request.Combiner.HINDEXED, h.combiner());
    assertEquals(List.of(base), h.types());
    assertEquals(64, h.displacements()[1]);
    assertEquals(2, h.blockLengths()[1]);
    assertEquals(1, h.nesting());
    assertEquals(2, Request.vector(1, 1, 1, h).nesting());
    Request v = Request.vector(7, 2, 3, h);
    assertEquals(7, v.count());
    assertEquals(2, v.blockLength());
    assertEquals(3, v.stride());
    assertEquals("vector(7, 2, 3, hindexed([1, 2], [0, 64], double))", v.toString());
  }

  @Test
  void badArguments_areRejected() {
    assertThrows(IllegalArgumentException.class, () -> Request.contiguous(-1, Request.BYTE));
    assertThrows(IllegalArgumentException.class, () -> Request.vector(1, -1, 1, Request.BYTE));
    assertThrows(
        IllegalArgumentException.class,
        () -> Request.indexed(new long[] {1}, new long[] {1, 2}, Request.BYTE));
    assertThrows(
        IllegalArgumentException.class,
        () -> Request.struct(new long[] {1}, new long[] {0}, List.of()));
    assertThrows(
        IllegalArgumentException.class,
        () -> Request.contiguous(Long.MAX_VALUE / 2, Request.DOUBLE));
  }

  @Test
  void emptyTypes_haveNoBounds() {
    Request e = Request.contiguous(0, Request.INT32);
    assertEquals(0, e.size());
    assertEquals(0, e.extent());
    // an empty part does not widen a struct
    Request s = Request.struct(new long[] {1, 1}, new long[] {0, 1000}, Request.INT32, e);
    assertEquals(4, s.extent());
    assertThrows(IllegalArgumentException.class, () -> RequestCursor.of(e, 0, 1));
  }
}
