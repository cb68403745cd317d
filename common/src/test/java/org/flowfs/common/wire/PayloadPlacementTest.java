package org.flowfs.common.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.util.internal.PlatformDependent;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.wire.CommonOp.PingReq;
import org.flowfs.common.wire.IoOp.FlowData;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Payload placement over a real loopback connection: large flow payloads arrive in one run of
 * memory, each byte at an address congruent to its index modulo the page, whatever the sender's
 * write sizes; everything decodes as without placement, and nothing is held after the connection
 * goes.
 */
@ExtendWith(LeakCheck.class)
class PayloadPlacementTest {
  private static final int MIN = 128 * 1024;
  private final BlockingQueue<Object> received = new LinkedBlockingQueue<>();
  private final List<PayloadPlacement> placements = new ArrayList<>();
  private NetRuntime net;
  private Channel server;

  /** A FlowData as it arrived: its bytes, and where its placed run of memory begins (-1: none). */
  record Arrived(byte[] bytes, int runFrom) {}

  @BeforeEach
  void up() {
    net = NetRuntime.create("placement-test", 1);
    server = new ServerBootstrap().group(net.group()).channel(net.serverChannelType())
        .childOption(ChannelOption.RCVBUF_ALLOCATOR, NetRuntime.SERVER_RECEIVE_BUFFERS)
        .childHandler(new ChannelInitializer<Channel>() {
          @Override
          protected void initChannel(Channel ch) {
            FrameDecoder frames = new FrameDecoder(MessageRegistry.DEFAULT, 8 << 20);
            PayloadPlacement p = new PayloadPlacement(NetRuntime.SERVER_RECEIVE_BUFFERS, NetRuntime.SERVER_READ_MAX);
            synchronized (placements) {
              placements.add(p);
            }
            ch.config().setRecvByteBufAllocator(p);
            frames.placePayloads(p, FlowData.class, MIN);
            ch.pipeline().addLast(frames, new ChannelInboundHandlerAdapter() {
              @Override
              public void channelRead(ChannelHandlerContext ctx, Object msg) {
                Envelope env = (Envelope) msg;
                if (env.message() instanceof FlowData d) {
                  try {
                    received.add(new Arrived(ByteBufUtil.getBytes(d.payload()), placedFrom(d.payload())));
                  } finally {
                    d.release();
                  }
                } else {
                  received.add(env.message());
                }
              }
            });
          }
        }).bind(new InetSocketAddress("127.0.0.1", 0)).syncUninterruptibly().channel();
  }

  @AfterEach
  void down() {
    server.close().syncUninterruptibly();
    net.close();
  }

  /**
   * Where in {@code payload} the run of memory that holds its end begins, if that run is placed
   * (every byte at an address congruent to its index modulo the page); -1 if it is not.
   */
  static int placedFrom(ByteBuf payload) {
    ByteBuffer[] parts = payload.nioBuffers();
    int end = payload.readableBytes();
    int from = end;
    long next = -1;
    for (int i = parts.length - 1; i >= 0; i--) {
      long addr = PlatformDependent.directBufferAddress(parts[i]) + parts[i].position();
      if (next >= 0 && addr + parts[i].remaining() != next) {
        break;
      }
      from -= parts[i].remaining();
      next = addr;
    }
    return ((next - from) & (PayloadPlacement.PAGE - 1)) == 0 ? from : -1;
  }

  private static byte[] frame(Message m) {
    FrameEncoder.Frame f = new FrameEncoder(MessageRegistry.DEFAULT).encode(Envelope.oneway(7, m), ByteBufAllocator.DEFAULT);
    try {
      byte[] head = ByteBufUtil.getBytes(f.header());
      if (f.payload() == null) {
        return head;
      }
      byte[] all = new byte[head.length + f.payload().readableBytes()];
      System.arraycopy(head, 0, all, 0, head.length);
      f.payload().getBytes(f.payload().readerIndex(), all, head.length, f.payload().readableBytes());
      return all;
    } finally {
      f.header().release();
      if (f.payload() != null) {
        f.payload().release();
      }
    }
  }

  private static byte[] bytes(int seed, int n) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  private Socket connect() throws Exception {
    Socket s = new Socket();
    s.setTcpNoDelay(true);
    s.connect(server.localAddress());
    return s;
  }

  /** Writes {@code b} in pieces of random sizes (some a few bytes), flushing each. */
  private static void dribble(OutputStream out, byte[] b, Random r) throws Exception {
    for (int at = 0; at < b.length; ) {
      int n = Math.min(b.length - at, r.nextInt(4) == 0 ? 1 + r.nextInt(30) : 1 + r.nextInt(200_000));
      out.write(b, at, n);
      out.flush();
      at += n;
    }
  }

  private Arrived nextFlowData() throws Exception {
    Object o = received.poll(10, TimeUnit.SECONDS);
    assertNotNull(o, "nothing arrived");
    return (Arrived) o;
  }

  @Test
  void largePayloads_arriveInOnePlacedRun_andDecodeAsSent() throws Exception {
    int[] sizes = {256 * 1024, 256 * 1024, 1 << 20, 300_001, 16 * 1024, 200_000, 3 << 20, 131_072};
    Random r = new Random(42);
    try (Socket s = connect()) {
      OutputStream out = s.getOutputStream();
      for (int round = 0; round < 3; round++) {
        dribble(out, frame(new PingReq(round)), r);
        byte[][] sent = new byte[sizes.length][];
        for (int i = 0; i < sizes.length; i++) {
          sent[i] = bytes(round * 100 + i, sizes[i]);
          ByteBuf payload = Unpooled.wrappedBuffer(sent[i]);
          byte[] f = frame(new FlowData(payload));
          if (round == 0) {
            out.write(f); // whole frames at once
            out.flush();
          } else {
            dribble(out, f, r);
          }
        }
        assertEquals(new PingReq(round), received.poll(10, TimeUnit.SECONDS));
        for (int i = 0; i < sizes.length; i++) {
          Arrived a = nextFlowData();
          assertArrayEquals(sent[i], a.bytes(), "payload " + i + " of round " + round);
          if (sizes[i] < MIN) {
            continue;
          }
          assertTrue(a.runFrom() >= 0, "payload " + i + " of round " + round + " has a placed run");
          // after a small message the first read may bring part of the payload; after a placed
          // frame the next header is read on its own and all of the next payload is placed
          boolean afterPlaced = i > 0 && sizes[i - 1] >= MIN;
          if (afterPlaced) {
            assertEquals(0, a.runFrom(), "payload " + i + " of round " + round + " placed from its first byte");
          } else {
            assertTrue(a.runFrom() <= NetRuntime.SERVER_READ_MAX, "placed from " + a.runFrom());
          }
        }
      }
    }
  }

  @Test
  void connectionClosedInTheMiddleOfAPlacedPayload_holdsNothing() throws Exception {
    try (Socket s = connect()) {
      byte[] f = frame(new FlowData(Unpooled.wrappedBuffer(bytes(1, 1 << 20))));
      s.getOutputStream().write(f, 0, PayloadPlacement.HEADER + 300_000);
      s.getOutputStream().flush();
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (!placing()) {
        assertTrue(System.nanoTime() < until, "the payload was never placed");
        Thread.sleep(5);
      }
    }
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (placing()) {
      assertTrue(System.nanoTime() < until, "the region was kept after the connection closed");
      Thread.sleep(5);
    }
    assertFalse(placing());
    assertTrue(received.isEmpty(), "an incomplete frame is not delivered");
  }

  /** Whether a connection's placement is filling a region (read on the event loop). */
  private boolean placing() throws Exception {
    return net.group().submit(() -> {
      synchronized (placements) {
        return placements.stream().anyMatch(PayloadPlacement::placing);
      }
    }).get();
  }
}
