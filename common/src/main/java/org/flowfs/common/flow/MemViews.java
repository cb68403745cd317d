package org.flowfs.common.flow;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import java.util.Map;
import java.util.TreeMap;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;

/**
 * Memory a read flows into by reference: rather than copying each arriving piece of the flow into
 * a buffer, a flow whose {@link MemEndpoint} has views keeps a retained slice of the received
 * frame for each memory segment, by position. Once every flow into it is done, {@link #assemble}
 * returns the {@code capacity} bytes as one composite buffer of those slices: the bytes are where
 * the network put them, copied by nobody.
 *
 * <p>Flows into the same views may run on different threads; the views take their slices under a
 * lock. The owner releases what it holds: the assembled buffer, or {@link #release} when a flow
 * failed.
 */
public final class MemViews {
  private final int capacity;
  private final TreeMap<Long, ByteBuf> slices = new TreeMap<>();
  private boolean released;

  public MemViews(int capacity) {
    this.capacity = capacity;
  }

  /** Takes {@code slice} (the caller's reference) as the bytes at {@code [pos, pos + its length)}. */
  void add(long pos, ByteBuf slice) {
    int len = slice.readableBytes();
    synchronized (this) {
      if (released) {
        slice.release(); // another flow into this memory failed: the read is over
        return;
      }
      if (pos >= 0 && pos + len <= capacity && slices.putIfAbsent(pos, slice) == null) {
        return;
      }
    }
    slice.release();
    throw new FsException(Errno.EINVAL, "memory bytes " + pos + ".." + (pos + len) + " placed twice or outside the "
        + capacity + " bytes of memory");
  }

  /**
   * The {@code capacity} bytes, in order, as a composite of the slices (which it takes over); EIO,
   * and everything released, if the slices leave a gap or overlap.
   */
  public synchronized ByteBuf assemble(ByteBufAllocator alloc) {
    CompositeByteBuf out = alloc.compositeDirectBuffer(Integer.MAX_VALUE);
    long end = 0;
    String fault = null;
    for (Map.Entry<Long, ByteBuf> e : slices.entrySet()) {
      if (e.getKey() != end) {
        fault = "memory bytes " + Math.min(end, e.getKey()) + ".." + Math.max(end, e.getKey())
            + (e.getKey() > end ? " were never received" : " were received twice");
        break;
      }
      end += e.getValue().readableBytes();
    }
    if (fault == null && end != capacity) {
      fault = "memory bytes " + end + ".." + capacity + " were never received";
    }
    if (fault != null) {
      out.release();
      release();
      throw new FsException(Errno.EIO, fault);
    }
    for (ByteBuf b : slices.values()) {
      out.addComponent(true, b);
    }
    slices.clear();
    released = true;
    return out;
  }

  /** Releases the slices taken so far; later ones are released as they come. */
  public synchronized void release() {
    released = true;
    slices.values().forEach(ByteBuf::release);
    slices.clear();
  }
}
