package org.flowfs.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Layout;

/**
 * Buffers one file's writes and sends them in large pieces: the kernel's 128 KiB writes that
 * follow each other fill one buffer of {@code capacity} bytes, which then goes to all the file's
 * servers at once while the next one fills. A write that does not follow the buffered bytes sends
 * them first. A buffer that overlaps one still in flight waits for it, so a later write never
 * overtakes an earlier one.
 *
 * <p>What is out is bounded by bytes, {@link #BUFFERS_IN_FLIGHT} buffers' worth, and by count,
 * {@link #MAX_IN_FLIGHT} sends: a sequential stream keeps two full buffers out, random small
 * writes up to {@link #MAX_IN_FLIGHT}, so a random writer waits for a server only once that many
 * are out. A write that does not continue the last one (a file's first write too) starts a buffer
 * of its own size, which grows by doubling as writes follow it, up to {@link #GROWS_TO} bytes, and
 * moves into one of the full capacity past that: a small file, written in one call or in several,
 * takes a buffer of about its size, and a stream copies at most {@link #GROWS_TO} bytes twice.
 *
 * <p>A failed send is reported by the next write, {@link #flush()} or close, as NFS does. The
 * owner ({@link FileState}) serializes calls.
 */
final class WriteBehind {
  /** Most sends out at once. */
  static final int MAX_IN_FLIGHT = 16;
  /** Most bytes out at once, in buffers of the capacity. */
  static final int BUFFERS_IN_FLIGHT = 2;
  /** A buffer started by a write that does not continue the last grows by doubling up to this size. */
  static final int GROWS_TO = 1 << 20;

  private final DataPath path;
  private final Layout layout;
  private final int capacity;
  private final Duration timeout;
  private final ByteBufAllocator alloc;
  private final List<Sent> inFlight = new ArrayList<>();
  private ByteBuf buffer;
  private long bufferStart;
  /** End of the last write (-1 before the first): a write starting there continues a stream. */
  private long lastEnd = -1;
  private volatile Throwable failure;

  private record Sent(long start, long end, CompletableFuture<Void> done) {}

  WriteBehind(DataPath path, Layout layout, int capacity, Duration timeout, ByteBufAllocator alloc) {
    this.path = path;
    this.layout = layout;
    this.capacity = capacity;
    this.timeout = timeout;
    this.alloc = alloc;
  }

  /** Buffers (or sends) a copy of {@code src}'s readable bytes; {@code src} stays the caller's. */
  void write(long offset, ByteBuf src) {
    rethrow();
    int len = src.readableBytes();
    if (buffer != null && (offset != bufferStart + buffer.readableBytes() || buffer.readableBytes() + len > capacity)) {
      send();
    }
    boolean streaming = offset == lastEnd;
    lastEnd = offset + len;
    if (len >= capacity) {
      ByteBuf copy = alloc.directBuffer(len);
      copy.writeBytes(src, src.readerIndex(), len);
      dispatch(offset, copy);
      return;
    }
    if (buffer == null) {
      buffer = streaming ? alloc.directBuffer(capacity) : alloc.directBuffer(len, capacity);
      bufferStart = offset;
    } else if (buffer.writableBytes() < len && buffer.readableBytes() + len > GROWS_TO) {
      // a stream after all: on into a buffer of the full capacity (one copy of what is there)
      ByteBuf full = alloc.directBuffer(capacity);
      full.writeBytes(buffer);
      buffer.release();
      buffer = full;
    }
    // below GROWS_TO, a buffer grows as writes follow (to the next power of two, copying what it
    // holds): a small file takes a buffer of about its size
    buffer.writeBytes(src, src.readerIndex(), len);
    if (buffer.readableBytes() >= capacity) {
      send();
    }
  }

  boolean isDirty() {
    return buffer != null || !inFlight.isEmpty();
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
    if (buffer != null) {
      buffer.release();
      buffer = null;
    }
  }

  private void send() {
    if (buffer == null) {
      return;
    }
    ByteBuf b = buffer;
    buffer = null;
    dispatch(bufferStart, b);
  }

  private void dispatch(long offset, ByteBuf data) {
    long end = offset + data.readableBytes();
    for (Sent s : new ArrayList<>(inFlight)) {
      if (s.start < end && offset < s.end) {
        await(s); // overlapping: keep the order of writes
      }
    }
    while (inFlight.size() >= MAX_IN_FLIGHT
        || !inFlight.isEmpty() && inFlightBytes() + (end - offset) > (long) BUFFERS_IN_FLIGHT * capacity) {
      await(inFlight.get(0));
    }
    inFlight.add(new Sent(offset, end, path.write(layout, offset, data)));
  }

  /** Bytes of the sends out (at most {@link #MAX_IN_FLIGHT} of them). */
  private long inFlightBytes() {
    long n = 0;
    for (Sent s : inFlight) {
      n += s.end - s.start;
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
