package org.flowfs.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.flowfs.common.Layout;

/**
 * Moves a file's bytes between the client and the I/O servers holding its datafiles: the one
 * place that decides how bytes travel. A call that touches N servers talks to all N at once.
 *
 * <p>Buffers: {@link #write} takes over the caller's reference to {@code data}; {@link #read}
 * writes into {@code dst} from its writer index on, and the caller keeps ownership. Futures
 * complete on network threads: continuations must not block.
 */
interface DataPath {
  /** Writes {@code data} at logical {@code offset} of the file laid out by {@code layout}. */
  CompletableFuture<Void> write(Layout layout, long offset, ByteBuf data);

  /**
   * Writes {@code data} to the logical regions {@code [starts[i], starts[i] + lengths[i])}, which
   * ascend and do not overlap, their bytes one after another in {@code data}: one noncontiguous
   * write.
   */
  CompletableFuture<Void> write(Layout layout, long[] starts, long[] lengths, ByteBuf data);

  /**
   * Reads {@code length} logical bytes at {@code offset} into {@code dst}; bytes no datafile holds
   * (holes, or past a datafile's end) read as zeros. The caller limits {@code length} to the file
   * size.
   */
  CompletableFuture<Void> read(Layout layout, long offset, int length, ByteBuf dst);

  /**
   * Reads {@code length} logical bytes at {@code offset} as {@link #read} does, into a buffer of
   * the path's choosing, which the future hands to the caller (who releases it). This one reads
   * into a new buffer from {@code alloc}; a path that can leave the bytes where they arrived
   * returns views of them instead.
   */
  default CompletableFuture<ByteBuf> readViews(Layout layout, long offset, int length, ByteBufAllocator alloc) {
    ByteBuf buf = PieceAllocator.buffer(alloc, length);
    CompletableFuture<Void> f;
    try {
      f = read(layout, offset, length, buf);
    } catch (RuntimeException e) {
      buf.release();
      throw e;
    }
    return f.whenComplete((v, err) -> {
      if (err != null) {
        buf.release(); // nothing writes into it any more
      }
    }).thenApply(v -> buf);
  }

  /**
   * {@link #read}, for a caller that waits for the bytes: done when it returns, at most {@code
   * timeout} later. When it throws, nothing writes into {@code dst} any more (the caller may free
   * it). An implementation may move the bytes on the calling thread.
   */
  default void readNow(Layout layout, long offset, int length, ByteBuf dst, Duration timeout) {
    CompletableFuture<Void> f = read(layout, offset, length, dst);
    try {
      Await.get(f, timeout);
    } catch (RuntimeException e) {
      f.handle((v, t) -> null).join(); // its calls end within their own timeouts
      throw e;
    }
  }
}
