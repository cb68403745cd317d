package org.flowfs.common.wire;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;

/**
 * Splits the byte stream into frames of at most {@code maxFrame} bytes and decodes each into an
 * {@link Envelope}. A frame that is too long, has another version, an unknown type or fields that
 * do not decode raises a {@link MalformedMessageException} (or Netty's TooLongFrameException);
 * the connection's handler then closes the connection. One instance per channel.
 */
public final class FrameDecoder extends LengthFieldBasedFrameDecoder {
  private final MessageRegistry registry;

  public FrameDecoder(MessageRegistry registry, int maxFrame) {
    super(maxFrame, 0, Frames.LENGTH_FIELD, 0, Frames.LENGTH_FIELD);
    this.registry = registry;
  }

  @Override
  protected Object decode(ChannelHandlerContext ctx, ByteBuf in) throws Exception {
    ByteBuf frame = (ByteBuf) super.decode(ctx, in);
    if (frame == null) {
      return null;
    }
    try {
      return decodeFrame(frame);
    } finally {
      frame.release();
    }
  }

  /** Decodes one frame without its length field; the frame is not released. */
  public Envelope decodeFrame(ByteBuf frame) {
    if (frame.readableBytes() < Frames.HEADER) {
      throw new MalformedMessageException("frame of " + frame.readableBytes() + " bytes is shorter than a header");
    }
    int version = frame.readUnsignedByte();
    if (version != Frames.VERSION) {
      throw new MalformedMessageException("protocol version " + version + ", expected " + Frames.VERSION);
    }
    int kind = frame.readUnsignedByte();
    if (kind >= Envelope.Kind.values().length) {
      throw new MalformedMessageException("frame kind " + kind);
    }
    int type = frame.readUnsignedShort();
    long id = frame.readLong();
    RecordCodec<?> codec = registry.codec(type);
    Message m = (Message) codec.decode(frame);
    if (frame.isReadable()) {
      Envelope env = new Envelope(Envelope.Kind.values()[kind], id, m);
      env.release();
      throw new MalformedMessageException(frame.readableBytes() + " trailing bytes after " + codec.type().getSimpleName());
    }
    return new Envelope(Envelope.Kind.values()[kind], id, m);
  }
}
