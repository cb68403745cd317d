package org.flowfs.common.wire;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.RecvByteBufAllocator.DelegatingHandle;
import io.netty.util.UncheckedBooleanSupplier;

/**
 * Where one connection's socket reads land, so that a large payload arrives in memory the way the
 * storage writes it: in one run, each byte at an address congruent to its place in the payload
 * modulo the page size. The I/O server's direct writes ({@code O_DIRECT}) then go from the
 * network's buffers themselves; otherwise every byte is copied into an aligned staging buffer
 * first (perf, four {@code dd} writers on one machine: that copy was half of the storage threads'
 * time, 12% of all CPU).
 *
 * <p>Per connection, as its receive allocator ({@link RecvByteBufAllocator}); the connection's
 * {@link FrameDecoder} drives it from the event loop: when a frame whose payload is to be placed
 * has begun and its header is in, {@link #expect} says how many payload bytes are still to come
 * and where in the page the next one belongs. The following reads then go into one region of
 * that size (each read a window of it, at most as large as the reads would be otherwise); Netty
 * and the decoder see ordinary buffers. After the region is full the next read takes only a
 * frame header's worth ({@link #HEADER}), and so does every read while a header that may be such
 * a frame's is incomplete, so that a following payload starts at the beginning of its own region
 * rather than in the middle of a read. Other reads are as the base allocator makes them.
 */
public final class PayloadPlacement implements RecvByteBufAllocator {
  /** The alignment placed payloads get: the page, the block size of nearly every file system. */
  public static final int PAGE = 4096;
  /**
   * The largest region, so that it and its alignment slack fit in one of Netty's pooled chunks (4
   * MiB); larger payloads are not placed. A region is set aside when a frame's header is in, ahead
   * of its bytes: a peer can hold one per connection, and only after the membership handshake
   * (frames before it are limited to 1 KiB).
   */
  public static final int MAX_REGION = (4 << 20) - PAGE;
  /** A data frame's bytes before its payload: length, header, the payload's length. */
  public static final int HEADER = Frames.LENGTH_FIELD + Frames.HEADER + 4;

  private final RecvByteBufAllocator base;
  /** The region the next reads fill, null when none is expected; one reference is ours. */
  private ByteBuf region;
  private int filled;
  private final int readMax;
  /** The size of the next read when it is to take only (the rest of) a frame's header; else 0. */
  private int probe;

  /** Placement over {@code base}, whose reads of at most {@code readMax} bytes it keeps. */
  public PayloadPlacement(RecvByteBufAllocator base, int readMax) {
    this.base = base;
    this.readMax = readMax;
  }

  /**
   * The next {@code bytes} bytes read belong together; the first at an address congruent to
   * {@code align} modulo {@link #PAGE}. Ignored while a region is still being filled.
   */
  void expect(int bytes, int align, ByteBufAllocator alloc) {
    if (region != null || bytes <= 0 || bytes > MAX_REGION) {
      return;
    }
    ByteBuf r = alloc.directBuffer(bytes + PAGE - 1);
    if (!r.hasMemoryAddress()) {
      r.release();
      return;
    }
    int at = (int) ((align - r.memoryAddress()) & (PAGE - 1));
    region = r.slice(at, bytes);
    filled = 0;
  }

  /** The next read takes at most {@code bytes}: the rest of a header whose frame may be placed. */
  void probe(int bytes) {
    if (region == null) {
      probe = bytes;
    }
  }

  /** Whether a region is being filled. */
  boolean placing() {
    return region != null;
  }

  /** Lets go of the region (the connection is gone); reads already handed out keep theirs. */
  void close() {
    if (region != null) {
      region.release();
      region = null;
    }
  }

  @Override
  public Handle newHandle() {
    return new PlacingHandle((ExtendedHandle) base.newHandle());
  }

  /** The base allocator's handle for all it decides but where a read goes. */
  private final class PlacingHandle extends DelegatingHandle implements ExtendedHandle {
    /** The window the last read went into, to count what it brought; null for another read. */
    private ByteBuf window;
    /** Whether the last read was a probe (which holds until it brought something). */
    private boolean probed;

    PlacingHandle(ExtendedHandle delegate) {
      super(delegate);
    }

    @Override
    public ByteBuf allocate(ByteBufAllocator alloc) {
      window = null;
      probed = false;
      if (region != null) {
        int n = Math.min(readMax, region.capacity() - filled);
        window = region.retainedSlice(filled, n).clear();
        return window;
      }
      if (probe > 0) {
        probed = true;
        return alloc.ioBuffer(probe, probe);
      }
      return super.allocate(alloc);
    }

    @Override
    public int guess() {
      return region != null ? Math.min(readMax, region.capacity() - filled) : super.guess();
    }

    @Override
    public void lastBytesRead(int bytes) {
      super.lastBytesRead(bytes);
      if (probed && bytes > 0) {
        probe = 0;
      }
      if (window != null && bytes > 0 && region != null) {
        filled += bytes;
        if (filled == region.capacity()) {
          close();
          probe = HEADER;
        }
      }
    }

    @Override
    public boolean continueReading(UncheckedBooleanSupplier maybeMoreDataSupplier) {
      return ((ExtendedHandle) delegate()).continueReading(maybeMoreDataSupplier);
    }
  }
}
