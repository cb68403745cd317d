package org.flowfs.common.request;

import java.util.Objects;

/**
 * Turns a request into segments, a chunk at a time (seed 003's {@code PINT_Process_request}).
 *
 * <p>The file side, {@link #process}: given a {@link RequestCursor} over a file request tiled from
 * its displacement, the {@link FileData} of the file and of one server, {@code segmax}, {@code
 * bytemax} and a start offset, it fills at most {@code segmax} segments covering at most {@code
 * bytemax} of that server's bytes, starting at the start offset, and returns the offset to start
 * the next call at, or {@link #DONE} (-1) once the request is done. The seed's loop:
 *
 * <pre>{@code
 * RequestCursor reqs = RequestCursor.of(req, fileReqOffset, aggregateSize);
 * Segments segs = new Segments(SEGMAX);
 * long offset = 0;
 * do {
 *   offset = RequestProcessor.process(reqs, fileData, SEGMAX, segs, offset, BYTEMAX, Mode.SERVER);
 *   for (int i = 0; i < segs.count(); i++) { ... segs.offset(i), segs.size(i) ... }
 * } while (offset != RequestProcessor.DONE);
 * }</pre>
 *
 * <p>Offsets are positions in the request's data stream (see {@link RequestCursor}): the start
 * offset of a chunk is the number of request bytes (of all servers) before it, which is also where
 * it starts in a contiguous client buffer. Passing back the offset the last call returned resumes
 * where it stopped at no cost; any other offset in {@code [0, aggregateSize]} is found by a search
 * and also works, for retries.
 *
 * <p>Semantics shared by all modes:
 *
 * <ul>
 *   <li>Segments are in request order, never empty, and touching segments are merged within a
 *       call, so a call stops early only when the next byte would need segment {@code segmax+1}.
 *   <li>With {@code extendFlag} off, processing stops at the first request byte (in request order)
 *       at or past {@code fsize}: nothing at or past it is produced, the call returns {@link
 *       #DONE} and reports EOF ({@link Segments#eof()}). What is processed is thus always a prefix
 *       of the request's data stream, the same prefix for every server. With {@code extendFlag}
 *       on, {@code fsize} is ignored.
 *   <li>A call also returns {@link #DONE} when the request has no more bytes for this server
 *       before its end; EOF is then reported if the request's last byte is at or past {@code
 *       fsize}. The call that produces a server's last bytes returns {@link #DONE} when it can
 *       tell cheaply (always when the end of the request or of the file comes next); otherwise
 *       one more call produces nothing and returns it.
 * </ul>
 *
 * <p>For a monotone file request (offsets increasing in request order, as MPI-IO requires of
 * filetypes) the processor jumps over other servers' bytes using {@link
 * org.flowfs.common.dist.Distribution#nextMappedOffset}, so a server pays only for its own
 * segments; other requests are walked block by block.
 *
 * <p>Stateless and thread safe; all state is in the cursor and the {@link Segments}, which belong
 * to the calling flow. Allocates nothing per call (CKSIZE allocates once per cursor).
 */
public final class RequestProcessor {
  /** The start offset returned once a request is done (the seed's loop ends on it). */
  public static final long DONE = -1;

  /** What offsets a call produces. */
  public enum Mode {
    /**
     * Positions in the contiguous client buffer holding the request's data stream, of the bytes
     * that go to or come from this server.
     */
    CLIENT,
    /** Offsets in this server's datafile, as the distribution maps them. */
    SERVER,
    /**
     * Count this server's bytes left in the request from the start offset, up to {@code bytemax}
     * ({@code segmax} is no limit here), without moving the cursor or writing the arrays; the count
     * is {@link Segments#bytes()} and the start offset is returned unchanged.
     */
    CKSIZE
  }

  private RequestProcessor() {}

  /**
   * Processes the next chunk of a file request for one server.
   *
   * @param req the request state, positioned anywhere
   * @param fileData the file and the server the segments are for
   * @param segmax the most segments to fill, {@code 0 <= segmax <= out.capacity()}
   * @param out receives the segments, their count, the bytes processed and the EOF flag
   * @param startOffset where to start in the request's data stream, or {@link #DONE}
   * @param bytemax the most bytes of this server to process, {@code >= 0}
   * @param mode CLIENT, SERVER or CKSIZE
   * @return the start offset for the next call, or {@link #DONE} once the request is done (in
   *     CKSIZE mode, {@code startOffset})
   * @throws IllegalArgumentException if the request reaches a negative file offset or an argument
   *     is out of range
   */
  public static long process(
      RequestCursor req,
      FileData fileData,
      int segmax,
      Segments out,
      long startOffset,
      long bytemax,
      Mode mode) {
    Objects.requireNonNull(fileData, "fileData");
    Objects.requireNonNull(mode, "mode");
    checkLimits(segmax, out, bytemax);
    return req.processFile(
        fileData,
        segmax,
        bytemax,
        startOffset,
        out,
        mode == Mode.SERVER,
        mode == Mode.CKSIZE);
  }

  /**
   * The memory side: maps the bytes {@code startOffset ..} of a data stream onto the memory layout
   * described by {@code mem} (a cursor over a memory request tiled from its displacement, usually
   * 0), so a flow can gather from or scatter into a noncontiguous buffer. Fills at most {@code
   * segmax} (buffer offset, length) pieces covering at most {@code bytemax} bytes, in stream order,
   * touching pieces merged. Offsets are relative to the buffer's origin and may be negative if the
   * memory request has negative displacements.
   *
   * @return the start offset for the next call, or {@link #DONE} at the end of the stream
   */
  public static long processMemory(
      RequestCursor mem, int segmax, Segments out, long startOffset, long bytemax) {
    checkLimits(segmax, out, bytemax);
    return mem.processMemory(segmax, bytemax, startOffset, out);
  }

  private static void checkLimits(int segmax, Segments out, long bytemax) {
    if (segmax < 0 || segmax > out.capacity()) {
      throw new IllegalArgumentException(
          "segmax " + segmax + " outside [0, " + out.capacity() + "]");
    }
    if (bytemax < 0) {
      throw new IllegalArgumentException("bytemax must not be negative: " + bytemax);
    }
  }
}
