package org.flowfs.client.api;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.CompletableFuture;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.common.request.Request;
import org.flowfs.common.request.RequestCursor;
import org.flowfs.common.request.RequestProcessor;
import org.flowfs.common.request.Segments;

/**
 * Data sieving for independent reads (ROMIO's {@code romio_ds_read}): instead of asking the I/O
 * servers for every small piece of a noncontiguous view, read the file range the pieces span in
 * contiguous windows of at most {@code ind_rd_buffer_size} bytes (each one transfer, one flow per
 * server; two windows in flight) and pick the pieces out here. It moves more bytes but far fewer
 * pieces: worth it for views of many small pieces close together, where the servers' cost per
 * piece dominates. Each window starts at a data byte of the view, so large gaps are skipped. The
 * pieces are found by the request processor, as for any transfer. Blocks the calling thread.
 */
final class Sieve {
  private static final int SEGMAX = 1024;
  private static final int DEPTH = 2;

  private Sieve() {}

  /** A window: file bytes [lo, hi) holding stream bytes [from, to) of the view. */
  private record Window(long lo, long hi, long from, long to, ByteBuf buf, CompletableFuture<Long> got) {}

  /**
   * Reads stream bytes {@code at .. at + bytes - 1} of the view into {@code stream} (from its
   * index 0); returns how many arrived (a prefix: fewer at the end of the file).
   */
  static long read(FileSystemClient client, OpenFile file, ViewState v, long at, long bytes, ByteBuf stream,
      long window, ByteBufAllocator alloc) {
    long end = at + bytes;
    long last = v.fileOffset(end - 1) + 1;
    Deque<Window> inflight = new ArrayDeque<>();
    long next = at;
    long valid = bytes;
    try {
      while (next < end || !inflight.isEmpty()) {
        while (next < end && inflight.size() < DEPTH) {
          long lo = v.fileOffset(next);
          long hi = Math.min(last, lo + window);
          long to = Math.min(end, v.streamBytesBefore(hi));
          int size = (int) (hi - lo);
          ByteBuf buf = alloc.directBuffer(size, size);
          buf.setZero(0, size);
          CompletableFuture<Long> got;
          try {
            got = client.readAsync(file, Request.bytes(size), lo, size, buf, null);
          } catch (RuntimeException e) {
            buf.release();
            throw e;
          }
          inflight.add(new Window(lo, hi, next, to, buf, got));
          next = to;
        }
        Window w = inflight.poll();
        try {
          long got = Futures.join(w.got());
          copy(v, w, stream, at);
          if (got < w.hi() - w.lo()) {
            long arrived = Math.max(w.from(), Math.min(w.to(), v.streamBytesBefore(w.lo() + got)));
            valid = Math.min(valid, arrived - at);
          }
        } finally {
          w.buf().release();
        }
      }
    } finally {
      for (Window w : inflight) {
        w.got().exceptionally(e -> 0L).join();
        w.buf().release();
      }
    }
    return valid;
  }

  /** Picks the window's stream bytes out of its buffer into the stream buffer. */
  private static void copy(ViewState v, Window w, ByteBuf stream, long at) {
    long n = w.to() - w.from();
    Slices.Placed p = v.slice(w.from(), n);
    RequestCursor cur = RequestCursor.of(p.request(), p.displacement(), n);
    Segments segs = new Segments(SEGMAX);
    long pos = 0;
    while (pos < n) {
      RequestProcessor.processMemory(cur, SEGMAX, segs, pos, n - pos);
      for (int i = 0; i < segs.count(); i++) {
        stream.setBytes((int) (w.from() - at + pos), w.buf(), (int) (segs.offset(i) - w.lo()), (int) segs.size(i));
        pos += segs.size(i);
      }
    }
  }
}
