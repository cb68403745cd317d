package org.flowfs.io;

import io.netty.buffer.ByteBuf;
import java.util.List;
import org.flowfs.common.Handle;

/**
 * The byte streams ("bstreams", OrangeFS's {@code TROVE_bstream_ops}) of one I/O server: a
 * datafile per handle, read and written at offsets. A datafile that was never written reads as
 * empty, so a precreated handle costs nothing until it is used.
 *
 * <p>All methods block on disk and are thread safe; call them from the storage pool, never from
 * an event loop. Writes to distinct ranges of a datafile may run concurrently. Failures are
 * {@link org.flowfs.common.FsException}s (ENOSPC when the disk is full, EIO otherwise).
 *
 * <p>Buffers: {@link #read} appends to {@code dst} (the caller owns it); {@link #write} consumes
 * the readable bytes of {@code src} without releasing it.
 */
public interface BStreamStore extends AutoCloseable {
  /** Reads up to {@code length} bytes at {@code offset} into {@code dst}; returns the count (0 at or past the end). */
  int read(Handle h, long offset, int length, ByteBuf dst);

  /** Writes all of {@code src} at {@code offset}; returns the datafile's size afterwards. */
  long write(Handle h, long offset, ByteBuf src);

  /**
   * Writes the bytes of piece {@code i}, which follow each other in {@code src} from its reader
   * index, at {@code pieces.offset(i)}, for every piece: a flow buffer's write, the datafile opened
   * once for all of them. Leaves {@code src} as it is.
   */
  void write(Handle h, org.flowfs.common.flow.Pieces pieces, ByteBuf src);

  /**
   * The bytes of {@code pieces}, in order, as parts to send without a copy through user space:
   * regions of the datafile (sent with {@code sendfile}) and zeros where it has no bytes; null
   * when this store cannot. Opens the datafile if needed but reads nothing. The caller owns the parts.
   */
  default List<io.netty.util.ReferenceCounted> regions(Handle h, org.flowfs.common.flow.Pieces pieces) {
    return null;
  }

  /**
   * Puts {@code length} bytes at {@code offset} of the datafile into {@code dst} from its writer
   * index (advanced by {@code length}; zeros past the datafile's end) past the page cache, when
   * the range and the memory allow; false, {@code dst} unchanged, otherwise.
   */
  default boolean readDirect(Handle h, long offset, int length, ByteBuf dst) {
    return false;
  }

  /** Sets the datafile's size, creating it if needed. */
  void truncate(Handle h, long size);

  /**
   * Reserves storage for {@code [offset, offset + length)} of the datafile, creating it if needed,
   * or with {@code punch} frees that range (it reads as zeros after); the size stays either way.
   * A store or local file system that cannot is {@link org.flowfs.common.Errno#ENOTSUP}.
   */
  default void allocate(Handle h, long offset, long length, boolean punch) {
    throw new org.flowfs.common.FsException(org.flowfs.common.Errno.ENOTSUP, "this store does not allocate ranges");
  }

  /** The datafile's size; 0 for a datafile never written. */
  long size(Handle h);

  /** Removes the datafile; a missing one is fine. */
  void remove(Handle h);

  /** Makes the datafile's data (and, unless {@code dataOnly}, its size) durable. */
  void sync(Handle h, boolean dataOnly);

  /** Datafiles that exist, in handle order, after {@code cursor} (a handle id, 0 for the first). */
  List<Handle> list(long cursor, int max);

  /** Capacity of the file system the storage is on. */
  org.flowfs.common.StorageSpace space();

  long count();

  @Override
  void close();
}
