package org.flowfs.common.dist;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Layout;
import org.junit.jupiter.api.Test;

class DistributionsTest {

  @Test
  void builtIns_areRegisteredByName() {
    assertEquals(new SimpleStripe(65536), Distributions.of(DistSpec.of("simple_stripe")));
    assertEquals(new SimpleStripe(4096), Distributions.of(DistSpec.of("simple_stripe", 4096)));
    assertEquals(new Basic(), Distributions.of(DistSpec.of("basic_dist")));
    assertEquals(new VarStrip(10, 20, 30), Distributions.of(DistSpec.of("varstrip_dist", 10, 20, 30)));
    assertTrue(Distributions.isKnown(Basic.NAME));
    assertTrue(Distributions.isKnown(VarStrip.NAME));
  }

  @Test
  void badSpecs_areEinval() {
    for (DistSpec bad :
        List.of(
            DistSpec.of("nope"),
            DistSpec.of("basic_dist", 1),
            DistSpec.of("varstrip_dist"),
            DistSpec.of("varstrip_dist", 10, 0),
            DistSpec.of("simple_stripe", -1))) {
      FsException e = assertThrows(FsException.class, () -> Distributions.of(bad));
      assertEquals(Errno.EINVAL, e.errno(), bad.toString());
    }
  }

  @Test
  void varStrip_placesStripsRoundRobinAndPacksThem() {
    VarStrip v = new VarStrip(10, 20, 30);
    // stripe of 60 bytes: [0,10) server 0, [10,30) server 1, [30,60) server 0 again on 2 servers
    assertEquals(0, v.serverOf(5, 2));
    assertEquals(1, v.serverOf(10, 2));
    assertEquals(0, v.serverOf(30, 2));
    assertEquals(10, v.logicalToPhysical(30, 2));
    assertEquals(40, v.logicalToPhysical(60, 2));
    // the stripe's last strip and the next stripe's first share server 0 and touch
    assertEquals(40, v.contiguousLength(30, 2));
    // on three servers each holds one strip per stripe
    assertEquals(2, v.serverOf(59, 3));
    assertEquals(30 + 29, v.logicalToPhysical(60 + 59, 3));
    // on four, server 3 holds nothing
    assertEquals(Long.MAX_VALUE, v.nextMappedOffset(0, 3, 4));
    assertEquals(0, v.physicalSize(1000, 3, 4));
  }

  @Test
  void basic_keepsEverythingOnServerZero() {
    Basic b = new Basic();
    assertEquals(0, b.serverOf(123456, 8));
    assertEquals(123456, b.logicalToPhysical(123456, 8));
    assertEquals(Long.MAX_VALUE, b.nextMappedOffset(0, 1, 8));
    assertEquals(1000, b.physicalSize(1000, 0, 8));
    assertEquals(0, b.physicalSize(1000, 1, 8));
    assertEquals(1000, b.logicalSize(new long[] {1000, 0, 0}));
  }

  /**
   * Strips as large as the offsets themselves: the strips after the first lie past every offset,
   * so the offsets that would name them saturate at Long.MAX_VALUE ("none") rather than wrap round
   * to negative ones (a request processor fed a wrapped offset would go round for ever).
   */
  @Test
  void simpleStripe_withStripsAsLargeAsTheOffsets_saturatesInsteadOfWrapping() {
    SimpleStripe s = new SimpleStripe(1L << 62);
    assertEquals(Long.MAX_VALUE, s.nextMappedOffset(5, 3, 4), "strip 3 would start at 3 x 2^62");
    assertEquals(Long.MAX_VALUE, s.nextMappedOffset(5, 2, 4), "strip 2 would start at 2^63");
    assertEquals(1L << 62, s.nextMappedOffset(5, 1, 4));
    assertEquals(Long.MAX_VALUE, s.physicalToLogical(3, 0, 4));
    assertEquals((1L << 62) + 7, s.physicalToLogical(1, 7, 4));
    assertEquals(1L << 62, s.physicalSize(Long.MAX_VALUE, 0, 4), "server 0 holds all of strip 0");
    SimpleStripe max = new SimpleStripe(Long.MAX_VALUE);
    assertEquals(Long.MAX_VALUE, max.nextMappedOffset(1L << 62, 1, Layout.MAX_DATAFILES));
    assertEquals(0, max.serverOf(Long.MAX_VALUE - 1, Layout.MAX_DATAFILES));
    assertEquals(Long.MAX_VALUE, max.physicalToLogical(5, 0, Layout.MAX_DATAFILES));
    // a datafile size so large that its strip number times the server count wraps round
    assertEquals(Long.MAX_VALUE, new SimpleStripe(1).physicalToLogical(3, (Long.MAX_VALUE >> 3) + 5, 1000));
  }
}
