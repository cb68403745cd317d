package org.flowfs.common.flow;

import io.netty.buffer.ByteBuf;
import io.netty.util.ReferenceCounted;
import java.util.List;
import java.util.concurrent.Executor;
import org.flowfs.common.Handle;

/**
 * Datafile storage as flows see it (the seed's Trove): positional reads and writes that block,
 * run on {@link #executor()}, never on an event loop or the flow service thread. Implemented by
 * the I/O server over its bstream store.
 */
public interface FlowStorage {
  /** Where storage work runs (the I/O server's {@code io-store-N} pool). */
  Executor executor();

  /**
   * Where a read flow's bulk reads run (a buffer's worth read from the datafiles, and copied into
   * the client's shared memory or a buffer): {@link #executor()} unless the storage gives them a
   * pool of their own ({@code io.reads-anywhere}).
   */
  default Executor readExecutor() {
    return executor();
  }

  /** Appends up to {@code length} bytes at {@code offset} to {@code dst}; returns the count (short at the end). */
  int read(Handle h, long offset, int length, ByteBuf dst);

  /** Writes all readable bytes of {@code src} at {@code offset} (does not release it). */
  void write(Handle h, long offset, ByteBuf src);

  /**
   * Writes a flow buffer's pieces: the bytes of piece {@code i}, which follow each other in {@code
   * src} from its reader index, at {@code pieces.offset(i)} (does not release it). One call per
   * buffer, so that what every piece shares (the open datafile, the accounting) is done once: a
   * gathered write of small random writes is a piece of 4 KiB each.
   */
  default void write(Handle h, Pieces pieces, ByteBuf src) {
    int at = src.readerIndex();
    for (int i = 0; i < pieces.count(); i++) {
      write(h, pieces.offset(i), src.slice(at, pieces.length(i)));
      at += pieces.length(i);
    }
  }

  /**
   * Puts the bytes of {@code pieces} into {@code dst} (from its writer index, which it advances by
   * {@code pieces.bytes()}; bytes no datafile holds are zeros) past the page cache, the device
   * writing them there: no copy through the CPU. For a buffer of shared memory, page aligned, that
   * goes to the client as it is ({@link org.flowfs.common.wire.ShmSlots#taken}). False, with
   * {@code dst} unchanged, when the pieces or the storage do not allow it (then the caller reads
   * them otherwise). Blocks: on {@link #executor()}.
   */
  default boolean readDirect(Handle h, Pieces pieces, ByteBuf dst) {
    return false;
  }

  /**
   * The bytes of {@code pieces}, in order, as parts a connection sends without copying them
   * through user space: regions of the datafile ({@link io.netty.channel.FileRegion}s, sent with
   * {@code sendfile} from the page cache) and buffers of zeros where the datafile has no bytes;
   * null when this storage cannot (then the flow reads with {@link #read} on the storage pool).
   * Does no disk I/O itself and may be called on the flow service thread: the connection's
   * {@code sendfile} reads the pages, on its event loop, as it sends them. The caller owns the parts.
   */
  default List<ReferenceCounted> regions(Handle h, Pieces pieces) {
    return null;
  }
}
