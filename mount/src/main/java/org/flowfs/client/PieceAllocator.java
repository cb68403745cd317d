package org.flowfs.client;

import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.UnpooledUnsafeDirectByteBuf;
import java.nio.ByteBuffer;
import java.util.concurrent.ArrayBlockingQueue;

/**
 * The allocator of the client's file data buffers: Netty's pool for everything, but for direct
 * buffers of exactly one {@link #PIECE} (the pieces of write-behind and read-ahead buffers), whose
 * memory it keeps for reuse, up to {@code keep} pieces.
 *
 * <p>Netty's pool serves a piece from a chunk of a few MiB and frees the chunk when its last
 * buffer is released: a stream's buffers, released together, took a new chunk every few MiB, and
 * the first touch of new memory (a page fault every 4 KiB) was a third of the mount's time in a
 * sequential read or write. A kept piece is touched once. Thread-safe.
 */
final class PieceAllocator extends AbstractByteBufAllocator {
  /** The size of a piece: a buffer of write-behind or read-ahead grows in pieces of this size. */
  static final int PIECE = 1 << 20;

  private final ByteBufAllocator pooled;
  private final ArrayBlockingQueue<ByteBuffer> free;

  /** Keeps up to {@code keep} released pieces; everything else comes from {@code pooled}. */
  PieceAllocator(ByteBufAllocator pooled, int keep) {
    super(true);
    this.pooled = pooled;
    this.free = new ArrayBlockingQueue<>(Math.max(1, keep));
  }

  /**
   * An empty buffer of {@code length} bytes from {@code alloc}: below a {@link #PIECE}, one
   * buffer; from there on, pieces joined as one composite buffer, which the allocator keeps for
   * reuse. (A read-ahead window of 4 MiB in one buffer took a new chunk of Netty's pool for every
   * window, and the first touch of its memory, a page fault every 4 KiB, was a third of the
   * mount's time in a sequential read; a write of 8 MiB copied into one buffer was allocated and
   * freed outside the pool every time.)
   */
  static ByteBuf buffer(ByteBufAllocator alloc, int length) {
    if (length < PIECE) {
      return alloc.directBuffer(length);
    }
    CompositeByteBuf c = alloc.compositeDirectBuffer((length + PIECE - 1) / PIECE);
    for (int at = 0; at < length; at += PIECE) {
      int n = Math.min(PIECE, length - at);
      ByteBuf b = n == PIECE ? alloc.directBuffer(PIECE, PIECE) : alloc.directBuffer(n);
      c.addComponent(false, b.writerIndex(b.capacity()));
    }
    return c;
  }

  /** Pieces kept for reuse now. */
  int kept() {
    return free.size();
  }

  @Override
  public ByteBuf directBuffer(int initialCapacity, int maxCapacity) {
    if (initialCapacity == PIECE && maxCapacity == PIECE) {
      return new Piece();
    }
    return pooled.directBuffer(initialCapacity, maxCapacity);
  }

  @Override
  protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
    return pooled.directBuffer(initialCapacity, maxCapacity);
  }

  @Override
  protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
    return pooled.heapBuffer(initialCapacity, maxCapacity);
  }

  @Override
  public boolean isDirectBufferPooled() {
    return true;
  }

  /** A piece: its memory comes from the kept ones when there are, and goes back there when released. */
  private final class Piece extends UnpooledUnsafeDirectByteBuf {
    Piece() {
      super(PieceAllocator.this, PIECE, PIECE);
    }

    @Override
    protected ByteBuffer allocateDirect(int capacity) {
      ByteBuffer b = capacity == PIECE ? free.poll() : null;
      return b != null ? b.clear() : super.allocateDirect(capacity);
    }

    @Override
    protected void freeDirect(ByteBuffer buffer) {
      if (buffer.capacity() != PIECE || !free.offer(buffer)) {
        super.freeDirect(buffer);
      }
    }
  }
}
