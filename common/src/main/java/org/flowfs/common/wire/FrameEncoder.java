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
    } else if (f.payload().readableBytes() >= ShmSlots.MIN_PAYLOAD && inSlot(ctx, f)) {
      ctx.write(f.header(), promise);
    } else {
      ctx.write(f.header(), ctx.voidPromise());
      ctx.write(f.payload(), promise);
    }
  }

  /**
   * Puts {@code f}'s payload into a slot of the memory this connection shares with its peer, if
   * it has any and one is free, and turns the header into that of a frame whose payload is there
   * (the payload is released); false, with the frame unchanged, otherwise.
   */
  private static boolean inSlot(ChannelHandlerContext ctx, Frame f) {
    ShmSlots slots = ctx.channel().attr(ShmSlots.OUTBOUND).get();
    int slot = slots == null ? -1 : slots.put(f.payload());
    if (slot < 0) {
      return false;
    }
    f.payload().release();
    inSlot(f.header(), slot);
    return true;
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

  /** Turns a frame's header, its fields written, into that of a frame whose payload is in {@code slot}. */
  private static ByteBuf inSlot(ByteBuf header, int slot) {
    int kindAt = Frames.LENGTH_FIELD + 1;
    header.setByte(kindAt, header.getByte(kindAt) | Frames.SHM_PAYLOAD);
    header.writeInt(slot);
    header.setInt(0, header.readableBytes() - Frames.LENGTH_FIELD);
    return header;
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
