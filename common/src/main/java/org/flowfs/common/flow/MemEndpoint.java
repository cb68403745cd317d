package org.flowfs.common.flow;

import io.netty.buffer.ByteBuf;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;

/**
 * A memory region: the buffer a client reads into or writes from. The flow's {@code memReq}, if
 * set, lays the flow's bytes out in it (noncontiguous memory); otherwise they are contiguous from
 * the buffer's index 0. The caller keeps ownership of the buffer and must not touch it while the
 * flow is in service. A read may instead flow into {@link MemViews}: no buffer, the received bytes
 * kept where they arrived.
 */
public record MemEndpoint(ByteBuf buffer, MemViews views) implements Endpoint {
  /** Memory in {@code buffer}: a read copies the bytes into it, a write sends slices of it. */
  public MemEndpoint(ByteBuf buffer) {
    this(buffer, null);
  }

  /** Memory that a read flows into by reference ({@link MemViews}); a write has none such. */
  public MemEndpoint(MemViews views) {
    this(null, views);
  }

  /** Where bytes {@code [offset, offset + len)} of memory are in {@code buf}; EINVAL if not all inside it. */
  public static int index(ByteBuf buf, long offset, long len) {
    if (offset < 0 || offset + len > buf.capacity()) {
      throw new FsException(Errno.EINVAL, "memory request reaches outside the buffer (bytes " + offset + ".."
          + (offset + len) + " of " + buf.capacity() + ")");
    }
    return (int) offset;
  }
}
