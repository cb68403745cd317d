package org.flowfs.common.wire;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.TooLongFrameException;

/**
 * Splits the byte stream into frames of at most {@code maxFrame} bytes and decodes each into an
 * {@link Envelope}. A frame that is too long, has another version, an unknown type or fields that
 * do not decode raises a {@link MalformedMessageException} (or Netty's TooLongFrameException);
 * the connection's handler then closes the connection, and this decoder drops everything that
 * comes after the bad frame, so one bad connection is reported once. One instance per channel.
 *
 * <p>The frame limit can be lowered for a while ({@link #limit(int)}): a connection that has not
 * yet proved membership may only send small frames, so a stranger never makes the server buffer
 * more than that.
 */
public final class FrameDecoder extends LengthFieldBasedFrameDecoder {
  private final MessageRegistry registry;
  private final int maxFrame;
  private int limit;
  private boolean failed;
  /** Where large payloads of {@link #placedType} frames are read to; null for none. */
  private PayloadPlacement placement;
  private int placedType = -1;
  private int placedMin;
  /** The slots this connection's peer may hand payloads over in; null for none. */
  private ShmSlots shared;

  public FrameDecoder(MessageRegistry registry, int maxFrame) {
    super(maxFrame, 0, Frames.LENGTH_FIELD, 0, Frames.LENGTH_FIELD);
    this.registry = registry;
    this.maxFrame = maxFrame;
    this.limit = maxFrame;
    // a frame that spans reads is kept as the buffers the reads filled, not merged into one: Netty's
    // default merging copies every byte that arrives while part of a frame waits, which for a flow
    // (frames of a quarter MiB and more, and their payloads still held when the next read comes)
    // is nearly every byte once more
    setCumulator(COMPOSITE_CUMULATOR);
  }

  /**
   * Sets the largest frame (length field included) accepted from now on, at most the {@code
   * maxFrame} this decoder was built with. Call on the channel's event loop.
   */
  public void limit(int bytes) {
    this.limit = Math.min(bytes, maxFrame);
  }

  /**
   * Has the payloads of {@code type} frames of at least {@code min} bytes read into memory placed
   * by {@code p}, this connection's receive allocator: each such payload's bytes in one run, every
   * byte at an address congruent to its index in the payload modulo the page. Call before the
   * first read.
   */
  public void placePayloads(PayloadPlacement p, Class<? extends HasPayload> type, int min) {
    this.placement = p;
    this.placedType = registry.idOf(type);
    this.placedMin = min;
  }

  /**
   * With a frame begun in {@code in} (at its reader index) and not complete: if it is one whose
   * payload is placed and its header is in, the rest of the payload goes to a placed region.
   * The payload's length field is the type's only field before its payload, as in {@link
   * IoOp.FlowData}.
   */
  private void place(ChannelHandlerContext ctx, ByteBuf in) {
    if (placement.placing()) {
      return;
    }
    int have = in.readableBytes();
    int at = in.readerIndex();
    boolean typeKnown = have >= Frames.LENGTH_FIELD + 4;
    if (typeKnown && in.getUnsignedShort(at + Frames.LENGTH_FIELD + 2) != placedType) {
      return;
    }
    if (have < PayloadPlacement.HEADER) {
      placement.probe(PayloadPlacement.HEADER - have); // the rest of the header on its own
      return;
    }
    long length = in.getUnsignedInt(at);
    long payload = in.getUnsignedInt(at + Frames.LENGTH_FIELD + Frames.HEADER);
    if (payload < placedMin || payload != length - Frames.HEADER - 4) {
      return;
    }
    int arrived = have - PayloadPlacement.HEADER;
    placement.expect((int) (payload - arrived), arrived, ctx.alloc());
  }

  /** From now on frames may carry their payloads in {@code slots}. Call on the channel's event loop. */
  public void share(ShmSlots slots) {
    this.shared = slots;
  }

  @Override
  protected void handlerRemoved0(ChannelHandlerContext ctx) {
    if (placement != null) {
      placement.close();
    }
  }

  @Override
  protected Object decode(ChannelHandlerContext ctx, ByteBuf in) throws Exception {
    if (failed) {
      in.skipBytes(in.readableBytes());
      return null;
    }
    try {
      if (limit < maxFrame && in.readableBytes() >= Frames.LENGTH_FIELD) {
        long length = in.getUnsignedInt(in.readerIndex());
        if (length > limit - Frames.LENGTH_FIELD) {
          throw new TooLongFrameException("frame of " + length + " bytes; at most " + (limit - Frames.LENGTH_FIELD)
              + " allowed on this connection now");
        }
      }
      ByteBuf frame = (ByteBuf) super.decode(ctx, in);
      if (frame == null) {
        if (placement != null) {
          place(ctx, in);
        }
        return null;
      }
      try {
        return decodeFrame(frame);
      } finally {
        frame.release();
      }
    } catch (RuntimeException e) {
      failed = true;
      in.skipBytes(in.readableBytes());
      throw e;
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
    boolean slotted = (kind & Frames.SHM_PAYLOAD) != 0;
    kind &= ~Frames.SHM_PAYLOAD;
    if (kind >= Envelope.Kind.values().length) {
      throw new MalformedMessageException("frame kind " + kind);
    }
    int type = frame.readUnsignedShort();
    long id = frame.readLong();
    RecordCodec<?> codec = registry.codec(type);
    if (slotted && (shared == null || !codec.hasPayload())) {
      throw new MalformedMessageException(codec.type().getSimpleName() + " with its payload in shared memory"
          + (shared == null ? " on a connection that shares none" : ", a type without a payload"));
    }
    ShmSlots slots = shared;
    Message m = (Message) (slotted ? codec.decode(frame, (in, n) -> slots.received(in.readInt(), n)) : codec.decode(frame));
    if (frame.isReadable()) {
      Envelope env = new Envelope(Envelope.Kind.values()[kind], id, m);
      env.release();
      throw new MalformedMessageException(frame.readableBytes() + " trailing bytes after " + codec.type().getSimpleName());
    }
    return new Envelope(Envelope.Kind.values()[kind], id, m);
  }
}
