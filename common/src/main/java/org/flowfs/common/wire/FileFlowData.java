package org.flowfs.common.wire;

import io.netty.util.ReferenceCounted;
import java.util.List;

/**
 * An outbound {@link IoOp.FlowData} frame whose payload is given in parts: buffers, and file
 * regions that go from the page cache to the socket without passing through user space
 * ({@code sendfile}). Only the {@link FrameEncoder} knows this type; the peer decodes an ordinary
 * {@link IoOp.FlowData}. Writing it consumes the parts ({@link #release} them if it never reaches
 * the encoder).
 *
 * @param tag the flow's tag
 * @param parts {@link io.netty.buffer.ByteBuf}s and {@link io.netty.channel.FileRegion}s, in order
 * @param length their bytes in all
 */
public record FileFlowData(long tag, List<ReferenceCounted> parts, long length) {
  /** Releases the parts not yet consumed. */
  public void release() {
    for (ReferenceCounted p : parts) {
      if (p.refCnt() > 0) {
        p.release();
      }
    }
  }
}
