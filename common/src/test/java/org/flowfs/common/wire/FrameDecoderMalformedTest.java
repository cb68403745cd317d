package org.flowfs.common.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.TooLongFrameException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.wire.CommonOp.PingReq;
import org.flowfs.common.wire.IoOp.ReadResp;
import org.flowfs.common.wire.MetaOp.LookupReq;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Frames a broken or hostile peer could send: each is refused with a {@link
 * MalformedMessageException} (or Netty's {@link TooLongFrameException}), decodes to nothing, and
 * leaves no buffer behind (the input's reference count, shared by every slice of it, drops to 0).
 */
@ExtendWith(LeakCheck.class)
class FrameDecoderMalformedTest {
  private static final MessageRegistry REG = MessageRegistry.DEFAULT;
  private static final int MAX_FRAME = 1 << 20;
  private static final int PING = REG.idOf(PingReq.class);

  @Test
  void decode_truncatedFrame_everyTypeEveryCut() {
    Random r = new Random(42);
    MessageGen gen = new MessageGen(r);
    int checked = 0;
    for (Class<?> type : REG.types()) {
      byte[] whole = smallFrame(gen, type);
      int body = whole.length - Frames.LENGTH_FIELD;
      // every strict prefix of the body, as a complete frame; below HEADER the header itself is cut
      for (int keep = 0; keep < body; keep++) {
        ByteBuf in = alloc(Frames.LENGTH_FIELD + keep);
        in.writeInt(keep).writeBytes(whole, Frames.LENGTH_FIELD, keep);
        assertRejected(in, MalformedMessageException.class, "");
        checked++;
      }
    }
    assertTrue(checked > REG.types().size() * Frames.HEADER);
  }

  /** The frame of a random instance of {@code type} of at most 300 bytes (small, so every cut can be tried). */
  private static byte[] smallFrame(MessageGen gen, Class<?> type) {
    for (;;) {
      Message m = (Message) gen.instance(type);
      if (m instanceof HasPayload p && p.payload().readableBytes() > 100) {
        p.release();
        continue;
      }
      byte[] b = encode(Envelope.request(7, m));
      if (b.length <= 300) {
        return b;
      }
    }
  }

  @Test
  void decode_frameShorterThanHeader() {
    assertRejected(frameBytes(b -> b.writeInt(3).writeByte(1).writeByte(0).writeByte(0)),
        MalformedMessageException.class, "shorter than a header");
    assertRejected(frameBytes(b -> b.writeInt(0)), MalformedMessageException.class, "shorter than a header");
  }

  @Test
  void decode_lengthAboveMaxFrame_isTooLongFrame() {
    // only the header arrives: the decoder must not wait for (or buffer) the announced megabytes
    ByteBuf in = frameBytes(b -> b.writeInt(MAX_FRAME).writeByte(Frames.VERSION).writeByte(0).writeShort(PING).writeLong(1));
    assertRejected(in, TooLongFrameException.class, "");
    assertRejected(frameBytes(b -> b.writeInt(-1).writeLong(0)), TooLongFrameException.class, "");
  }

  @Test
  void decode_lengthJustBelowMaxFrame_isWaitedFor() {
    ByteBuf in = frameBytes(b -> b.writeInt(MAX_FRAME - Frames.LENGTH_FIELD).writeByte(Frames.VERSION));
    EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(REG, MAX_FRAME));
    try {
      ch.writeInbound(in);
      assertNull(ch.readInbound(), "an incomplete frame within the limit is buffered, not refused");
    } finally {
      ch.finishAndReleaseAll();
    }
    assertEquals(0, in.refCnt());
  }

  @Test
  void decode_unknownTypeId() {
    for (int type : new int[] {0, 99, 198, 999, 0xFFFF}) {
      assertRejected(frame(Frames.VERSION, 0, type, 1, b -> b.writeLong(0)), MalformedMessageException.class,
          "unknown message type " + type);
    }
  }

  @Test
  void decode_wrongVersionByte() {
    for (int v : new int[] {0, Frames.VERSION + 1, 255}) {
      assertRejected(frame(v, 0, PING, 1, b -> b.writeLong(5)), MalformedMessageException.class, "protocol version " + v);
    }
  }

  @Test
  void decode_unknownKind() {
    assertRejected(frame(Frames.VERSION, Envelope.Kind.values().length, PING, 1, b -> b.writeLong(5)),
        MalformedMessageException.class, "frame kind");
  }

  @Test
  void decode_trailingBytes() {
    assertRejected(frame(Frames.VERSION, 0, PING, 1, b -> b.writeLong(5).writeByte(0)),
        MalformedMessageException.class, "1 trailing bytes");
  }

  @Test
  void decode_trailingBytesAfterPayload_releasesThePayload() {
    int readResp = REG.idOf(ReadResp.class);
    assertRejected(frame(Frames.VERSION, 1, readResp, 1, b -> b.writeInt(3).writeBytes(new byte[] {1, 2, 3}).writeShort(9)),
        MalformedMessageException.class, "2 trailing bytes");
  }

  @Test
  void decode_payloadLengthBeyondFrameOrNegative() {
    int readResp = REG.idOf(ReadResp.class);
    assertRejected(frame(Frames.VERSION, 1, readResp, 1, b -> b.writeInt(4).writeBytes(new byte[3])),
        MalformedMessageException.class, "payload length 4");
    assertRejected(frame(Frames.VERSION, 1, readResp, 1, b -> b.writeInt(-1).writeBytes(new byte[3])),
        MalformedMessageException.class, "payload length -1");
  }

  @Test
  void decode_varintLongerThanTenBytes() {
    int statsResp = REG.idOf(CommonOp.StatsResp.class);
    byte[] eleven = new byte[11];
    Arrays.fill(eleven, (byte) 0x81);
    assertRejected(frame(Frames.VERSION, 1, statsResp, 1, b -> b.writeBytes(eleven).writeZero(64)),
        MalformedMessageException.class, "varint");
  }

  @Test
  void decode_tenByteVarintOverflowingSixtyFourBits() {
    // nine continuation bytes, then a tenth carrying more than bit 63: no 64-bit value has this form
    // (dropping the extra bits would read it as 0, a null byte[], and accept the frame)
    int xattrResp = REG.idOf(MetaOp.XattrResp.class);
    byte[] ten = new byte[10];
    Arrays.fill(ten, 0, 9, (byte) 0x80);
    ten[9] = 0x02;
    assertRejected(frame(Frames.VERSION, 1, xattrResp, 1, b -> b.writeBytes(ten)), MalformedMessageException.class, "varint");
    ten[9] = 0x7F;
    assertRejected(frame(Frames.VERSION, 1, xattrResp, 1, b -> b.writeBytes(ten)), MalformedMessageException.class, "varint");
  }

  @Test
  void decode_tenByteVarintOfSixtyFourBits_isAccepted() {
    // ten bytes holding all 64 bits (2^64 - 1): a well-formed varint, refused as a length
    int xattrResp = REG.idOf(MetaOp.XattrResp.class);
    byte[] ten = new byte[10];
    Arrays.fill(ten, 0, 9, (byte) 0xFF);
    ten[9] = 0x01;
    assertRejected(frame(Frames.VERSION, 1, xattrResp, 1, b -> b.writeBytes(ten)), MalformedMessageException.class,
        "exceeds the frame");
  }

  @Test
  void decode_listCountLargerThanFrame() {
    int handlesResp = REG.idOf(IoOp.HandlesResp.class);
    assertRejected(frame(Frames.VERSION, 1, handlesResp, 1, b -> {
      FieldCodec.writeVarLong(b, 1001); // 1000 handles announced
      b.writeByte(1).writeLong(Handle.of(1, 1).id());
    }), MalformedMessageException.class, "exceeds the frame");
  }

  @Test
  void decode_longArrayCountThatOverflowsWhenMultiplied() {
    // a count whose byte size (count * 8) wraps around to a small number must still be refused
    int sizesResp = REG.idOf(IoOp.SizesResp.class);
    for (long count : new long[] {(1L << 61) + 1, Long.MAX_VALUE, (1L << 62) + 2, -2}) {
      // the body holds exactly as many longs as the count cut to an int: (int) count, or none for -1
      int asInt = Math.max(0, (int) count);
      assertRejected(frame(Frames.VERSION, 1, sizesResp, 1, b -> {
        FieldCodec.writeVarLong(b, count + 1);
        for (int i = 0; i < asInt; i++) {
          b.writeLong(11 + i);
        }
      }), MalformedMessageException.class, "exceeds the frame");
    }
  }

  @Test
  void decode_mapCountLargerThanFrame() {
    int statsResp = REG.idOf(CommonOp.StatsResp.class);
    assertRejected(frame(Frames.VERSION, 1, statsResp, 1, b -> {
      b.writeByte(0); // role: null
      b.writeInt(1);
      FieldCodec.writeVarLong(b, 1L << 40);
    }), MalformedMessageException.class, "exceeds the frame");
  }

  @Test
  void decode_lookupNameWithSlashOrNulOrEmptyOrTooLong() {
    for (String bad : new String[] {"a/b", "/", "a\0b", "\0", "", "x".repeat(256), "\u00e9".repeat(128)}) {
      ByteBuf in = lookupFrame(bad);
      Throwable t = assertRejected(in, MalformedMessageException.class, "LookupReq");
      FsException fe = assertInstanceOf(FsException.class, t.getCause(), bad);
      assertTrue(fe.errno() == Errno.EINVAL || fe.errno() == Errno.ENAMETOOLONG, fe::toString);
    }
  }

  @Test
  void decode_lookupNameOf255Bytes_isAccepted() {
    String name = "\u00e9".repeat(127) + "x";
    EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(REG, MAX_FRAME));
    try {
      ch.writeInbound(lookupFrame(name));
      Envelope env = ch.readInbound();
      assertEquals(new LookupReq(Handle.ROOT, name), env.message());
    } finally {
      ch.finishAndReleaseAll();
    }
  }

  @Test
  void decode_badBooleanEnumAndPresenceBytes() {
    int removeResp = REG.idOf(MetaOp.RemoveResp.class);
    assertRejected(frame(Frames.VERSION, 1, removeResp, 1, b -> b.writeByte(0).writeByte(2)),
        MalformedMessageException.class, "boolean byte 2");
    assertRejected(frame(Frames.VERSION, 1, removeResp, 1, b -> b.writeByte(7).writeLong(1).writeByte(1)),
        MalformedMessageException.class, "presence byte 7");
    int createReq = REG.idOf(MetaOp.CreateReq.class);
    assertRejected(frame(Frames.VERSION, 0, createReq, 1, b -> {
      b.writeByte(1).writeLong(Handle.ROOT.id());
      FieldCodec.writeVarLong(b, 2);
      b.writeByte('f');
      b.writeByte(99); // FileType ordinal 98
      b.writeZero(32);
    }), MalformedMessageException.class, "enum value 98");
  }

  @Test
  void decode_validFrameAfterRefusedOne_isNotReached() {
    // after a malformed frame the connection is closed: the decoder does not resynchronise
    ByteBuf in = alloc(64);
    in.writeBytes(frameBytesArray(Frames.VERSION + 1, 0, PING, 1, b -> b.writeLong(1)));
    in.writeBytes(frameBytesArray(Frames.VERSION, 0, PING, 2, b -> b.writeLong(2)));
    EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(REG, MAX_FRAME));
    try {
      assertThrows(DecoderException.class, () -> ch.writeInbound(in));
      Envelope second = ch.readInbound();
      if (second != null) {
        // Netty may go on decoding the rest of the same read; what it passes on must be intact
        assertEquals(2, second.id());
      }
    } finally {
      ch.finishAndReleaseAll();
    }
    assertEquals(0, in.refCnt());
  }

  // ---- helpers ------------------------------------------------------------------------------

  /**
   * Feeds {@code in} to a fresh decoder, expects it to be refused with {@code expected} (unwrapped
   * from Netty's DecoderException) whose message contains {@code part}, and checks that nothing
   * came out and every byte of {@code in} was released. Returns the failure.
   */
  static Throwable assertRejected(ByteBuf in, Class<? extends Throwable> expected, String part) {
    byte[] bytes = ByteBufUtil.getBytes(in);
    Supplier<String> hex = () -> ByteBufUtil.hexDump(bytes);
    EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(REG, MAX_FRAME));
    Throwable c;
    try {
      Throwable t = assertThrows(Throwable.class, () -> ch.writeInbound(in), hex);
      c = t instanceof DecoderException && !(t instanceof TooLongFrameException) && t.getCause() != null ? t.getCause() : t;
      assertInstanceOf(expected, c, hex);
      assertTrue(c.getMessage() != null && c.getMessage().contains(part), () -> hex.get() + ": " + c.getMessage());
      Object out = ch.readInbound();
      assertNull(out, hex);
    } finally {
      ch.finishAndReleaseAll();
    }
    assertEquals(0, in.refCnt(), () -> hex.get() + ": the input (or a slice of it) was not released");
    return c;
  }

  private static ByteBuf lookupFrame(String name) {
    byte[] n = name.getBytes(StandardCharsets.UTF_8);
    return frame(Frames.VERSION, 0, REG.idOf(LookupReq.class), 3, b -> {
      b.writeByte(1).writeLong(Handle.ROOT.id());
      FieldCodec.writeVarLong(b, n.length + 1L);
      b.writeBytes(n);
    });
  }

  /** A frame with a correct length field around a header and a hand-written body. */
  static ByteBuf frame(int version, int kind, int type, long id, Consumer<ByteBuf> body) {
    byte[] b = frameBytesArray(version, kind, type, id, body);
    return alloc(b.length).writeBytes(b);
  }

  static byte[] frameBytesArray(int version, int kind, int type, long id, Consumer<ByteBuf> body) {
    ByteBuf b = ByteBufAllocator.DEFAULT.heapBuffer();
    try {
      b.writeInt(0).writeByte(version).writeByte(kind).writeShort(type).writeLong(id);
      body.accept(b);
      b.setInt(0, b.readableBytes() - Frames.LENGTH_FIELD);
      return ByteBufUtil.getBytes(b);
    } finally {
      b.release();
    }
  }

  private static ByteBuf frameBytes(Consumer<ByteBuf> raw) {
    ByteBuf b = alloc(32);
    raw.accept(b);
    return b;
  }

  private static ByteBuf alloc(int n) {
    return ByteBufAllocator.DEFAULT.directBuffer(n);
  }

  /** The bytes {@link FrameEncoder} writes for {@code env}, length field included. */
  static byte[] encode(Envelope env) {
    EmbeddedChannel ch = new EmbeddedChannel(new FrameEncoder(REG));
    ByteBuf all = ByteBufAllocator.DEFAULT.heapBuffer();
    try {
      ch.writeOutbound(env);
      for (ByteBuf b; (b = ch.readOutbound()) != null; ) {
        all.writeBytes(b);
        b.release();
      }
      return ByteBufUtil.getBytes(all);
    } finally {
      all.release();
      ch.finishAndReleaseAll();
    }
  }
}
