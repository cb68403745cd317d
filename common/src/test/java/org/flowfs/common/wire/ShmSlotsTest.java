package org.flowfs.common.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.flowfs.common.Counters;
import org.flowfs.common.Handle;
import org.flowfs.common.HugePagePool;
import org.flowfs.common.wire.IoOp.FlowData;
import org.flowfs.common.wire.IoOp.ReadResp;
import org.flowfs.common.wire.IoOp.WriteReq;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Payloads handed over in shared memory: a frame names a slot instead of carrying the bytes, the
 * peer's payload is the slot and its release gives the slot back; a payload that finds no slot,
 * or is small, goes in the frame as before; a frame naming a slot the connection does not share,
 * or one not filled, is refused as malformed. Encoder and decoder as the connections use them,
 * the two sides mapping one file as a client and a server do.
 */
@ExtendWith(LeakCheck.class)
class ShmSlotsTest {
  private static final MessageRegistry REG = MessageRegistry.DEFAULT;
  @TempDir
  Path dir;
  private final Counters sender = new Counters();
  private final Counters receiver = new Counters();
  private final Random random = new Random(7);

  /** The client's slots and the server's mapping of the same file. */
  private record Pair(ShmSlots out, ShmSlots in) {}

  private Pair pair(int slots, int slotSize) throws IOException {
    ShmSlots out = ShmSlots.create(dir, slots, slotSize, sender);
    ShmSlots in = ShmSlots.attach(out.path(), out.token(), slots, slotSize, receiver);
    return new Pair(out, in);
  }

  private static EmbeddedChannel encoder(ShmSlots out) {
    EmbeddedChannel ch = new EmbeddedChannel(new FrameEncoder(REG));
    ch.attr(ShmSlots.OUTBOUND).set(out);
    return ch;
  }

  private static EmbeddedChannel decoder(ShmSlots in) {
    FrameDecoder d = new FrameDecoder(REG, 1 << 20);
    if (in != null) {
      d.share(in);
    }
    return new EmbeddedChannel(d);
  }

  /** What the encoder wrote for one message, as one buffer. */
  private static ByteBuf wire(EmbeddedChannel enc) {
    CompositeByteBuf all = Unpooled.compositeBuffer();
    Object o;
    while ((o = enc.readOutbound()) != null) {
      all.addComponent(true, (ByteBuf) o);
    }
    return all;
  }

  private byte[] bytes(int n) {
    byte[] b = new byte[n];
    random.nextBytes(b);
    return b;
  }

  @Test
  void payload_goesThroughASlot_andItsReleaseGivesTheSlotBack() throws IOException {
    Pair p = pair(4, 256 * 1024);
    assertFalse(p.out().hugePages() || p.in().hugePages() || ShmSlots.hugePagesIn(dir), "4 KiB pages where tests run");
    byte[] data = bytes(200_000);
    EmbeddedChannel enc = encoder(p.out());
    enc.writeOutbound(Envelope.oneway(9, new FlowData(Unpooled.wrappedBuffer(data))));
    ByteBuf frame = wire(enc);
    assertTrue(frame.readableBytes() < 64, "the frame names the slot, " + frame.readableBytes() + " bytes");
    assertEquals(1, p.out().busy());

    EmbeddedChannel dec = decoder(p.in());
    dec.writeInbound(frame);
    Envelope env = dec.readInbound();
    FlowData got = (FlowData) env.message();
    assertEquals(9, env.id());
    assertArrayEquals(data, ByteBufUtil.getBytes(got.payload()));
    assertTrue(got.payload().hasMemoryAddress(), "the slot itself, where a direct write can go from");
    assertEquals(0, got.payload().memoryAddress() % ShmSlots.PAGE, "page aligned");
    assertEquals(1, p.out().busy(), "held while the receiver holds the payload");
    got.release();
    assertEquals(0, p.out().busy());
    assertEquals(1, sender.get("shm.sent"));
    assertEquals(200_000, sender.get("shm.sent-bytes"));
    assertEquals(1, receiver.get("shm.received"));
    assertEquals(200_000, receiver.get("shm.received-bytes"));
  }

  @Test
  void requestsAndAnswersWithPayloads_keepTheirOtherFields() throws IOException {
    Pair p = pair(2, 64 * 1024);
    byte[] data = bytes(40_000);
    EmbeddedChannel enc = encoder(p.out());
    EmbeddedChannel dec = decoder(p.in());
    enc.writeOutbound(Envelope.request(3, new WriteReq(Handle.of(1, 77), 1L << 33, Unpooled.wrappedBuffer(data))));
    dec.writeInbound(wire(enc));
    Envelope env = dec.readInbound();
    WriteReq w = (WriteReq) env.message();
    assertEquals(Envelope.Kind.REQUEST, env.kind());
    assertEquals(Handle.of(1, 77), w.handle());
    assertEquals(1L << 33, w.offset());
    assertArrayEquals(data, ByteBufUtil.getBytes(w.payload()));
    w.release();

    enc.writeOutbound(Envelope.response(4, new ReadResp(Unpooled.wrappedBuffer(data))));
    dec.writeInbound(wire(enc));
    ReadResp r = (ReadResp) ((Envelope) dec.readInbound()).message();
    assertArrayEquals(data, ByteBufUtil.getBytes(r.payload()));
    r.release();
    assertEquals(0, p.out().busy());
  }

  @Test
  void noFreeSlot_tooLarge_orSmall_goesInTheFrame() throws IOException {
    Pair p = pair(1, 64 * 1024);
    EmbeddedChannel enc = encoder(p.out());
    EmbeddedChannel dec = decoder(p.in());
    byte[] first = bytes(50_000);
    byte[] second = bytes(50_000);
    byte[] large = bytes(100_000);
    byte[] small = bytes(ShmSlots.MIN_PAYLOAD - 1);
    List<ByteBuf> frames = new ArrayList<>();
    for (byte[] b : List.of(first, second, large, small)) {
      enc.writeOutbound(Envelope.oneway(1, new FlowData(Unpooled.wrappedBuffer(b))));
      frames.add(wire(enc));
    }
    assertTrue(frames.get(0).readableBytes() < 64);
    assertTrue(frames.get(1).readableBytes() > 50_000, "the one slot is taken: the bytes go in the frame");
    assertTrue(frames.get(2).readableBytes() > 100_000);
    assertTrue(frames.get(3).readableBytes() > small.length);
    assertEquals(2, sender.get("shm.full"));
    for (int i = 0; i < 4; i++) {
      dec.writeInbound(frames.get(i));
      FlowData d = (FlowData) ((Envelope) dec.readInbound()).message();
      assertArrayEquals(List.of(first, second, large, small).get(i), ByteBufUtil.getBytes(d.payload()));
      d.release();
    }
    assertEquals(0, p.out().busy());
  }

  @Test
  void takenSlot_filledWhereItIsMade_goesAsItIs() throws IOException {
    Pair p = pair(2, 256 * 1024);
    byte[] data = bytes(200_000);
    ByteBuf slot = p.out().taken(data.length);
    assertEquals(0, slot.memoryAddress() % ShmSlots.PAGE, "page aligned, for a direct read into it");
    assertEquals(256 * 1024, slot.capacity());
    assertEquals(0, slot.readableBytes());
    slot.writeBytes(data); // as a storage thread reads a datafile into it
    assertEquals(1, p.out().busy());
    EmbeddedChannel enc = encoder(p.out());
    enc.writeOutbound(Envelope.oneway(5, new FlowData(slot)));
    ByteBuf frame = wire(enc);
    assertTrue(frame.readableBytes() < 64, "the frame names the slot, " + frame.readableBytes() + " bytes");
    assertEquals(0, slot.refCnt(), "consumed");
    assertEquals(1, p.out().busy(), "the slot went to the peer, not back to the free ones");
    assertEquals(1, sender.get("shm.sent"));
    assertEquals(200_000, sender.get("shm.sent-bytes"));
    EmbeddedChannel dec = decoder(p.in());
    dec.writeInbound(frame);
    Envelope env = dec.readInbound();
    FlowData d = (FlowData) env.message();
    assertEquals(5, env.id());
    assertArrayEquals(data, ByteBufUtil.getBytes(d.payload()));
    d.release();
    assertEquals(0, p.out().busy());
  }

  @Test
  void takenSlot_releasedUnsent_orSentInTheFrame_isFreeAgain() throws IOException {
    Pair p = pair(2, 64 * 1024);
    ByteBuf a = p.out().taken(1000);
    ByteBuf b = p.out().taken(64 * 1024);
    assertNull(p.out().taken(1), "both slots taken");
    assertNull(p.out().taken(64 * 1024 + 1), "larger than a slot");
    a.release(); // a flow that ended before sending it
    assertEquals(1, p.out().busy());
    byte[] small = bytes(ShmSlots.MIN_PAYLOAD - 1);
    b.writeBytes(small);
    EmbeddedChannel enc = encoder(p.out());
    enc.writeOutbound(Envelope.oneway(1, new FlowData(b)));
    ByteBuf frame = wire(enc);
    assertTrue(frame.readableBytes() > small.length, "small: its bytes go in the frame");
    EmbeddedChannel plain = decoder(null);
    plain.writeInbound(frame);
    FlowData d = (FlowData) ((Envelope) plain.readInbound()).message();
    assertArrayEquals(small, ByteBufUtil.getBytes(d.payload()));
    d.release();
    assertEquals(0, p.out().busy(), "once written, its slot is free again");
    p.out().close();
    assertNull(p.out().taken(1), "none after close");
  }

  @Test
  void slotsTakenFromManyThreads_areNeverTheSameTwice() throws Exception {
    Pair p = pair(8, ShmSlots.PAGE);
    java.util.concurrent.atomic.AtomicIntegerArray owned = new java.util.concurrent.atomic.AtomicIntegerArray(8);
    java.util.concurrent.atomic.AtomicInteger twice = new java.util.concurrent.atomic.AtomicInteger();
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      Thread th = new Thread(() -> {
        for (int i = 0; i < 20_000; i++) {
          int s = p.out().take(1);
          if (s < 0) {
            continue;
          }
          if (!owned.compareAndSet(s, 0, 1)) {
            twice.incrementAndGet();
          }
          owned.set(s, 0);
          p.out().cancel(s);
        }
      });
      th.start();
      threads.add(th);
    }
    for (Thread t : threads) {
      t.join();
    }
    assertEquals(0, twice.get(), "a slot handed to two takers at once");
    assertEquals(0, p.out().busy());
  }

  @Test
  void frameNamingASlot_withoutSharedMemory_orNotFilled_isMalformed() throws IOException {
    Pair p = pair(2, 64 * 1024);
    EmbeddedChannel enc = encoder(p.out());
    enc.writeOutbound(Envelope.oneway(1, new FlowData(Unpooled.wrappedBuffer(bytes(20_000)))));
    ByteBuf frame = wire(enc);
    ByteBuf copy = frame.copy();
    ByteBuf forged = frame.copy();
    // a connection that shares no memory
    EmbeddedChannel plain = decoder(null);
    DecoderException e = assertThrows(DecoderException.class, () -> plain.writeInbound(frame));
    assertInstanceOf(MalformedMessageException.class, e.getCause());
    assertNull(plain.readInbound());
    // a slot number past the slots
    forged.setInt(forged.writerIndex() - 4, 99);
    EmbeddedChannel dec = decoder(p.in());
    e = assertThrows(DecoderException.class, () -> dec.writeInbound(forged));
    assertTrue(e.getCause().getMessage().contains("slot 99"), e.getCause().getMessage());
    // a slot the sender did not fill (slot 0 given back already)
    p.out().cancel(0);
    EmbeddedChannel dec2 = decoder(p.in());
    e = assertThrows(DecoderException.class, () -> dec2.writeInbound(copy));
    assertTrue(e.getCause().getMessage().contains("not filled"), e.getCause().getMessage());
  }

  @Test
  void closed_takesNoSlot_andUnmapsAfterTheLastPayload() throws IOException {
    Pair p = pair(2, 64 * 1024);
    byte[] data = bytes(30_000);
    EmbeddedChannel enc = encoder(p.out());
    enc.writeOutbound(Envelope.oneway(1, new FlowData(Unpooled.wrappedBuffer(data))));
    EmbeddedChannel dec = decoder(p.in());
    dec.writeInbound(wire(enc));
    FlowData held = (FlowData) ((Envelope) dec.readInbound()).message();

    p.in().close(); // the server's connection went: the payload it holds keeps the mapping
    assertTrue(p.in().mapped());
    assertArrayEquals(data, ByteBufUtil.getBytes(held.payload()));
    held.release();
    assertFalse(p.in().mapped(), "unmapped with the last payload");

    p.out().close(); // the client's: nothing more goes through a slot
    assertFalse(p.out().mapped());
    assertEquals(-1, p.out().take(100));
    enc.writeOutbound(Envelope.oneway(2, new FlowData(Unpooled.wrappedBuffer(data))));
    ByteBuf frame = wire(enc);
    assertTrue(frame.readableBytes() > data.length, "in the frame");
    EmbeddedChannel plain = decoder(null);
    plain.writeInbound(frame);
    FlowData d = (FlowData) ((Envelope) plain.readInbound()).message();
    assertArrayEquals(data, ByteBufUtil.getBytes(d.payload()));
    d.release();
  }

  @Test
  void frameNamingASlot_afterClose_isMalformed() throws IOException {
    Pair p = pair(2, 64 * 1024);
    EmbeddedChannel enc = encoder(p.out());
    enc.writeOutbound(Envelope.oneway(1, new FlowData(Unpooled.wrappedBuffer(bytes(20_000)))));
    ByteBuf frame = wire(enc);
    EmbeddedChannel dec = decoder(p.in());
    p.in().close();
    DecoderException e = assertThrows(DecoderException.class, () -> dec.writeInbound(frame));
    assertTrue(e.getCause().getMessage().contains("closed"), e.getCause().getMessage());
  }

  @Test
  void attach_refusesAnotherFile() throws IOException {
    ShmSlots out = ShmSlots.create(dir, 2, 64 * 1024, sender);
    byte[] wrong = out.token();
    wrong[0] ^= 1;
    assertThrows(IOException.class, () -> ShmSlots.attach(out.path(), wrong, 2, 64 * 1024, receiver));
    assertThrows(IOException.class, () -> ShmSlots.attach(out.path(), out.token(), 3, 64 * 1024, receiver), "size");
    Path link = dir.resolve("link");
    Files.createSymbolicLink(link, out.path());
    assertThrows(IOException.class, () -> ShmSlots.attach(link, out.token(), 2, 64 * 1024, receiver), "symbolic link");
    assertThrows(IOException.class, () -> ShmSlots.attach(dir.resolve("none"), out.token(), 2, 64 * 1024, receiver));
    assertThrows(IllegalArgumentException.class, () -> ShmSlots.attach(out.path(), out.token(), 2, 1000, receiver));
    out.unlink();
    assertFalse(Files.exists(out.path()));
  }

  /**
   * In a hugetlbfs ({@code node.shm-dir}) the file is whole huge pages, mapped by both sides, and
   * a slot is one piece of memory: what a direct read into it needs.
   */
  @Test
  void hugePages_aFileOfWholePages_itsSlotsHandOverPayloads() throws Exception {
    assumeTrue("root".equals(System.getProperty("user.name")), "mounts a hugetlbfs: needs root");
    try (HugePagePool huge = HugePagePool.mount(dir.resolve("huge"), 2, "")) {
      long free = HugePagePool.available();
      assumeTrue(free >= 1, "the kernel found no huge page to add");
      ShmSlots out = ShmSlots.make(huge.dir(), 4, 256 * 1024, sender);
      ShmSlots in = ShmSlots.attach(out.path(), out.token(), 4, 256 * 1024, receiver);
      try {
        assertEquals(huge.dir(), out.path().getParent());
        assertEquals(2L << 20, Files.size(out.path()), "1 MiB and a header page, in whole huge pages");
        assertEquals(free - 1, HugePagePool.available(), "one huge page taken");
        assertTrue(out.hugePages() && in.hugePages(), "both sides know the slots are in huge pages");
        assertTrue(ShmSlots.hugePagesIn(huge.dir()));
        ByteBuf taken = out.taken(100_000);
        assertTrue(ShmSlots.inHugePages(taken), "a slot taken there is in huge pages");
        taken.release();
        ByteBuf plain = Unpooled.directBuffer(16);
        assertFalse(ShmSlots.inHugePages(plain), "memory of Netty's allocator is not");
        plain.release();
        byte[] data = bytes(200_000);
        int slot = out.put(Unpooled.wrappedBuffer(data));
        ByteBuf got = in.received(slot, data.length);
        assertArrayEquals(data, ByteBufUtil.getBytes(got));
        got.release();
        assertEquals(0, out.busy());
        assertEquals(0, sender.get("shm.dir-full"));
      } finally {
        out.unlink();
        out.close();
        in.close();
      }
    }
  }

  /** A hugetlbfs with too few huge pages for the file: the slots go to /dev/shm, and that is counted. */
  @Test
  void hugePagesTooFew_theSlotsAreInDevShm() throws Exception {
    assumeTrue("root".equals(System.getProperty("user.name")), "mounts a hugetlbfs: needs root");
    try (HugePagePool huge = HugePagePool.mount(dir.resolve("huge"), 0, "size=2M")) {
      ShmSlots out = ShmSlots.make(huge.dir(), 32, 256 * 1024, sender);
      try {
        assertEquals(ShmSlots.DIR, out.path().getParent());
        assertEquals(1, sender.get("shm.dir-full"));
        assertFalse(out.hugePages(), "the slots are in /dev/shm, of 4 KiB pages");
        ByteBuf taken = out.taken(100_000);
        assertFalse(ShmSlots.inHugePages(taken));
        taken.release();
        try (var left = Files.list(huge.dir())) {
          assertEquals(0, left.count(), "nothing left where it failed");
        }
      } finally {
        out.unlink();
        out.close();
      }
    }
  }
}
