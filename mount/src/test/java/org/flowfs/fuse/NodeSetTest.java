package org.flowfs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The set of node numbers: as a HashSet would answer, through growth, removals and shrinking. */
class NodeSetTest {
  @Test
  void addsAndRemoves_asAHashSet_throughGrowthAndShrinking() {
    NodeSet set = new NodeSet();
    Set<Long> want = new HashSet<>();
    Random r = new Random(1);
    for (int round = 0; round < 4; round++) {
      for (int i = 0; i < 50_000; i++) { // upwards, as libfuse numbers nodes, with some repeats
        long n = 1 + round * 40_000L + r.nextInt(60_000);
        assertEquals(want.add(n), set.add(n), "add " + n);
      }
      for (int i = 0; i < 60_000; i++) {
        long n = 1 + r.nextInt(200_000);
        assertEquals(want.remove(n), set.remove(n), "remove " + n);
      }
      assertEquals(want.size(), set.size());
      for (long n = 1; n <= 200_000; n++) {
        assertEquals(want.contains(n), set.contains(n), "contains " + n);
      }
    }
    for (Long n : new HashSet<>(want)) {
      assertTrue(set.remove(n));
    }
    assertEquals(0, set.size());
    assertFalse(set.contains(1));
  }

  @Test
  void removingFromTheMiddleOfARun_keepsTheMembersAfterItFindable() {
    NodeSet set = new NodeSet();
    // many members, so some share home slots and form runs that wrap around the table's end
    for (long n = 1; n <= 500; n++) {
      set.add(n);
    }
    for (long n = 1; n <= 500; n += 2) {
      assertTrue(set.remove(n));
    }
    for (long n = 1; n <= 500; n++) {
      assertEquals(n % 2 == 0, set.contains(n), "node " + n);
    }
  }
}
