package org.flowfs.client;

import java.util.ArrayList;
import java.util.List;
import org.flowfs.common.dist.Basic;
import org.flowfs.common.dist.PastHead;
import org.flowfs.common.request.FileData;
import org.flowfs.common.request.Request;
import org.flowfs.common.request.RequestCursor;
import org.flowfs.common.request.RequestProcessor;
import org.flowfs.common.request.Segments;

/**
 * The bytes of a typed request (a file request tiled from a displacement, a memory request) that
 * fall in a file's head: which file offsets, at which memory offsets. The request processor finds
 * them, with the head as the extra server of {@link PastHead} over a one-server file, so a monotone
 * request far from the head costs nothing.
 */
final class HeadPieces {
  private static final int SEGMAX = 1024;

  /** {@code length} bytes at file offset {@code file} and memory offset {@code mem}. */
  record Piece(long file, long mem, int length) {}

  private HeadPieces() {}

  /**
   * The head's bytes among the first {@code aggregate} bytes of {@code fileReq} tiled from {@code
   * displacement}, in request order, with their places in memory laid out by {@code memReq} (null:
   * contiguous from index 0). A read ({@code write} false) stops at {@code fsize} as its flows do.
   */
  static List<Piece> of(Request fileReq, long displacement, long aggregate, Request memReq, long head, long fsize,
      boolean write) {
    FileData fd = new FileData(fsize, 1, 2, new PastHead(new Basic(), head), write); // server 1: the head
    List<long[]> stream = segments(fileReq, displacement, aggregate, fd, RequestProcessor.Mode.CLIENT);
    if (stream.isEmpty()) {
      return List.of();
    }
    List<long[]> file = segments(fileReq, displacement, aggregate, fd, RequestProcessor.Mode.SERVER);
    List<long[]> mem = memReq == null ? stream : inMemory(stream, memReq, aggregate);
    // the three lists cover the same bytes in the same order, cut differently: cut them alike
    List<Piece> out = new ArrayList<>();
    int f = 0;
    int m = 0;
    long fDone = 0;
    long mDone = 0;
    while (f < file.size() && m < mem.size()) {
      long n = Math.min(file.get(f)[1] - fDone, mem.get(m)[1] - mDone);
      out.add(new Piece(file.get(f)[0] + fDone, mem.get(m)[0] + mDone, (int) n));
      fDone += n;
      mDone += n;
      if (fDone == file.get(f)[1]) {
        f++;
        fDone = 0;
      }
      if (mDone == mem.get(m)[1]) {
        m++;
        mDone = 0;
      }
    }
    return out;
  }

  private static List<long[]> segments(Request req, long displacement, long aggregate, FileData fd,
      RequestProcessor.Mode mode) {
    RequestCursor cursor = RequestCursor.of(req, displacement, aggregate);
    Segments segs = new Segments(SEGMAX);
    List<long[]> out = new ArrayList<>();
    long at = 0;
    do {
      at = RequestProcessor.process(cursor, fd, SEGMAX, segs, at, Long.MAX_VALUE, mode);
      for (int i = 0; i < segs.count(); i++) {
        out.add(new long[] {segs.offset(i), segs.size(i)});
      }
    } while (at != RequestProcessor.DONE && segs.bytes() > 0);
    return out;
  }

  /** The memory pieces of the stream segments {@code stream}, in order. */
  private static List<long[]> inMemory(List<long[]> stream, Request memReq, long aggregate) {
    RequestCursor cursor = RequestCursor.of(memReq, 0, aggregate);
    Segments segs = new Segments(SEGMAX);
    List<long[]> out = new ArrayList<>();
    for (long[] s : stream) {
      long at = s[0];
      long end = s[0] + s[1];
      while (at < end) {
        long next = RequestProcessor.processMemory(cursor, SEGMAX, segs, at, end - at);
        for (int i = 0; i < segs.count(); i++) {
          out.add(new long[] {segs.offset(i), segs.size(i)});
        }
        at += segs.bytes();
        if (segs.bytes() == 0 || next == RequestProcessor.DONE) {
          break;
        }
      }
    }
    return out;
  }
}
