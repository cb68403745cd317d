package org.flowfs.common.wire;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelHandler.Sharable;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.util.ReferenceCountUtil;

/**
 * Writes {@link Envelope}s as frames. A payload is not copied: the frame's fields go out in one
 * buffer and the payload buffer follows it as a second write. Consumes the payload reference.
 */
@Sharable
public final class FrameEncoder extends ChannelOutboundHandlerAdapter {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(FrameEncoder.class);
  private final MessageRegistry registry;

  public FrameEncoder(MessageRegistry registry) {
    this.registry = registry;
  }

  /** A frame: its header and fields in one buffer, then its payload (null for none). */
  public record Frame(ByteBuf header, ByteBuf payload) {}

  /**
   * Encodes {@code env} into a frame whose buffers the caller writes (and releases); consumes the
   * envelope's payload reference, also when encoding fails.
   */
  public Frame encode(Envelope env, ByteBufAllocator alloc) {
    ByteBuf header = null;
    ByteBuf payload = null;
    try {
      int type = registry.idOf(env.message().getClass());
      RecordCodec<?> codec = registry.codec(type);
      payload = codec.payload(env.message());
      header = head(alloc, 64, env.kind(), type, env.id());
      codec.encodeFields(env.message(), header);
      int payloadLength = payload == null ? 0 : payload.readableBytes();
      header.setInt(0, header.readableBytes() - Frames.LENGTH_FIELD + payloadLength);
      return new Frame(header, payload);
    } catch (RuntimeException e) {
      ReferenceCountUtil.release(header);
      ReferenceCountUtil.release(payload);
      LOG.error("cannot encode {}", env.message().getClass().getSimpleName(), e);
      throw e;
    }
  }

  @Override
  public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
    if (msg instanceof FileFlowData d) {
      writeParts(ctx, d, promise);
      return;
    }
    if (!(msg instanceof Envelope env)) {
      ctx.write(msg, promise);
      return;
    }
    Frame f;
    try {
      f = encode(env, ctx.alloc());
    } catch (RuntimeException e) {
      promise.setFailure(e);
      return;
    }
    if (f.payload() == null) {
      ctx.write(f.header(), promise);
    } else {
      ctx.write(f.header(), ctx.voidPromise());
      ctx.write(f.payload(), promise);
    }
  }

  /** The frame of a {@link IoOp.FlowData} whose payload is {@code d}'s parts, each written as it is. */
  private void writeParts(ChannelHandlerContext ctx, FileFlowData d, ChannelPromise promise) {
    ByteBuf header = head(ctx.alloc(), Frames.HEADER + 8, Envelope.Kind.ONEWAY, registry.idOf(IoOp.FlowData.class), d.tag());
    header.writeInt((int) d.length()); // FlowData's one field: its payload's length
    header.setInt(0, header.readableBytes() - Frames.LENGTH_FIELD + (int) d.length());
    int last = d.parts().size() - 1;
    ctx.write(header, last < 0 ? promise : ctx.voidPromise());
    for (int i = 0; i <= last; i++) {
      ctx.write(d.parts().get(i), i == last ? promise : ctx.voidPromise());
    }
  }

  /** A frame's start: the length field (set once the frame is complete), version, kind, type, id. */
  private static ByteBuf head(ByteBufAllocator alloc, int capacity, Envelope.Kind kind, int type, long id) {
    ByteBuf header = alloc.ioBuffer(capacity);
    header.writeInt(0);
    header.writeByte(Frames.VERSION);
    header.writeByte(kind.ordinal());
    header.writeShort(type);
    header.writeLong(id);
    return header;
  }
}
