package org.flowfs.common.request;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

/** {@link Request} against MPI's definitions, expanded entry by entry by {@link TypeModel}. */
class RequestPropertiesTest {

  @Property(tries = 600)
  void sizeAndBounds_followMpi(@ForAll long seed, @ForAll boolean tidy) {
    TypeModel m = TypeModel.random(new Random(seed), 3, tidy);
    Request q = m.build();
    long[] b = m.bounds();
    String what = m.toString();
    assertEquals(m.size(), q.size(), "size of " + what);
    assertEquals(b[0], q.lb(), "lb of " + what);
    assertEquals(b[1], q.ub(), "ub of " + what);
    assertEquals(b[1] - b[0], q.extent(), "extent of " + what);
    assertEquals(b[2], q.trueLb(), "true lb of " + what);
    assertEquals(b[3] - b[2], q.trueExtent(), "true extent of " + what);
  }

  @Property(tries = 400)
  void typemap_isTheDefinitionsTypemap(@ForAll long seed, @ForAll boolean tidy) {
    TypeModel m = TypeModel.random(new Random(seed), 3, tidy);
    Request q = m.build();
    List<String> want = new ArrayList<>();
    for (TypeModel.Entry e : m.entries()) {
      if (e.marker() == TypeModel.Entry.DATA) {
        want.add(e.disp() + 7 + ":" + e.type().typeName());
      }
    }
    List<String> got = new ArrayList<>();
    q.forEachElement(7, (off, t) -> got.add(off + ":" + t.typeName()));
    assertEquals(want, got, m.toString());
    boolean uniform = want.stream().map(s -> s.substring(s.indexOf(':'))).distinct().count() == 1;
    assertEquals(uniform, q.elementType().isPresent(), "element type of " + m);
  }

  @Property(tries = 400)
  void walkingForm_holdsTheBytesInOrder(@ForAll long seed, @ForAll boolean tidy) {
    TypeModel m = TypeModel.random(new Random(seed), 3, tidy);
    Request q = m.build();
    List<Long> bytes = new ArrayList<>();
    m.bytes(0, bytes);
    long[] want = bytes.stream().mapToLong(Long::longValue).toArray();
    // every byte by number, through the walking form
    long[] got = new long[want.length];
    for (int i = 0; i < want.length; i++) {
      got[i] = q.node.offsetAt(i);
    }
    assertArrayEquals(want, got, m.toString());
    boolean increasing = true;
    for (int i = 1; i < want.length; i++) {
      increasing &= want[i] > want[i - 1];
    }
    assertEquals(increasing, q.isMonotone(), "monotone: " + m);
    boolean contiguous = want.length > 0 && increasing
        && want[want.length - 1] - want[0] + 1 == want.length
        && want[0] == q.lb() && want.length == q.extent();
    assertEquals(contiguous, q.isContiguous(), "contiguous: " + m);
  }
}
