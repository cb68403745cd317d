package org.flowfs.common.request;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.statistics.Statistics;
import net.jqwik.api.constraints.IntRange;
import org.flowfs.common.dist.Basic;
import org.flowfs.common.dist.Distribution;
import org.flowfs.common.dist.SimpleStripe;
import org.flowfs.common.dist.VarStrip;
import org.flowfs.common.request.RequestProcessor.Mode;

/**
 * The request processor against a brute-force reference: random nested types ({@link TypeModel})
 * tiled over a file, flattened byte by byte, each byte sent to the server the distribution names.
 */
class RequestProcessorPropertiesTest {

  /** One random scenario: a file request, where it lies, how far the file goes, how it is spread. */
  static final class Scenario {
    final TypeModel model;
    final Request request;
    final long displacement;
    final long aggregate;
    final long[] stream;
    final Distribution dist;
    final int servers;
    final long fsize;
    final boolean extend;

    Scenario(Random r, int servers, boolean tidy, boolean extend) {
      this.model = TypeModel.randomWithData(r, 3, tidy, 600);
      this.request = model.build();
      long size = model.size();
      this.aggregate = r.nextInt(4) == 0 ? size : (long) (r.nextDouble() * 3 * size) + 1;
      long[] atZero = model.stream(0, aggregate);
      long min = 0;
      for (long o : atZero) {
        min = Math.min(min, o);
      }
      this.displacement = -min + r.nextInt(40);
      this.stream = model.stream(displacement, aggregate);
      this.dist = randomDistribution(r);
      this.servers = servers;
      long max = 0;
      for (long o : stream) {
        max = Math.max(max, o);
      }
      this.fsize = r.nextInt(5) == 0 ? max + 1 + r.nextInt(3) : (long) (r.nextDouble() * (max + 10));
      this.extend = extend;
    }

    FileData fileData(int server) {
      return new FileData(fsize, server, servers, dist, extend);
    }

    /** The reference: {stream position, logical offset, physical offset} of server's bytes from {@code from}. */
    List<long[]> expected(int server, long from) {
      List<long[]> out = new ArrayList<>();
      for (int p = (int) from; p < stream.length; p++) {
        long off = stream[p];
        if (!extend && off >= fsize) {
          break;
        }
        if (dist.serverOf(off, servers) == server) {
          out.add(new long[] {p, off, dist.logicalToPhysical(off, servers)});
        }
      }
      return out;
    }

    /** Whether processing from {@code from} meets a byte at or past the end of the file. */
    boolean expectedEof(long from) {
      if (extend) {
        return false;
      }
      for (int p = (int) from; p < stream.length; p++) {
        if (stream[p] >= fsize) {
          return true;
        }
      }
      return false;
    }

    @Override
    public String toString() {
      return model + " x" + aggregate + "B at " + displacement + ", " + dist + " on " + servers
          + ", fsize " + fsize + (extend ? " extend" : "");
    }
  }

  static Distribution randomDistribution(Random r) {
    switch (r.nextInt(3)) {
      case 0:
        return new SimpleStripe(1 + r.nextInt(r.nextBoolean() ? 8 : 64));
      case 1:
        return new Basic();
      default:
        {
          long[] strips = new long[1 + r.nextInt(6)];
          for (int i = 0; i < strips.length; i++) {
            strips[i] = 1 + r.nextInt(r.nextBoolean() ? 6 : 40);
          }
          return new VarStrip(strips);
        }
    }
  }

  /** What one loop over a request yielded: the bytes, expanded, and the final EOF flag. */
  record Yield(List<Long> bytes, boolean eof) {}

  /**
   * Runs the seed's loop from {@code from} with random chunking, checking every call's own
   * contract and, now and then, that CKSIZE predicts what is left.
   */
  static Yield drive(Scenario sc, RequestCursor c, int server, Mode mode, long from, Random r) {
    FileData fd = sc.fileData(server);
    Segments segs = new Segments(8);
    List<Long> got = new ArrayList<>();
    long offset = from;
    boolean eof = false;
    int calls = 0;
    do {
      if (r.nextInt(4) == 0) {
        long b = r.nextBoolean() ? Long.MAX_VALUE : 1 + r.nextInt(100);
        long positionBefore = c.position();
        long back = RequestProcessor.process(c, fd, 0, segs, offset, b, Mode.CKSIZE);
        assertEquals(offset, back, "CKSIZE returns the start offset");
        assertEquals(positionBefore, c.position(), "CKSIZE leaves the cursor alone");
        long left = sc.expected(server, offset).size();
        assertEquals(Math.min(b, left), segs.bytes(), "CKSIZE count");
      }
      int segmax = 1 + r.nextInt(8);
      long bytemax = 1 + r.nextInt(r.nextBoolean() ? 16 : 200);
      long next = RequestProcessor.process(c, fd, segmax, segs, offset, bytemax, mode);
      assertTrue(segs.count() <= segmax, "at most segmax segments");
      assertTrue(segs.bytes() <= bytemax, "at most bytemax bytes");
      long sum = 0;
      for (int i = 0; i < segs.count(); i++) {
        assertTrue(segs.size(i) > 0, "no empty segment");
        if (i > 0) {
          assertTrue(
              segs.offset(i - 1) + segs.size(i - 1) != segs.offset(i), "touching segments merged");
        }
        sum += segs.size(i);
        for (long k = 0; k < segs.size(i); k++) {
          got.add(segs.offset(i) + k);
        }
      }
      assertEquals(sum, segs.bytes(), "bytes processed");
      if (next != RequestProcessor.DONE) {
        assertFalse(segs.eof(), "EOF only on the last call");
        assertTrue(segs.bytes() > 0, "a call that is not the last makes progress");
        assertTrue(next > offset && next <= sc.aggregate, "offset moves forward");
        // everything of this server before the returned offset has been produced
        long before = sc.expected(server, from).stream().filter(e -> e[0] < next).count();
        assertEquals(before, got.size(), "returned offset is just past the produced bytes");
      } else {
        eof = segs.eof();
      }
      offset = next;
      if (++calls > 100_000) {
        fail("no end: " + sc);
      }
    } while (offset != RequestProcessor.DONE);
    return new Yield(got, eof);
  }

  @Property(tries = 400)
  void serverAndClientModes_matchTheReference(
      @ForAll long seed,
      @ForAll @IntRange(min = 1, max = 16) int servers,
      @ForAll boolean tidy,
      @ForAll boolean extend) {
    Random r = new Random(seed);
    Scenario sc = new Scenario(r, servers, tidy, extend);
    Statistics.label("monotone").collect(tidy, sc.request.isMonotone());
    Statistics.label("nesting").collect(sc.request.nesting());
    Statistics.label("stream bytes").collect(sc.aggregate < 50 ? "<50" : sc.aggregate < 300 ? "<300" : ">=300");
    Statistics.label("eof").collect(sc.expectedEof(0));
    boolean[] covered = new boolean[sc.stream.length];
    int cutoff = sc.stream.length;
    if (!extend) {
      for (int p = 0; p < sc.stream.length; p++) {
        if (sc.stream[p] >= sc.fsize) {
          cutoff = p;
          break;
        }
      }
    }
    for (int s = 0; s < servers; s++) {
      List<long[]> want = sc.expected(s, 0);
      RequestCursor c = RequestCursor.of(sc.request, sc.displacement, sc.aggregate);

      Segments probe = new Segments(1);
      long back =
          RequestProcessor.process(c, sc.fileData(s), 0, probe, 0, Long.MAX_VALUE, Mode.CKSIZE);
      assertEquals(0, back);
      assertEquals(want.size(), probe.bytes(), "CKSIZE of the whole request, server " + s + ": " + sc);

      Yield server = drive(sc, c, s, Mode.SERVER, 0, r);
      assertArrayEquals(
          want.stream().mapToLong(e -> e[2]).toArray(),
          server.bytes().stream().mapToLong(Long::longValue).toArray(),
          "SERVER mode, server " + s + ": " + sc);
      assertEquals(sc.expectedEof(0), server.eof(), "EOF, server " + s + ": " + sc);
      for (long[] e : want) {
        assertTrue(extend || e[1] < sc.fsize, "nothing at or past fsize");
      }

      RequestCursor c2 = RequestCursor.of(sc.request, sc.displacement, sc.aggregate);
      Yield client = drive(sc, c2, s, Mode.CLIENT, 0, r);
      assertArrayEquals(
          want.stream().mapToLong(e -> e[0]).toArray(),
          client.bytes().stream().mapToLong(Long::longValue).toArray(),
          "CLIENT mode, server " + s + ": " + sc);
      assertEquals(sc.expectedEof(0), client.eof(), "EOF (client), server " + s + ": " + sc);
      for (long p : client.bytes()) {
        assertFalse(covered[(int) p], "buffer byte " + p + " from two servers: " + sc);
        covered[(int) p] = true;
      }
    }
    for (int p = 0; p < sc.stream.length; p++) {
      assertEquals(p < cutoff, covered[p], "buffer byte " + p + " reassembled: " + sc);
    }
  }

  @Property(tries = 250)
  void anyStartOffset_resumesThere(
      @ForAll long seed,
      @ForAll @IntRange(min = 1, max = 16) int servers,
      @ForAll boolean tidy,
      @ForAll boolean extend) {
    Random r = new Random(seed);
    Scenario sc = new Scenario(r, servers, tidy, extend);
    int s = r.nextInt(servers);
    // one cursor, used for a while, then moved to an arbitrary offset
    RequestCursor c = RequestCursor.of(sc.request, sc.displacement, sc.aggregate);
    Segments segs = new Segments(4);
    RequestProcessor.process(c, sc.fileData(s), 4, segs, 0, 1 + r.nextInt(50), Mode.SERVER);
    long from = (long) (r.nextDouble() * (sc.aggregate + 1));
    from = Math.min(from, sc.aggregate);
    Mode mode = r.nextBoolean() ? Mode.SERVER : Mode.CLIENT;
    Yield y = drive(sc, c, s, mode, from, r);
    List<long[]> want = sc.expected(s, from);
    int column = mode == Mode.SERVER ? 2 : 0;
    assertArrayEquals(
        want.stream().mapToLong(e -> e[column]).toArray(),
        y.bytes().stream().mapToLong(Long::longValue).toArray(),
        mode + " from " + from + ", server " + s + ": " + sc);
    assertEquals(sc.expectedEof(from), y.eof(), "EOF from " + from + ": " + sc);
  }

  @Property(tries = 300)
  void memoryPass_mapsTheStreamOntoTheBuffer(@ForAll long seed, @ForAll boolean tidy) {
    Random r = new Random(seed);
    TypeModel model = TypeModel.randomWithData(r, 3, tidy, 600);
    long aggregate = (long) (r.nextDouble() * 3 * model.size()) + 1;
    long[] want = model.stream(0, aggregate);
    RequestCursor mem = RequestCursor.of(model.build(), 0, aggregate);
    Segments segs = new Segments(8);
    List<Long> got = new ArrayList<>();
    long offset = 0;
    int calls = 0;
    do {
      int segmax = 1 + r.nextInt(8);
      long bytemax = 1 + r.nextInt(100);
      long next = RequestProcessor.processMemory(mem, segmax, segs, offset, bytemax);
      assertTrue(segs.count() <= segmax && segs.bytes() <= bytemax);
      long sum = 0;
      for (int i = 0; i < segs.count(); i++) {
        assertTrue(segs.size(i) > 0);
        if (i > 0) {
          assertTrue(segs.offset(i - 1) + segs.size(i - 1) != segs.offset(i));
        }
        sum += segs.size(i);
        for (long k = 0; k < segs.size(i); k++) {
          got.add(segs.offset(i) + k);
        }
      }
      assertEquals(sum, segs.bytes());
      if (next != RequestProcessor.DONE) {
        assertEquals(next, offset + segs.bytes(), "the memory stream has no gaps");
      }
      offset = next;
      assertTrue(++calls < 100_000);
    } while (offset != RequestProcessor.DONE);
    assertArrayEquals(
        want, got.stream().mapToLong(Long::longValue).toArray(), model + " x" + aggregate);
  }
}
