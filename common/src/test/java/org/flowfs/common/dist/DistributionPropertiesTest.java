package org.flowfs.common.dist;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

/**
 * Every distribution against brute force: offsets are checked byte by byte over a window, so the
 * strips are kept small.
 */
class DistributionPropertiesTest {

  static Distribution random(Random r) {
    switch (r.nextInt(3)) {
      case 0:
        return new SimpleStripe(1 + r.nextInt(40));
      case 1:
        return new Basic();
      default:
        {
          long[] strips = new long[1 + r.nextInt(7)];
          for (int i = 0; i < strips.length; i++) {
            strips[i] = 1 + r.nextInt(30);
          }
          return new VarStrip(strips);
        }
    }
  }

  /** A window long enough to hold a few whole stripes of any distribution made by random(). */
  static final int WINDOW = 2000;

  @Property(tries = 300)
  void logicalToPhysicalToLogical_isTheIdentity(
      @ForAll long seed,
      @ForAll @IntRange(min = 1, max = 16) int n,
      @ForAll @LongRange(min = 0, max = 1L << 40) long far) {
    Random r = new Random(seed);
    Distribution d = random(r);
    for (long base : new long[] {0, far}) {
      for (long x = base; x < base + 300; x++) {
        int s = d.serverOf(x, n);
        assertTrue(s >= 0 && s < n);
        long p = d.logicalToPhysical(x, n);
        assertTrue(p >= 0);
        assertEquals(x, d.physicalToLogical(s, p, n));
      }
    }
  }

  @Property(tries = 200)
  void physicalToLogicalToPhysical_isTheIdentity(
      @ForAll long seed, @ForAll @IntRange(min = 1, max = 16) int n) {
    Random r = new Random(seed);
    Distribution d = random(r);
    for (int s = 0; s < n; s++) {
      if (d.nextMappedOffset(0, s, n) == Long.MAX_VALUE) {
        continue; // holds nothing
      }
      for (long p = 0; p < 300; p++) {
        long x = d.physicalToLogical(s, p, n);
        assertEquals(s, d.serverOf(x, n));
        assertEquals(p, d.logicalToPhysical(x, n));
      }
    }
  }

  @Property(tries = 200)
  void contiguousLength_isTheLongestRun(
      @ForAll long seed, @ForAll @IntRange(min = 1, max = 16) int n) {
    Random r = new Random(seed);
    Distribution d = random(r);
    for (long x = 0; x < 400; x++) {
      long len = d.contiguousLength(x, n);
      assertTrue(len >= 1);
      int s = d.serverOf(x, n);
      long p = d.logicalToPhysical(x, n);
      long checked = Math.min(len, 500);
      for (long k = 1; k < checked; k++) {
        if (d.serverOf(x + k, n) != s || d.logicalToPhysical(x + k, n) != p + k) {
          fail(d + " on " + n + ": the run from " + x + " breaks at " + (x + k));
        }
      }
      if (len < 1_000_000) {
        long y = x + len;
        assertTrue(
            d.serverOf(y, n) != s || d.logicalToPhysical(y, n) != p + len,
            d + " on " + n + ": the run from " + x + " could go on past " + y);
      }
    }
  }

  @Property(tries = 200)
  void nextMappedOffset_isTheFirstByteOfThatServer(
      @ForAll long seed, @ForAll @IntRange(min = 1, max = 16) int n) {
    Random r = new Random(seed);
    Distribution d = random(r);
    int[] owner = new int[WINDOW * 2];
    for (int x = 0; x < owner.length; x++) {
      owner[x] = d.serverOf(x, n);
    }
    for (int s = 0; s < n; s++) {
      long next = Long.MAX_VALUE;
      long[] want = new long[owner.length];
      for (int x = owner.length - 1; x >= 0; x--) {
        if (owner[x] == s) {
          next = x;
        }
        want[x] = next;
      }
      for (int x = 0; x < WINDOW; x++) {
        if (want[x] != d.nextMappedOffset(x, s, n)) {
          fail(d + " on " + n + " server " + s + " from " + x + ": want " + want[x]);
        }
      }
    }
  }

  @Property(tries = 200)
  void physicalSize_andLogicalSize_agree(
      @ForAll long seed, @ForAll @IntRange(min = 1, max = 16) int n) {
    Random r = new Random(seed);
    Distribution d = random(r);
    long[] need = new long[n];
    for (long size = 0; size <= 600; size++) {
      long[] sizes = new long[n];
      for (int s = 0; s < n; s++) {
        sizes[s] = d.physicalSize(size, s, n);
        assertEquals(need[s], sizes[s]);
      }
      assertEquals(size, d.logicalSize(sizes));
      // byte `size` joins the file: its server needs one byte more than its physical offset
      int s = d.serverOf(size, n);
      need[s] = Math.max(need[s], d.logicalToPhysical(size, n) + 1);
    }
  }

  @Property(tries = 100)
  void spec_roundTripsThroughTheRegistry(@ForAll long seed) {
    Distribution d = random(new Random(seed));
    Distribution back = Distributions.of(d.spec());
    assertEquals(d, back);
    assertEquals(d.name(), back.name());
    assertEquals(d.spec(), back.spec());
  }
}
