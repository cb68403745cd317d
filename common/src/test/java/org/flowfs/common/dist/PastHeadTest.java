package org.flowfs.common.dist;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.flowfs.common.request.FileData;
import org.flowfs.common.request.Request;
import org.flowfs.common.request.RequestCursor;
import org.flowfs.common.request.RequestProcessor;
import org.flowfs.common.request.Segments;

/**
 * {@link PastHead} against brute force: every byte past the head lies where the inner distribution
 * puts it, every byte below it on the extra server, and a flow processed with {@link
 * FileData#forFlow} gives a datafile exactly its bytes past the head.
 */
class PastHeadTest {
  static final int WINDOW = 1500;

  @Property(tries = 200)
  void bytesPastTheHead_stayWhereTheInnerDistributionPutsThem(
      @ForAll long seed, @ForAll @IntRange(min = 1, max = 8) int n, @ForAll @IntRange(min = 1, max = 700) int head) {
    Distribution inner = DistributionPropertiesTest.random(new Random(seed));
    PastHead d = new PastHead(inner, head);
    for (long x = 0; x < WINDOW; x++) {
      if (x < head) {
        assertEquals(n, d.serverOf(x, n + 1), "byte " + x);
        assertEquals(x, d.logicalToPhysical(x, n + 1));
        assertEquals(x, d.physicalToLogical(n, x, n + 1));
        assertEquals(head - x, d.contiguousLength(x, n + 1));
      } else {
        int s = inner.serverOf(x, n);
        assertEquals(s, d.serverOf(x, n + 1), "byte " + x);
        assertEquals(inner.logicalToPhysical(x, n), d.logicalToPhysical(x, n + 1));
        assertEquals(x, d.physicalToLogical(s, d.logicalToPhysical(x, n + 1), n + 1));
        assertEquals(inner.contiguousLength(x, n), d.contiguousLength(x, n + 1));
      }
    }
    for (int s = 0; s <= n; s++) {
      for (long x = 0; x < WINDOW; x += 7) {
        assertEquals(bruteNext(d, x, s, n + 1), Math.min(d.nextMappedOffset(x, s, n + 1), WINDOW),
            "next offset of server " + s + " from " + x);
      }
      for (long size = 0; size < WINDOW; size += 13) {
        assertEquals(brutePhysicalSize(d, size, s, n + 1), d.physicalSize(size, s, n + 1),
            "size of datafile " + s + " for " + size + " bytes");
      }
    }
  }

  @Property(tries = 100)
  void aFlowOfAContiguousRange_givesEachDatafileItsBytesPastTheHead(
      @ForAll long seed, @ForAll @IntRange(min = 1, max = 6) int n, @ForAll @IntRange(min = 1, max = 900) int head,
      @ForAll @IntRange(min = 0, max = 400) int from, @ForAll @IntRange(min = 1, max = 1000) int length) {
    Distribution inner = DistributionPropertiesTest.random(new Random(seed));
    Request req = Request.bytes(length);
    for (int s = 0; s < n; s++) {
      FileData fd = FileData.forFlow(0, s, n, inner, head, true);
      List<long[]> want = new ArrayList<>();
      List<long[]> wantStream = new ArrayList<>();
      for (long x = from; x < from + length; x++) {
        if (x >= head && inner.serverOf(x, n) == s) {
          add(want, inner.logicalToPhysical(x, n));
          add(wantStream, x - from);
        }
      }
      assertEquals(flat(want), flat(process(req, from, length, fd, RequestProcessor.Mode.SERVER)), "datafile " + s);
      assertEquals(flat(wantStream), flat(process(req, from, length, fd, RequestProcessor.Mode.CLIENT)), "stream of " + s);
    }
    FileData none = FileData.forFlow(0, 0, n, inner, 0, true);
    assertEquals(inner, none.distribution(), "no head: the file's own distribution");
    assertEquals(n, none.serverCount());
  }

  private static long bruteNext(Distribution d, long from, int server, int count) {
    for (long x = from; x < WINDOW; x++) {
      if (d.serverOf(x, count) == server) {
        return x;
      }
    }
    return WINDOW;
  }

  private static long brutePhysicalSize(Distribution d, long size, int server, int count) {
    long end = 0;
    for (long x = 0; x < size; x++) {
      if (d.serverOf(x, count) == server) {
        end = Math.max(end, d.logicalToPhysical(x, count) + 1);
      }
    }
    return end;
  }

  /** Appends byte {@code at}, joining it to the last run when it follows it. */
  private static void add(List<long[]> runs, long at) {
    if (!runs.isEmpty()) {
      long[] last = runs.get(runs.size() - 1);
      if (last[0] + last[1] == at) {
        last[1]++;
        return;
      }
    }
    runs.add(new long[] {at, 1});
  }

  private static List<Long> flat(List<long[]> runs) {
    List<Long> out = new ArrayList<>();
    for (long[] r : runs) {
      for (long i = 0; i < r[1]; i++) {
        out.add(r[0] + i);
      }
    }
    return out;
  }

  private static List<long[]> process(Request req, long disp, long aggregate, FileData fd, RequestProcessor.Mode mode) {
    RequestCursor cursor = RequestCursor.of(req, disp, aggregate);
    Segments segs = new Segments(64);
    List<long[]> out = new ArrayList<>();
    long at = 0;
    do {
      at = RequestProcessor.process(cursor, fd, 64, segs, at, Long.MAX_VALUE, mode);
      for (int i = 0; i < segs.count(); i++) {
        out.add(new long[] {segs.offset(i), segs.size(i)});
      }
    } while (at != RequestProcessor.DONE && segs.bytes() > 0);
    return out;
  }
}
