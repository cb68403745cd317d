package org.flowfs.common.request;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.flowfs.common.dist.Basic;
import org.flowfs.common.dist.Distribution;
import org.flowfs.common.dist.SimpleStripe;
import org.flowfs.common.request.RequestProcessor.Mode;
import org.junit.jupiter.api.Test;

class RequestProcessorTest {
  static final int SEGMAX = 32;
  static final long BYTEMAX = 250;

  /**
   * The seed's sample loop, {@code do_a_request}: SEGMAX 32, BYTEMAX 250, one server, a file of
   * 10,000,000 bytes. The request, 40,000 pairs of a struct {int32 at 0, double at 8, 3 x int16 at
   * 20} every 256 bytes, reaches past the end of the file, so the loop ends on EOF.
   */
  @Test
  void seedSampleLoop_matchesTheReference() {
    Request struct =
        Request.struct(
            new long[] {1, 1, 3},
            new long[] {0, 8, 20},
            Request.INT32,
            Request.DOUBLE,
            Request.INT16);
    Request req = Request.hvector(40_000, 2, 256, struct);
    Distribution dist = new SimpleStripe(SimpleStripe.DEFAULT_STRIP_SIZE);

    // do_a_request
    List<String> printed = new ArrayList<>();
    RequestCursor reqs = RequestCursor.of(req);
    FileData rfdata = new FileData(10_000_000, 0, 1, dist, false);
    Segments segs = new Segments(SEGMAX);
    long offset = 0;
    boolean eof;
    do {
      offset = RequestProcessor.process(reqs, rfdata, SEGMAX, segs, offset, BYTEMAX, Mode.SERVER);
      printed.add("processed " + segs.bytes() + " bytes in " + segs.count() + " segments");
      for (int i = 0; i < segs.count(); i++) {
        printed.add("segment " + i + ": offset=" + segs.offset(i) + " size=" + segs.size(i));
      }
      eof = segs.eof();
    } while (offset != -1);

    // the reference: the request's bytes written out by hand, cut at the end of the file
    List<Long> bytes = new ArrayList<>();
    for (long i = 0; i < 40_000; i++) {
      for (long j = 0; j < 2; j++) {
        long base = i * 256 + j * 26;
        addRange(bytes, base, 4);
        addRange(bytes, base + 8, 8);
        addRange(bytes, base + 20, 6);
      }
    }
    int cut = 0;
    while (cut < bytes.size() && bytes.get(cut) < 10_000_000) {
      cut++;
    }
    List<String> expected = chunk(bytes.subList(0, cut));
    assertTrue(cut < bytes.size());

    assertTrue(eof, "the request reaches past the end of the file");
    assertEquals(expected.size(), printed.size());
    assertEquals(expected, printed);
    assertEquals(0, reqs.seeks(), "every call resumed where the last one stopped");
    System.out.println(String.join("\n", printed.subList(0, 12)) + "\n...\n"
        + String.join("\n", printed.subList(printed.size() - 6, printed.size())));
  }

  private static void addRange(List<Long> out, long from, long n) {
    for (long k = 0; k < n; k++) {
      out.add(from + k);
    }
  }

  /**
   * The seed's output for a server holding {@code bytes} (physical = logical, one server): greedy
   * calls of at most BYTEMAX bytes and SEGMAX merged segments, the last one saying DONE.
   */
  private static List<String> chunk(List<Long> bytes) {
    List<String> out = new ArrayList<>();
    int i = 0;
    for (; ; ) {
      List<long[]> segs = new ArrayList<>();
      long n = 0;
      while (i < bytes.size() && n < BYTEMAX) {
        long o = bytes.get(i);
        long[] last = segs.isEmpty() ? null : segs.get(segs.size() - 1);
        if (last != null && last[0] + last[1] == o) {
          last[1]++;
        } else if (segs.size() == SEGMAX) {
          break;
        } else {
          segs.add(new long[] {o, 1});
        }
        n++;
        i++;
      }
      out.add("processed " + n + " bytes in " + segs.size() + " segments");
      for (int k = 0; k < segs.size(); k++) {
        out.add("segment " + k + ": offset=" + segs.get(k)[0] + " size=" + segs.get(k)[1]);
      }
      if (i == bytes.size()) {
        return out;
      }
    }
  }

  @Test
  void contiguousOverFourServers_oneMergedSegmentPerChunk() {
    long size = 64L << 20;
    Request req = Request.bytes(size);
    Distribution dist = new SimpleStripe(64 * 1024);
    Segments segs = new Segments(16);
    for (int s = 0; s < 4; s++) {
      RequestCursor c = RequestCursor.of(req);
      FileData fd = new FileData(size, s, 4, dist, false);
      long offset = 0;
      long physical = 0;
      int calls = 0;
      do {
        offset = RequestProcessor.process(c, fd, 16, segs, offset, 256 * 1024, Mode.SERVER);
        assertEquals(1, segs.count(), "four strips of a server touch in its datafile");
        assertEquals(physical, segs.offset(0));
        assertEquals(256 * 1024, segs.size(0));
        physical += segs.size(0);
        calls++;
      } while (offset != -1);
      assertEquals(size / 4 / (256 * 1024), calls);
      assertEquals(0, c.seeks());
    }
  }

  @Test
  void chunkByChunk_neverSearchesFromTheStart() {
    Request req = Request.vector(100_000, 8, 32, Request.BYTE);
    Distribution dist = new SimpleStripe(4096);
    Segments segs = new Segments(SEGMAX);
    long total = 0;
    for (int s = 0; s < 4; s++) {
      RequestCursor c = RequestCursor.of(req);
      FileData fd = new FileData(0, s, 4, dist, true);
      long offset = 0;
      do {
        offset = RequestProcessor.process(c, fd, SEGMAX, segs, offset, BYTEMAX, Mode.SERVER);
        total += segs.bytes();
      } while (offset != -1);
      assertEquals(0, c.seeks());
    }
    assertEquals(800_000, total);
  }

  @Test
  void readPastEof_stopsAtFsizeAndSaysSo() {
    Request req = Request.bytes(100);
    Segments segs = new Segments(4);
    FileData read = new FileData(50, 0, 1, new Basic(), false);
    long next = RequestProcessor.process(RequestCursor.of(req), read, 4, segs, 0, 1000, Mode.SERVER);
    assertEquals(RequestProcessor.DONE, next);
    assertEquals(50, segs.bytes());
    assertTrue(segs.eof());
    FileData write = new FileData(50, 0, 1, new Basic(), true);
    next = RequestProcessor.process(RequestCursor.of(req), write, 4, segs, 0, 1000, Mode.SERVER);
    assertEquals(RequestProcessor.DONE, next);
    assertEquals(100, segs.bytes());
    assertFalse(segs.eof());
    // ending exactly at the end of the file is not EOF
    FileData exact = new FileData(100, 0, 1, new Basic(), false);
    RequestProcessor.process(RequestCursor.of(req), exact, 4, segs, 0, 1000, Mode.SERVER);
    assertFalse(segs.eof());
  }

  @Test
  void cksize_countsWithoutMoving() {
    Request req = Request.vector(10, 3, 5, Request.BYTE);
    RequestCursor c = RequestCursor.of(req, 1000, 30);
    FileData fd = new FileData(0, 0, 1, new Basic(), true);
    Segments segs = new Segments(2);
    long next = RequestProcessor.process(c, fd, 2, segs, 0, 100, Mode.SERVER);
    assertEquals(6, next, "two segments of 3 bytes; the third block would need a third segment");
    assertEquals(2, segs.count());
    segs.offsets()[0] = -7;
    long back = RequestProcessor.process(c, fd, 2, segs, next, 100, Mode.CKSIZE);
    assertEquals(next, back);
    assertEquals(24, segs.bytes());
    assertEquals(-7, segs.offsets()[0], "CKSIZE leaves the arrays alone");
    assertEquals(next, c.position());
    RequestProcessor.process(c, fd, 2, segs, next, 5, Mode.CKSIZE);
    assertEquals(5, segs.bytes());
  }

  @Test
  void serverWithoutData_isDoneAtOnce() {
    RequestCursor c = RequestCursor.of(Request.bytes(1 << 20));
    Segments segs = new Segments(4);
    FileData fd = new FileData(1 << 20, 2, 4, new Basic(), false);
    assertEquals(
        RequestProcessor.DONE, RequestProcessor.process(c, fd, 4, segs, 0, 1000, Mode.SERVER));
    assertEquals(0, segs.bytes());
    // and after DONE, DONE again
    assertEquals(
        RequestProcessor.DONE,
        RequestProcessor.process(c, fd, 4, segs, RequestProcessor.DONE, 1000, Mode.SERVER));
  }

  @Test
  void clientMode_offsetsAreBufferPositions() {
    // 4 strips of 10 bytes over 2 servers, request of 40 bytes at file offset 5
    RequestCursor c = RequestCursor.of(Request.bytes(40), 5, 40);
    FileData fd = new FileData(1000, 1, 2, new SimpleStripe(10), false);
    Segments segs = new Segments(8);
    long next = RequestProcessor.process(c, fd, 8, segs, 0, 1000, Mode.CLIENT);
    assertEquals(RequestProcessor.DONE, next);
    // file bytes 10..19 and 30..39 are server 1's: buffer positions 5..14 and 25..34
    assertEquals("Segments[5+10, 25+10; 20 bytes]", segs.toString());
    RequestProcessor.process(
        RequestCursor.of(Request.bytes(40), 5, 40), fd, 8, segs, 0, 1000, Mode.SERVER);
    assertEquals("Segments[0+20; 20 bytes]", segs.toString());
  }

  @Test
  void badArguments_areRejected() {
    RequestCursor c = RequestCursor.of(Request.bytes(10));
    FileData fd = new FileData(10, 0, 1, new Basic(), false);
    Segments segs = new Segments(2);
    assertThrows(
        IllegalArgumentException.class,
        () -> RequestProcessor.process(c, fd, 3, segs, 0, 10, Mode.SERVER));
    assertThrows(
        IllegalArgumentException.class,
        () -> RequestProcessor.process(c, fd, 2, segs, -5, 10, Mode.SERVER));
    assertThrows(
        IllegalArgumentException.class,
        () -> RequestProcessor.process(c, fd, 2, segs, 11, 10, Mode.SERVER));
    assertThrows(
        IllegalArgumentException.class,
        () -> RequestProcessor.process(c, fd, 2, segs, 0, -1, Mode.SERVER));
    RequestCursor negative = RequestCursor.of(Request.bytes(10), -3, 10);
    assertThrows(
        IllegalArgumentException.class,
        () -> RequestProcessor.process(negative, fd, 2, segs, 0, 10, Mode.SERVER));
    assertThrows(IllegalArgumentException.class, () -> new FileData(10, 1, 1, new Basic(), false));
  }

  @Test
  void emptyStream_isDoneAtOnce() {
    RequestCursor c = RequestCursor.of(Request.bytes(10), 0, 0);
    Segments segs = new Segments(2);
    FileData fd = new FileData(10, 0, 1, new Basic(), false);
    assertEquals(
        RequestProcessor.DONE, RequestProcessor.process(c, fd, 2, segs, 0, 10, Mode.SERVER));
    assertEquals(
        RequestProcessor.DONE, RequestProcessor.processMemory(c, 2, segs, 0, 10));
  }

  @Test
  void memoryPass_gathersFromAStridedBuffer() {
    // a column of a 4x4 matrix of doubles, three times over (tiled by the matrix row's extent)
    Request column = Request.resized(0, 8, Request.vector(4, 1, 4, Request.DOUBLE));
    RequestCursor mem = RequestCursor.of(column, 0, 3 * 32);
    Segments segs = new Segments(16);
    long next = RequestProcessor.processMemory(mem, 16, segs, 0, 40);
    assertEquals(40, next);
    assertEquals("Segments[0+8, 32+8, 64+8, 96+8, 8+8; 40 bytes]", segs.toString());
    next = RequestProcessor.processMemory(mem, 16, segs, next, 1000);
    assertEquals(RequestProcessor.DONE, next);
    assertEquals(56, segs.bytes());
  }

  /**
   * What a hostile flow request once made an I/O server do for ever: count its bytes of a request
   * tiled far out in a file whose strips are as large as the offsets (the next strip of the
   * server wrapped round to a negative offset). Now the count ends, with the bytes it has.
   */
  @Test
  @org.junit.jupiter.api.Timeout(10)
  void countingBytes_withStripsAsLargeAsTheOffsets_ends() {
    Request r = Request.hindexed(new long[] {3, 8}, new long[] {0, 4999}, Request.BYTE);
    for (long strip : new long[] {1L << 62, Long.MAX_VALUE}) {
      for (int server = 0; server < 4; server++) {
        FileData fd = new FileData(87789, server, 4, new SimpleStripe(strip), true);
        Segments segs = new Segments(1);
        RequestProcessor.process(RequestCursor.of(r, 1L << 62, 142962), fd, 0, segs, 0, Long.MAX_VALUE, Mode.CKSIZE);
        long expect = strip == Long.MAX_VALUE ? (server == 0 ? 142962 : 0) : (server == 1 ? 142962 : 0);
        assertEquals(expect, segs.bytes(), "strip " + strip + ", server " + server);
      }
    }
  }

  /** A distribution whose answers contradict each other is an error, never an endless loop. */
  @Test
  @org.junit.jupiter.api.Timeout(10)
  void aDistributionThatNamesNoLaterOffset_isAnError() {
    SimpleStripe s = new SimpleStripe(100);
    Distribution backwards = new Distribution() {
      public String name() {
        return "backwards";
      }

      public org.flowfs.common.DistSpec spec() {
        return org.flowfs.common.DistSpec.of(name());
      }

      public int serverOf(long logical, int n) {
        return s.serverOf(logical, n);
      }

      public long logicalToPhysical(long logical, int n) {
        return s.logicalToPhysical(logical, n);
      }

      public long physicalToLogical(int server, long physical, int n) {
        return s.physicalToLogical(server, physical, n);
      }

      public long contiguousLength(long logical, int n) {
        return s.contiguousLength(logical, n);
      }

      public long nextMappedOffset(long logical, int server, int n) {
        return 0; // wrong: behind every offset another server holds
      }

      public long physicalSize(long logicalSize, int server, int n) {
        return s.physicalSize(logicalSize, server, n);
      }
    };
    FileData fd = new FileData(10_000, 1, 2, backwards, false);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RequestProcessor.process(
        RequestCursor.of(Request.contiguous(1000, Request.BYTE)), fd, 0, new Segments(1), 0, Long.MAX_VALUE, Mode.CKSIZE));
    assertTrue(e.getMessage().contains("backwards"), e.getMessage());
  }

  @Test
  void fileData_ofMoreServersThanALayoutHas_isRefused() {
    Distribution d = new SimpleStripe(100);
    new FileData(0, 1023, org.flowfs.common.Layout.MAX_DATAFILES, d, true);
    assertThrows(IllegalArgumentException.class, () -> new FileData(0, 1, Integer.MAX_VALUE, d, true));
    assertThrows(IllegalArgumentException.class, () -> new FileData(0, 0, org.flowfs.common.Layout.MAX_DATAFILES + 1, d, true));
  }
}
