package org.flowfs.client.api;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;
import org.flowfs.common.request.Request;

/**
 * A buffer and the data in it: {@code count} instances of a memory datatype tiled from the
 * buffer's origin (instance {@code k} at {@code k * type.extent()}), as MPI's {@code (buf, count,
 * datatype)}. The datatype may be noncontiguous (a vector of every other double, a struct with
 * padding, a subarray of a matrix): the flows gather from and scatter into it directly, without an
 * intermediate copy. Values are in their memory form, the platform's byte order (see {@link
 * org.flowfs.common.datarep.Datarep}).
 *
 * <p>The origin is a {@link ByteBuf}'s reader index or a {@link ByteBuffer}'s position; the data
 * must lie between it and the buffer's capacity (limit). Transfers never move the buffer's
 * indices. Ownership stays with the caller, who must not change (for a write) or read (for a read)
 * the buffer, nor release it, until the transfer completes. Immutable.
 */
public final class Memory {
  private final ByteBuf region;
  private final long count;
  private final Request type;
  private final boolean writable;

  private Memory(ByteBuf region, long count, Request type, boolean writable) {
    Objects.requireNonNull(type, "type");
    if (count < 0) {
      throw new IllegalArgumentException("negative count " + count);
    }
    if (count > 0 && type.size() == 0) {
      throw new IllegalArgumentException("a datatype without data: " + type);
    }
    this.region = region;
    this.count = count;
    this.type = type;
    this.writable = writable;
    if (count > 0) {
      long span = Math.multiplyExact(count - 1, type.extent());
      long lo = Math.min(0, span) + type.trueLb();
      long hi = Math.max(0, span) + type.trueUb();
      if (lo < 0 || hi > region.capacity()) {
        throw new IllegalArgumentException(count + " x " + type + " reach bytes " + lo + ".." + hi
            + " of the buffer, which has " + region.capacity() + " from its origin");
      }
    }
  }

  /** {@code count} instances of {@code type} in {@code buf} from its reader index on. */
  public static Memory of(ByteBuf buf, long count, Request type) {
    int from = buf.readerIndex();
    return new Memory(buf.slice(from, buf.capacity() - from), count, type, !buf.isReadOnly());
  }

  /** {@code count} instances of {@code type} in {@code buf} from its position to its limit. */
  public static Memory of(ByteBuffer buf, long count, Request type) {
    ByteBuffer view = buf.duplicate().order(ByteOrder.BIG_ENDIAN); // a plain view: no swapped ByteBuf
    return new Memory(Unpooled.wrappedBuffer(view), count, type, !buf.isReadOnly());
  }

  /** {@code count} instances of {@code type} in {@code array} from index 0. */
  public static Memory of(byte[] array, long count, Request type) {
    return new Memory(Unpooled.wrappedBuffer(array), count, type, true);
  }

  /** The readable bytes of {@code buf}, contiguous. */
  public static Memory bytes(ByteBuf buf) {
    return of(buf, buf.readableBytes(), Request.BYTE);
  }

  /** The remaining bytes of {@code buf}, contiguous. */
  public static Memory bytes(ByteBuffer buf) {
    return of(buf, buf.remaining(), Request.BYTE);
  }

  public long count() {
    return count;
  }

  public Request type() {
    return type;
  }

  /** The data bytes described: {@code count * type.size()}. */
  public long dataBytes() {
    return Math.multiplyExact(count, type.size());
  }

  /** The buffer from the origin on (index 0 is the origin); shares the caller's memory. */
  ByteBuf region() {
    return region;
  }

  boolean writable() {
    return writable;
  }

  /** The buffer a flow moves the data to or from, contiguous from index 0 where possible. */
  ByteBuf flowBuffer() {
    if (type.isContiguous()) {
      return region.slice((int) type.lb(), (int) dataBytes());
    }
    return region;
  }

  /** The memory request of a flow: null when {@link #flowBuffer()} is contiguous. */
  Request flowRequest() {
    return type.isContiguous() ? null : type;
  }

  @Override
  public String toString() {
    return count + " x " + type;
  }
}
