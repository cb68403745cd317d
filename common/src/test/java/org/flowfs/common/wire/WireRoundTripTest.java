package org.flowfs.common.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.CompositeByteBuf;
import io.netty.channel.embedded.EmbeddedChannel;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import net.jqwik.api.AfterFailureMode;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.lifecycle.AfterContainer;
import org.junit.jupiter.api.Assertions;

/**
 * Every registered message type survives {@link FrameEncoder} then {@link FrameDecoder} unchanged,
 * for random instances (built by {@link MessageGen} from the record components), random envelope
 * kinds and ids, and the frames cut into random pieces as a socket would deliver them. Payloads
 * compare by content; the sender's payload is consumed and the decoded one is released.
 */
class WireRoundTripTest {
  private static final MessageRegistry REG = MessageRegistry.DEFAULT;
  private static final int MAX_FRAME = 16 << 20;

  @Property(tries = 40, shrinking = ShrinkingMode.OFF, afterFailure = AfterFailureMode.RANDOM_SEED)
  void roundTrip_everyRegisteredType(@ForAll long seed) {
    Random r = new Random(seed);
    MessageGen gen = new MessageGen(r);
    for (Class<?> type : REG.types()) {
      Message m = (Message) gen.instance(type);
      Envelope.Kind kind = Envelope.Kind.values()[r.nextInt(Envelope.Kind.values().length)];
      long id = r.nextBoolean() ? r.nextLong() : r.nextInt(1000);
      roundTrip(new Envelope(kind, id, m), r);
    }
  }

  /** Several frames back to back in one stream, delivered in arbitrary pieces, come out in order. */
  @Property(tries = 40, shrinking = ShrinkingMode.OFF, afterFailure = AfterFailureMode.RANDOM_SEED)
  void roundTrip_framesBackToBack(@ForAll long seed) {
    Random r = new Random(seed);
    MessageGen gen = new MessageGen(r);
    List<Class<?>> types = REG.types();
    EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(REG, MAX_FRAME), new FrameEncoder(REG));
    List<Object[]> sent = new ArrayList<>();
    List<ByteBuf> sentPayloads = new ArrayList<>();
    try {
      CompositeByteBuf wire = ch.alloc().compositeBuffer(Integer.MAX_VALUE);
      for (int i = 0; i < 1 + r.nextInt(20); i++) {
        Message m = (Message) gen.instance(types.get(r.nextInt(types.size())));
        sent.add(new Object[] {m, payloadBytes(m)});
        if (m instanceof HasPayload p) {
          sentPayloads.add(p.payload());
        }
        assertTrue(ch.writeOutbound(Envelope.request(i, m)));
        for (ByteBuf b; (b = ch.readOutbound()) != null; ) {
          wire.addComponent(true, b);
        }
      }
      feedInPieces(ch, wire, r);
      for (int i = 0; i < sent.size(); i++) {
        Envelope got = ch.readInbound();
        assertNotNull(got, "frame " + i + " missing");
        try {
          assertEquals(i, got.id());
          assertSameMessage((Message) sent.get(i)[0], (byte[]) sent.get(i)[1], got.message());
        } finally {
          got.release();
        }
      }
      assertNull(ch.readInbound());
    } finally {
      ch.finishAndReleaseAll();
    }
    for (ByteBuf p : sentPayloads) {
      assertEquals(0, p.refCnt(), "the encoder consumes the sender's payload");
    }
  }

  /**
   * A bulk frame that arrives over several reads, after another frame, is not copied on the way:
   * its payload is a view of the buffers the reads filled (a write into one shows in the payload).
   * Without that every byte of a flow would be copied once more in user space on arrival.
   */
  @Example
  void decode_payloadAcrossReads_isNotCopied() {
    EmbeddedChannel out = new EmbeddedChannel(new FrameEncoder(REG));
    EmbeddedChannel in = new EmbeddedChannel(new FrameDecoder(REG, MAX_FRAME));
    ByteBuf second = null;
    try {
      int size = 256 * 1024;
      ByteBuf data = out.alloc().directBuffer(size);
      for (int i = 0; i < size; i++) {
        data.writeByte(i * 31);
      }
      assertTrue(out.writeOutbound(Envelope.oneway(1, new CommonOp.PingReq(5))));
      assertTrue(out.writeOutbound(Envelope.oneway(2, new IoOp.FlowData(data))));
      CompositeByteBuf wire = out.alloc().compositeBuffer(Integer.MAX_VALUE);
      for (ByteBuf b; (b = out.readOutbound()) != null; ) {
        wire.addComponent(true, b);
      }
      // read 1: the ping and the start of the bulk frame; read 2: the rest of it
      int cut = wire.readableBytes() - size / 2;
      ByteBuf first = in.alloc().directBuffer(cut).writeBytes(wire, 0, cut);
      second = in.alloc().directBuffer(wire.readableBytes() - cut).writeBytes(wire, cut, wire.readableBytes() - cut);
      wire.release();
      in.writeInbound(first);
      in.writeInbound(second.retain());
      Envelope ping = in.readInbound();
      ping.release();
      Envelope got = in.readInbound();
      try {
        ByteBuf payload = ((IoOp.FlowData) got.message()).payload();
        assertEquals(size, payload.readableBytes());
        int last = payload.readerIndex() + size - 1;
        assertEquals((byte) ((size - 1) * 31), payload.getByte(last));
        second.setByte(second.writerIndex() - 1, 77);
        assertEquals(77, payload.getByte(last), "the payload is a view of what the read filled, not a copy");
      } finally {
        got.release();
      }
      assertNull(in.readInbound());
    } finally {
      if (second != null) {
        second.release();
      }
      out.finishAndReleaseAll();
      in.finishAndReleaseAll();
    }
  }

  @AfterContainer
  static void noLeaks() {
    LeakCheck.assertNoLeaks();
  }

  static void roundTrip(Envelope env, Random r) {
    Message m = env.message();
    byte[] payload = payloadBytes(m);
    ByteBuf sentPayload = m instanceof HasPayload p ? p.payload() : null;
    EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(REG, MAX_FRAME), new FrameEncoder(REG));
    try {
      assertTrue(ch.writeOutbound(env));
      CompositeByteBuf wire = ch.alloc().compositeBuffer();
      for (ByteBuf b; (b = ch.readOutbound()) != null; ) {
        wire.addComponent(true, b);
      }
      feedInPieces(ch, wire, r);
      Envelope got = ch.readInbound();
      assertNotNull(got, () -> "no frame decoded for " + m);
      try {
        assertNull(ch.readInbound(), "one frame in, one out");
        assertEquals(env.kind(), got.kind());
        assertEquals(env.id(), got.id());
        assertSameMessage(m, payload, got.message());
      } finally {
        got.release();
      }
      if (got.message() instanceof HasPayload p) {
        assertEquals(0, p.payload().refCnt(), "releasing the envelope releases its payload");
      }
    } finally {
      ch.finishAndReleaseAll();
    }
    if (sentPayload != null) {
      assertEquals(0, sentPayload.refCnt(), "the encoder consumes the sender's payload");
    }
  }

  /** Writes {@code wire} into the channel in pieces of random size, then releases it. */
  private static void feedInPieces(EmbeddedChannel ch, ByteBuf wire, Random r) {
    try {
      while (wire.isReadable()) {
        int n = r.nextInt(3) == 0 ? wire.readableBytes() : 1 + r.nextInt(Math.min(wire.readableBytes(), 64));
        ch.writeInbound(wire.readRetainedSlice(n));
      }
    } finally {
      wire.release();
    }
  }

  private static byte[] payloadBytes(Message m) {
    return m instanceof HasPayload p ? ByteBufUtil.getBytes(p.payload()) : null;
  }

  /**
   * Compares component by component: arrays by elements, the payload (already consumed on the
   * sending side) against the bytes it held.
   */
  static void assertSameMessage(Message expected, byte[] expectedPayload, Message actual) {
    assertEquals(expected.getClass(), actual.getClass());
    for (RecordComponent c : expected.getClass().getRecordComponents()) {
      Object e = get(c, expected);
      Object a = get(c, actual);
      String where = expected.getClass().getSimpleName() + "." + c.getName();
      if (c.getType() == ByteBuf.class) {
        assertArrayEquals(expectedPayload, ByteBufUtil.getBytes((ByteBuf) a), where);
      } else {
        assertSameValue(e, a, where);
      }
    }
  }

  private static void assertSameValue(Object e, Object a, String where) {
    if (e == null || a == null) {
      assertEquals(e, a, where);
    } else if (e instanceof byte[] eb) {
      assertArrayEquals(eb, (byte[]) a, where);
    } else if (e instanceof long[] el) {
      assertArrayEquals(el, (long[]) a, where);
    } else if (e instanceof List<?> el) {
      List<?> al = (List<?>) a;
      assertEquals(el.size(), al.size(), where + ".size");
      for (int i = 0; i < el.size(); i++) {
        assertSameValue(el.get(i), al.get(i), where + "[" + i + "]");
      }
    } else if (e instanceof Map<?, ?> em) {
      Map<?, ?> am = (Map<?, ?>) a;
      assertEquals(em.keySet(), am.keySet(), where + " keys");
      for (Map.Entry<?, ?> x : em.entrySet()) {
        assertSameValue(x.getValue(), am.get(x.getKey()), where + "{" + x.getKey() + "}");
      }
    } else if (e instanceof Record) {
      assertEquals(e.getClass(), a.getClass(), where);
      for (RecordComponent c : e.getClass().getRecordComponents()) {
        assertSameValue(get(c, e), get(c, a), where + "." + c.getName());
      }
    } else {
      assertEquals(e, a, where);
    }
  }

  private static Object get(RecordComponent c, Object o) {
    try {
      return c.getAccessor().invoke(o);
    } catch (ReflectiveOperationException x) {
      return Assertions.fail(x);
    }
  }

  /** The generator itself: it reaches every type, and its names obey the name rules. */
  @net.jqwik.api.Example
  void generator_coversEveryTypeAndMakesValidNames() {
    Random r = new Random(1);
    MessageGen gen = new MessageGen(r);
    assertFalse(REG.types().isEmpty());
    for (Class<?> t : REG.types()) {
      Object m = gen.instance(t);
      if (m instanceof HasPayload p) {
        p.release();
      }
    }
    boolean sawMax = false;
    for (int i = 0; i < 2000; i++) {
      String n = gen.name();
      int bytes = n.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
      assertTrue(bytes >= 1 && bytes <= 255 && n.indexOf('/') < 0 && n.indexOf('\0') < 0, n);
      sawMax |= bytes == 255;
    }
    assertTrue(sawMax, "names reach the 255-byte limit");
  }
}
