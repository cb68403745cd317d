package org.flowfs.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Layout;

/**
 * Buffers one file's writes and sends them in large pieces: the kernel's writes (up to 1 MiB
 * each) that follow each other fill one buffer of {@code capacity} bytes, which then goes to all
 * the file's servers at once while the next one fills. A buffer that overlaps one still in flight
 * waits for it, so a later write never overtakes an earlier one.
 *
 * <p>Small writes that do not follow each other (a random writer's, or a database's pages) gather:
 * up to {@link #MAX_REGIONS} regions or {@link #GATHER_BYTES} bytes go out together as one
 * noncontiguous write, a flow per server whose file request lists the regions, instead of a
 * message (and a server's storage task, and an answer) per write. A write that overlaps a region
 * already gathered sends the gathered ones first, so the order of writes holds.
 *
 * <p>What is out is bounded by bytes, {@link #BUFFERS_IN_FLIGHT} buffers' worth, and by count,
 * {@link #MAX_IN_FLIGHT} sends. A write that does not continue the last one (a file's first write too) starts a buffer
 * of its own size, which grows by doubling as writes follow it, up to {@link #GROWS_TO} bytes; past
 * that the buffer goes on in pieces of {@link #GROWS_TO} bytes, sent together as one composite
 * buffer: a small file, written in one call or in several, takes a buffer of about its size, and a
 * stream copies every byte once, into pieces the allocator keeps for reuse ({@link PieceAllocator}).
 * (A buffer of the full capacity, 8 MiB, is larger than the pool's chunks: it was allocated anew
 * for every send, and its first touch cost a page fault every 4 KiB.)
 *
 * <p>A send that a write starts (the buffer filled up) is handed to the client's {@code sender}
 * thread, which sets up its flows while the writer goes on: setting up the flows of a gathered
 * send to four servers cost the writer ~250 us, once every 128 random writes, which made the p99
 * of a random writer's latency. The order of writes holds as before: a send waits, on the
 * writer's thread, for the sends out whose regions overlap its own, and the sender takes sends in
 * the order they were handed to it. A send that {@link #send()} or {@link #flush()} starts (a
 * close, an fsync, a read of the file) is set up on the caller's thread, which waits for it anyway.
 *
 * <p>A failed send is reported by the next write, {@link #flush()} or close, as NFS does. The
 * owner ({@link FileState}) serializes calls.
 */
final class WriteBehind {
  /** Most sends out at once. */
  static final int MAX_IN_FLIGHT = 16;
  /** Most bytes out at once, in buffers of the capacity. */
  static final int BUFFERS_IN_FLIGHT = 2;
  /**
   * A buffer started by a write that does not continue the last grows by doubling up to this size;
   * past it, a buffer is a list of pieces of this size.
   */
  static final int GROWS_TO = PieceAllocator.PIECE;
  /** Most regions a buffer gathers from writes that do not follow each other. */
  static final int MAX_REGIONS = 128;
  /** A buffer of more than one region is sent once it holds this many bytes. */
  static final int GATHER_BYTES = 512 * 1024;

  private final DataPath path;
  private final Layout layout;
  private final int capacity;
  private final Duration timeout;
  private final ByteBufAllocator alloc;
  private final Executor sender;
  private final List<Sent> inFlight = new ArrayList<>();
  /** The buffer's full pieces, in order, before {@link #piece}. */
  private final List<ByteBuf> filled = new ArrayList<>();
  private int filledBytes;
  /** The buffer's piece being filled; null when nothing is buffered. */
  private ByteBuf piece;
  /** The buffer's regions, in the order written (their bytes follow each other in the buffer). */
  private final long[] regionStart = new long[MAX_REGIONS];
  private final int[] regionLength = new int[MAX_REGIONS];
  private int regions;
  /** End of the last write (-1 before the first): a write starting there continues a stream. */
  private long lastEnd = -1;
  private volatile Throwable failure;

  /** A send: its regions' starts and ends, ascending and disjoint, and how it ends. */
  private record Sent(long[] starts, long[] ends, long bytes, CompletableFuture<Void> done) {
    boolean overlaps(long[] s2, long[] e2) {
      int i = 0;
      int j = 0;
      while (i < starts.length && j < s2.length) {
        if (starts[i] < e2[j] && s2[j] < ends[i]) {
          return true;
        }
        if (ends[i] <= e2[j]) {
          i++;
        } else {
          j++;
        }
      }
      return false;
    }
  }

  /** Sends set up on the caller's thread. */
  WriteBehind(DataPath path, Layout layout, int capacity, Duration timeout, ByteBufAllocator alloc) {
    this(path, layout, capacity, timeout, alloc, Runnable::run);
  }

  /** Sends a write starts set up by {@code sender}, which runs tasks in the order given. */
  WriteBehind(DataPath path, Layout layout, int capacity, Duration timeout, ByteBufAllocator alloc, Executor sender) {
    this.path = path;
    this.layout = layout;
    this.capacity = capacity;
    this.timeout = timeout;
    this.alloc = alloc;
    this.sender = sender;
  }

  /** Buffers (or sends) a copy of {@code src}'s readable bytes; {@code src} stays the caller's. */
  void write(long offset, ByteBuf src) {
    rethrow();
    int len = src.readableBytes();
    if (piece != null && !joins(offset, len)) {
      send(sender);
    }
    boolean streaming = offset == lastEnd;
    lastEnd = offset + len;
    if (len >= capacity) {
      ByteBuf copy = PieceAllocator.buffer(alloc, len); // in kept pieces, not a new buffer of its size
      copy.writeBytes(src, src.readerIndex(), len);
      dispatch(new long[] {offset}, new long[] {offset + len}, copy, sender);
      return;
    }
    int pieceSize = Math.min(capacity, GROWS_TO);
    if (piece == null) {
      // a small file takes a buffer of its size, growing (by doubling, copying what it holds) as
      // writes follow it; a stream starts with a whole piece
      piece = streaming ? alloc.directBuffer(pieceSize, pieceSize) : alloc.directBuffer(Math.min(len, pieceSize), pieceSize);
      regions = 0;
    }
    if (regions > 0 && offset == regionStart[regions - 1] + regionLength[regions - 1]) {
      regionLength[regions - 1] += len;
    } else {
      regionStart[regions] = offset;
      regionLength[regions] = len;
      regions++;
    }
    int from = src.readerIndex();
    int left = len;
    while (left > 0) {
      if (piece.writerIndex() == pieceSize) {
        filled.add(piece);
        filledBytes += pieceSize;
        piece = alloc.directBuffer(pieceSize, pieceSize);
      }
      int n = Math.min(left, pieceSize - piece.writerIndex());
      piece.writeBytes(src, from, n);
      from += n;
      left -= n;
    }
    if (buffered() >= capacity || regions > 1 && (regions == MAX_REGIONS || buffered() >= GATHER_BYTES)) {
      send(sender);
    }
  }

  /**
   * Whether a write of {@code len} bytes at {@code offset} joins the buffer: it fits, it overlaps
   * no region gathered (a write that continues the last region may reach into another), and it
   * continues the last region or is a small write and there is a region left for it.
   */
  private boolean joins(long offset, int len) {
    if (buffered() + len > capacity) {
      return false;
    }
    boolean continues = offset == regionStart[regions - 1] + regionLength[regions - 1];
    if (!continues && (len >= GATHER_BYTES || regions == MAX_REGIONS)) {
      return false;
    }
    for (int i = 0; i < regions; i++) {
      if (regionStart[i] < offset + len && offset < regionStart[i] + regionLength[i]) {
        return false;
      }
    }
    return true;
  }

  /** Bytes buffered and not yet sent. */
  private int buffered() {
    return piece == null ? 0 : filledBytes + piece.readableBytes();
  }

  boolean isDirty() {
    return piece != null || !inFlight.isEmpty();
  }

  /** Sends what is buffered and waits until every send completed; throws the first failure. */
  void flush() {
    send();
    for (Sent s : new ArrayList<>(inFlight)) {
      await(s);
    }
    rethrow();
  }

  /** Drops buffered bytes (the file was truncated below them or is going away). */
  void discard() {
    if (piece != null) {
      filled.forEach(ByteBuf::release);
      filled.clear();
      filledBytes = 0;
      piece.release();
      piece = null;
    }
  }

  /** Sends what is buffered without waiting for it ({@link #flush()} waits). */
  void send() {
    send(Runnable::run);
  }

  /** The bytes of one region of the file, at {@code offset}, that {@link #takeWithin} took. */
  record Taken(long offset, ByteBuf data) {}

  /**
   * Takes what is buffered, for the caller to send itself, when it is one region that ends at or
   * below {@code limit} and no send is out (a small file's close sends its bytes with the size they
   * make); otherwise returns null and changes nothing. The caller owns {@link Taken#data()}.
   */
  Taken takeWithin(long limit) {
    if (piece == null || regions != 1 || !inFlight.isEmpty() || regionStart[0] + regionLength[0] > limit) {
      return null;
    }
    long offset = regionStart[0];
    regions = 0;
    return new Taken(offset, takeBuffer());
  }

  /**
   * {@link #takeWithin}, or, when what is buffered is one region that starts below {@code limit}
   * and ends above it, takes its bytes below {@code limit} and starts sending the rest (a file's
   * close sends the bytes of its head with the size they make, while the rest goes to the data
   * servers; {@link #flush} waits for it). Null, changing nothing, when there is no such region
   * or a send is out.
   */
  Taken takeBelow(long limit) {
    if (piece == null || regions != 1 || !inFlight.isEmpty() || regionStart[0] >= limit) {
      return null;
    }
    long start = regionStart[0];
    long end = start + regionLength[0];
    if (end <= limit) {
      return takeWithin(limit);
    }
    regions = 0;
    ByteBuf all = takeBuffer();
    int below = (int) (limit - start);
    ByteBuf head = all.retainedSlice(all.readerIndex(), below);
    ByteBuf rest = all.retainedSlice(all.readerIndex() + below, all.readableBytes() - below);
    all.release();
    dispatch(new long[] {limit}, new long[] {end}, rest, Runnable::run);
    return new Taken(start, head);
  }

  /** The buffered bytes as one buffer; nothing is buffered afterwards (the regions are the caller's to reset). */
  private ByteBuf takeBuffer() {
    ByteBuf b = piece;
    if (!filled.isEmpty()) {
      filled.add(piece);
      b = alloc.compositeDirectBuffer(filled.size()).addComponents(true, filled);
      filled.clear();
      filledBytes = 0;
    }
    piece = null;
    return b;
  }

  /** Sends what is buffered, set up by {@code by}. */
  private void send(Executor by) {
    if (piece == null) {
      return;
    }
    int n = regions;
    ByteBuf b = takeBuffer();
    regions = 0;
    if (n == 1) {
      dispatch(new long[] {regionStart[0]}, new long[] {regionStart[0] + regionLength[0]}, b, by);
      return;
    }
    // the regions in file order, their bytes as slices of the buffer in that order
    Integer[] order = new Integer[n];
    int[] at = new int[n];
    for (int i = 0; i < n; i++) {
      order[i] = i;
      at[i] = i == 0 ? 0 : at[i - 1] + regionLength[i - 1];
    }
    java.util.Arrays.sort(order, (x, y) -> Long.compare(regionStart[x], regionStart[y]));
    long[] starts = new long[n];
    long[] ends = new long[n];
    var data = alloc.compositeDirectBuffer(n);
    try {
      for (int k = 0; k < n; k++) {
        int i = order[k];
        starts[k] = regionStart[i];
        ends[k] = regionStart[i] + regionLength[i];
        data.addComponent(true, b.retainedSlice(at[i], regionLength[i]));
      }
    } finally {
      b.release();
    }
    dispatch(starts, ends, data, by);
  }

  /**
   * Sends {@code data}, the bytes of the regions {@code [starts[i], ends[i])} in order, its flows
   * set up by {@code by}; takes {@code data}.
   */
  private void dispatch(long[] starts, long[] ends, ByteBuf data, Executor by) {
    for (Sent s : new ArrayList<>(inFlight)) {
      if (s.overlaps(starts, ends)) {
        await(s); // overlapping: keep the order of writes
      }
    }
    long bytes = data.readableBytes();
    while (inFlight.size() >= MAX_IN_FLIGHT
        || !inFlight.isEmpty() && inFlightBytes() + bytes > (long) BUFFERS_IN_FLIGHT * capacity) {
      await(inFlight.get(0));
    }
    CompletableFuture<Void> done;
    try {
      done = CompletableFuture.supplyAsync(() -> write(starts, ends, data), by).thenCompose(w -> w);
    } catch (RejectedExecutionException e) {
      data.release(); // the client is closing: nothing will send it
      done = CompletableFuture.failedFuture(new FsException(Errno.EIO, "write-behind: the client is closed"));
    }
    inFlight.add(new Sent(starts, ends, bytes, done));
  }

  /** Starts writing {@code data} to the regions: the data path takes it. */
  private CompletableFuture<Void> write(long[] starts, long[] ends, ByteBuf data) {
    if (starts.length == 1) {
      return path.write(layout, starts[0], data);
    }
    long[] lengths = new long[starts.length];
    for (int i = 0; i < lengths.length; i++) {
      lengths[i] = ends[i] - starts[i];
    }
    return path.write(layout, starts, lengths, data);
  }

  /** Bytes of the sends out (at most {@link #MAX_IN_FLIGHT} of them). */
  private long inFlightBytes() {
    long n = 0;
    for (Sent s : inFlight) {
      n += s.bytes;
    }
    return n;
  }

  private void await(Sent s) {
    try {
      Await.get(s.done, timeout);
    } catch (FsException e) {
      if (failure == null) {
        failure = e;
      }
    } finally {
      inFlight.remove(s);
    }
  }

  /**
   * Throws the first failure of a send awaited or found failed since the last report, once: a
   * failed send leaves the in-flight list when it is recorded, here or in {@link #await}, and only
   * the caller's thread records, so nothing can report a failure a second time.
   */
  private void rethrow() {
    for (java.util.Iterator<Sent> it = inFlight.iterator(); it.hasNext(); ) {
      Sent s = it.next();
      if (s.done.isCompletedExceptionally()) {
        it.remove();
        if (failure == null) {
          failure = s.done.handle((v, t) -> t).join();
        }
      }
    }
    Throwable f = failure;
    if (f != null) {
      failure = null;
      Throwable c = Errno.unwrap(f);
      throw c instanceof FsException fe ? new FsException(fe.errno(), "an earlier write failed: " + fe.getMessage(), fe)
          : new FsException(Errno.EIO, "an earlier write failed: " + c);
    }
  }
}
