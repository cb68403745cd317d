package org.flowfs.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.dist.Distribution;
import org.flowfs.common.dist.Distributions;

/**
 * {@link StripeMap#runs} against the distribution it applies: the runs' pieces cover the range
 * exactly once, each run is contiguous in one datafile and at most {@code maxRun} long, and pieces
 * that could have been merged were.
 */
class StripeMapTest {

  @Property(tries = 500)
  void runs_coverTheRangeOnceAndMergeContiguousPieces(
      @ForAll("layouts") Layout layout,
      @ForAll("offsets") long offset,
      @ForAll @IntRange(min = 0, max = 20_000) int length,
      @ForAll @LongRange(min = 1, max = 30_000) long maxRun) {
    check(layout, offset, length, maxRun);
  }

  @Property(tries = 100)
  void runs_withARunLimitOverTheLength_areOnePerServer(
      @ForAll("layouts") Layout layout, @ForAll("offsets") long offset, @ForAll @IntRange(min = 1, max = 20_000) int length) {
    if (!layout.dist().name().equals("simple_stripe")) {
      return; // only round-robin strips put a server's share of a contiguous range in one contiguous piece
    }
    List<StripeMap.Run> runs = check(layout, offset, length, length);
    Set<Integer> servers = new HashSet<>();
    for (StripeMap.Run r : runs) {
      assertTrue(servers.add(r.server()), "one run per server: " + runs);
    }
  }

  @Example
  void runs_simpleStripeAcrossManyStrips_oneRunPerServer() {
    Layout l = layout(DistSpec.of("simple_stripe", 4096), 4);
    List<StripeMap.Run> runs = StripeMap.runs(l, 1000, 10 * 4096, 1 << 20);
    assertEquals(4, runs.size());
    StripeMap.Run first = runs.stream().filter(r -> r.server() == 0).findFirst().orElseThrow();
    // server 0 holds strips 0, 4 and 8: bytes 1000..4096 of strip 0, then all of strips 4 and 8
    assertEquals(1000, first.physical());
    assertEquals(3 * 4096 - 1000, first.length());
    assertEquals(List.of(new StripeMap.Piece(0, 3096), new StripeMap.Piece(3096 + 3 * 4096, 4096),
        new StripeMap.Piece(3096 + 7 * 4096, 4096)), first.pieces());
  }

  @Example
  void runs_emptyRange_isNoRun() {
    assertEquals(List.of(), StripeMap.runs(layout(DistSpec.of("simple_stripe", 10), 3), 12345, 0, 100));
  }

  /** Checks every invariant of the runs of one range, and returns them. */
  static List<StripeMap.Run> check(Layout layout, long offset, int length, long maxRun) {
    Distribution d = Distributions.of(layout.dist());
    int n = layout.serverCount();
    List<StripeMap.Run> runs = StripeMap.runs(layout, offset, length, maxRun);
    Supplier<String> ctx = () -> layout.dist() + " n=" + n + " [" + offset + "+" + length + ") maxRun=" + maxRun + ": ";
    List<StripeMap.Piece> all = new ArrayList<>();
    for (StripeMap.Run r : runs) {
      if (r.server() < 0 || r.server() >= n || r.length() <= 0 || r.length() > maxRun) {
        fail(ctx.get() + "server or length of " + r);
      }
      long phys = r.physical();
      long sum = 0;
      for (StripeMap.Piece p : r.pieces()) {
        long logical = offset + p.bufferOffset();
        if (p.length() <= 0 || d.serverOf(logical, n) != r.server() || d.logicalToPhysical(logical, n) != phys
            || p.length() > d.contiguousLength(logical, n)) {
          // on the run's server, contiguous with the piece before, within one contiguous stretch
          fail(ctx.get() + "piece " + p + " does not belong in " + r);
        }
        phys += p.length();
        sum += p.length();
        all.add(p);
      }
      if (r.length() != sum) {
        fail(ctx.get() + "run length is not its pieces' " + r);
      }
    }
    // the pieces tile [0, length) of the buffer
    all.sort(Comparator.comparingInt(StripeMap.Piece::bufferOffset));
    long at = 0;
    for (StripeMap.Piece p : all) {
      if (at != p.bufferOffset()) {
        fail(ctx.get() + "gap or overlap at " + at);
      }
      at += p.length();
    }
    assertEquals(length, at, () -> ctx.get() + "covered");
    // a server's runs do not overlap, and two that touch could not have been one
    Map<Integer, List<StripeMap.Run>> byServer = new HashMap<>();
    for (StripeMap.Run r : runs) {
      byServer.computeIfAbsent(r.server(), x -> new ArrayList<>()).add(r);
    }
    for (List<StripeMap.Run> rs : byServer.values()) {
      rs.sort(Comparator.comparingLong(StripeMap.Run::physical));
      for (int i = 1; i < rs.size(); i++) {
        StripeMap.Run a = rs.get(i - 1);
        StripeMap.Run b = rs.get(i);
        if (a.physical() + a.length() > b.physical()) {
          fail(ctx.get() + "overlapping runs " + a + " and " + b);
        }
        if (a.physical() + a.length() == b.physical() && a.length() + b.length() <= maxRun) {
          fail(ctx.get() + "mergeable runs " + a + " and " + b);
        }
      }
    }
    return runs;
  }

  @Provide
  Arbitrary<Layout> layouts() {
    Arbitrary<Integer> servers = Arbitraries.integers().between(1, 8);
    Arbitrary<DistSpec> simple = Arbitraries.longs().between(1, 5000).map(s -> DistSpec.of("simple_stripe", s));
    Arbitrary<DistSpec> basic = Arbitraries.just(DistSpec.of("basic_dist"));
    Arbitrary<DistSpec> varstrip = Arbitraries.longs().between(1, 3000).list().ofMinSize(1).ofMaxSize(5)
        .map(l -> new DistSpec("varstrip_dist", l));
    Arbitrary<DistSpec> dist = Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(6, simple), net.jqwik.api.Tuple.of(1, basic), net.jqwik.api.Tuple.of(2, varstrip));
    return Combinators.combine(dist, servers).as(StripeMapTest::layout);
  }

  @Provide
  Arbitrary<Long> offsets() {
    return Arbitraries.oneOf(Arbitraries.longs().between(0, 100_000), Arbitraries.longs().between(0, 1L << 50));
  }

  static Layout layout(DistSpec dist, int servers) {
    List<Handle> h = new ArrayList<>();
    for (int i = 0; i < servers; i++) {
      h.add(Handle.of(Handle.serverOfIo(i), 1 + i));
    }
    return new Layout(dist, h);
  }
}
