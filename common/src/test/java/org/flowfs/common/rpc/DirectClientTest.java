package org.flowfs.common.rpc;

import static org.flowfs.common.rpc.RpcTest.rpc;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.NamedThreads;
import org.flowfs.common.config.RpcConfig;
import org.flowfs.common.wire.CommonOp.PingReq;
import org.flowfs.common.wire.CommonOp.PingResp;
import org.flowfs.common.wire.IoOp.ReadReq;
import org.flowfs.common.wire.IoOp.ReadResp;
import org.flowfs.common.wire.IoOp.WriteReq;
import org.flowfs.common.wire.IoOp.WriteResp;
import org.flowfs.common.wire.LeakCheck;
import org.flowfs.common.wire.MessageRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link DirectClient} against a real {@link RpcServer} over loopback: answers, errnos, payloads,
 * concurrency, and every way a call can fail without an answer, each with the stage that tells a
 * caller whether it may send again. Everything a test opens is closed after it.
 */
@ExtendWith(LeakCheck.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DirectClientTest {
  private static final MessageRegistry REG = MessageRegistry.DEFAULT;
  private static final Handle H = Handle.of(1, 5);
  private static NetRuntime net;
  private final Deque<AutoCloseable> opened = new ArrayDeque<>();

  @BeforeAll
  static void startLoops() {
    net = NetRuntime.create("direct-test", 2);
  }

  @AfterAll
  static void stopLoops() {
    net.close();
  }

  @AfterEach
  void closeAll() throws Exception {
    while (!opened.isEmpty()) {
      opened.pop().close();
    }
  }

  private static OpTable pings() {
    return new OpTable().async(PingReq.class, Access.READ_ONLY, (q, ctx) -> {
      if (q.sentNanos() == -9) {
        throw new FsException(Errno.EPROTO, "a protocol error the server reports");
      }
      if (q.sentNanos() < 0) {
        throw new FsException(Errno.ENOENT, "no such ping " + q.sentNanos());
      }
      return CompletableFuture.completedFuture(new PingResp("direct", 3, "v", q.sentNanos() * 2));
    });
  }

  @Test
  void sequentialCalls_oneConnection_errnosKeepIt() throws Exception {
    Counters counters = new Counters();
    RpcServer s = server(pings(), rpc(Map.of()), counters, 0);
    DirectClient c = client(s, rpc(Map.of()));
    for (long i = 0; i < 200; i++) {
      assertEquals(2 * i, c.call(new PingReq(i)).sentNanos());
    }
    FsException e = assertThrows(FsException.class, () -> c.call(new PingReq(-7)));
    assertEquals(Errno.ENOENT, e.errno());
    assertTrue(e.getMessage().contains("no such ping -7"), e.getMessage());
    assertEquals(null, CallFailure.stageOf(e), "an answer, not a failed call");
    FsException proto = assertThrows(FsException.class, () -> c.call(new PingReq(-9)));
    assertEquals(Errno.EPROTO, proto.errno(), "the server's errno, as it sent it");
    assertEquals(8, c.call(new PingReq(4)).sentNanos());
    assertEquals(1, c.opened());
    assertEquals(1L, counters.snapshot().get("connections.authenticated"));
  }

  @Test
  void concurrentCallers_eachGetsItsOwnAnswers_connectionsBoundedByCallers() throws Exception {
    RpcServer s = server(pings(), rpc(Map.of()), new Counters(), 0);
    DirectClient c = client(s, rpc(Map.of()));
    ExecutorService callers = NamedThreads.pool("direct-callers", 8);
    opened.push(() -> NamedThreads.shutdown(callers, 2000));
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < 8; t++) {
      long base = t * 1_000_000L;
      done.add(callers.submit(() -> {
        for (long i = 0; i < 300; i++) {
          assertEquals(2 * (base + i), c.call(new PingReq(base + i)).sentNanos());
        }
        return null;
      }));
    }
    for (Future<?> f : done) {
      f.get(30, TimeUnit.SECONDS);
    }
    assertTrue(c.opened() >= 1 && c.opened() <= 8, c.opened() + " connections for 8 callers");
  }

  @Test
  void payloads_travelBothWaysIntactAndAreReleased() throws Exception {
    ExecutorService pool = NamedThreads.pool("direct-io", 2);
    opened.push(() -> NamedThreads.shutdown(pool, 2000));
    OpTable ops = RpcTest.payloadOps(pool);
    DirectClient c = client(server(ops, rpc(Map.of()), new Counters(), 0), rpc(Map.of()));
    Random r = new Random(4);
    // larger than socket buffers: writes and reads take several system calls
    for (int size : new int[] {0, 1, 4095, 65536, (4 << 20) + 17}) {
      byte[] data = new byte[size];
      r.nextBytes(data);
      ByteBuf payload = ByteBufAllocator.DEFAULT.directBuffer(size).writeBytes(data);
      CRC32 crc = new CRC32();
      crc.update(data);
      assertEquals(new WriteResp(size, crc.getValue() ^ (1000 + size)), c.call(new WriteReq(H, 1000 + size, payload)));
      assertEquals(0, payload.refCnt(), "the request's payload was consumed");
      ReadResp rr = c.call(new ReadReq(H, 77L * size, size));
      try {
        byte[] got = ByteBufUtil.getBytes(rr.payload());
        assertEquals(size, got.length);
        for (int i = 0; i < size; i++) {
          if ((got[i] & 0xFF) != RpcTest.pattern(77L * size + i)) {
            fail("byte " + i + " of a read of " + size);
          }
        }
      } finally {
        rr.release();
      }
    }
    assertEquals(1, c.opened());
  }

  @Test
  void serverNeverAnswers_timedOutWithinTheTimeout_connectionDropped() throws Exception {
    OpTable ops = new OpTable().async(PingReq.class, Access.READ_ONLY,
        (q, ctx) -> q.sentNanos() == 1 ? new CompletableFuture<>() : CompletableFuture.completedFuture(new PingResp("d", 0, "v", 0)));
    DirectClient c = client(server(ops, rpc(Map.of()), new Counters(), 0), rpc(Map.of("rpc.timeout", "300ms")));
    c.call(new PingReq(0));
    long t0 = System.nanoTime();
    FsException e = assertThrows(FsException.class, () -> c.call(new PingReq(1)));
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    assertEquals(Errno.EIO, e.errno());
    assertEquals(CallFailure.Stage.TIMED_OUT, CallFailure.stageOf(e));
    assertTrue(e.getMessage().contains("did not answer PingReq within 300 ms"), e.getMessage());
    assertTrue(ms >= 250 && ms < 3000, "failed after " + ms + " ms with a 300 ms timeout");
    // its late answer can never be taken for another call's: the next call has a new connection
    assertEquals(0, c.call(new PingReq(2)).sentNanos());
    assertEquals(2, c.opened());
  }

  @Test
  void interruptedCaller_eintrAtOnce_connectionDropped() throws Exception {
    OpTable ops = new OpTable().async(PingReq.class, Access.READ_ONLY,
        (q, ctx) -> q.sentNanos() == 1 ? new CompletableFuture<>() : CompletableFuture.completedFuture(new PingResp("d", 0, "v", 5)));
    DirectClient c = client(server(ops, rpc(Map.of()), new Counters(), 0), rpc(Map.of("rpc.timeout", "20s")));
    c.call(new PingReq(0));
    CompletableFuture<FsException> failed = new CompletableFuture<>();
    Thread caller = new Thread(() -> {
      try {
        c.call(new PingReq(1));
        failed.complete(null);
      } catch (FsException e) {
        failed.complete(e);
      }
    }, "direct-interrupted");
    caller.start();
    Thread.sleep(200); // waiting for the answer that never comes
    long t0 = System.nanoTime();
    caller.interrupt();
    FsException e = failed.get(5, TimeUnit.SECONDS);
    assertEquals(Errno.EINTR, e.errno());
    assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(2), "not after the 20 s timeout");
    // the unanswered connection is not handed to the next caller
    assertEquals(5, c.call(new PingReq(2)).sentNanos());
    assertEquals(2, c.opened());
  }

  @Test
  void refusedConnection_notSentEioNamingTheAddress_fast() throws Exception {
    int port;
    try (ServerSocket ss = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = ss.getLocalPort();
    }
    DirectClient c = new DirectClient("nobody", InetSocketAddress.createUnresolved("127.0.0.1", port), rpc(Map.of()), REG);
    opened.push(c);
    long t0 = System.nanoTime();
    FsException e = assertThrows(FsException.class, () -> c.call(new PingReq(1)));
    assertEquals(Errno.EIO, e.errno());
    assertEquals(CallFailure.Stage.NOT_SENT, CallFailure.stageOf(e));
    assertTrue(e.getMessage().contains("127.0.0.1:" + port), e.getMessage());
    assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(2), "a refused connection fails fast");
    ByteBuf payload = ByteBufAllocator.DEFAULT.directBuffer(8).writeLong(1);
    assertThrows(FsException.class, () -> c.call(new WriteReq(H, 0, payload)));
    assertEquals(0, payload.refCnt(), "a payload that never left is released");
  }

  @Test
  void serverRestart_keptConnectionNoticedClosed_nextCallGoesThroughOnANewOne() throws Exception {
    RpcServer first = server(pings(), rpc(Map.of()), new Counters(), 0);
    InetSocketAddress bound = first.boundAddress();
    DirectClient c = client(first, rpc(Map.of("rpc.timeout", "2s")));
    assertEquals(2, c.call(new PingReq(1)).sentNanos());
    first.close();
    FsException down = assertThrows(FsException.class, () -> c.call(new PingReq(2)));
    assertEquals(CallFailure.Stage.NOT_SENT, CallFailure.stageOf(down), "the kept connection was seen closed, not used");
    server(pings(), rpc(Map.of()), new Counters(), bound.getPort());
    assertEquals(6, c.call(new PingReq(3)).sentNanos());
    assertEquals(2, c.opened());
  }

  @Test
  void wrongSecret_eaccesNamingTheKey() throws Exception {
    RpcServer s = server(pings(), rpc(Map.of()), new Counters(), 0);
    DirectClient c = client(s, rpc(Map.of("fs.secret", "another-secret-of-this-length")));
    FsException e = assertThrows(FsException.class, () -> c.call(new PingReq(1)));
    assertEquals(Errno.EACCES, e.errno());
    assertTrue(e.getMessage().contains("fs.secret"), e.getMessage());
  }

  @Test
  void peerThatNeverChallenges_notSentWithinTheConnectTimeout() throws Exception {
    try (ServerSocket silent = new ServerSocket(0, 4, java.net.InetAddress.getLoopbackAddress())) {
      DirectClient c = new DirectClient("silent", InetSocketAddress.createUnresolved("127.0.0.1", silent.getLocalPort()),
          rpc(Map.of("rpc.connect-timeout", "300ms")), REG);
      opened.push(c);
      long t0 = System.nanoTime();
      FsException e = assertThrows(FsException.class, () -> c.call(new PingReq(1)));
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertEquals(CallFailure.Stage.NOT_SENT, CallFailure.stageOf(e));
      assertTrue(ms >= 250 && ms < 3000, "gave up after " + ms + " ms with a 300 ms connect timeout");
    }
  }

  @Test
  void garbageAnswer_lostEio_andTheNextCallUsesAFreshConnection() throws Exception {
    // a peer that does the handshake like a server would, then answers a request with garbage
    RpcConfig cfg = rpc(Map.of());
    try (ServerSocket ss = new ServerSocket(0, 4, java.net.InetAddress.getLoopbackAddress())) {
      RpcServer real = server(pings(), cfg, new Counters(), 0);
      DirectClient c = new DirectClient("odd", InetSocketAddress.createUnresolved("127.0.0.1", ss.getLocalPort()), cfg, REG);
      opened.push(c);
      Thread relay = new Thread(() -> relayThenGarbage(ss, real.boundAddress().getPort()), "odd-peer");
      relay.setDaemon(true);
      relay.start();
      FsException e = assertThrows(FsException.class, () -> c.call(new PingReq(1)));
      assertEquals(Errno.EIO, e.errno());
      assertEquals(CallFailure.Stage.LOST, CallFailure.stageOf(e), e.getMessage());
      relay.join(5000);
    }
  }

  /**
   * Accepts one connection and relays it to the real server until the client's first request
   * after the handshake; answers that with a frame of an unknown type instead.
   */
  private static void relayThenGarbage(ServerSocket ss, int realPort) {
    try (Socket client = ss.accept(); Socket server = new Socket("127.0.0.1", realPort)) {
      InputStream fromServer = server.getInputStream();
      InputStream fromClient = client.getInputStream();
      client.getOutputStream().write(readFrame(fromServer)); // the challenge
      server.getOutputStream().write(readFrame(fromClient)); // the proof
      client.getOutputStream().write(readFrame(fromServer)); // the server's proof
      readFrame(fromClient); // the request: never forwarded
      client.getOutputStream().write(new byte[] {0, 0, 0, 12, 1, 2, (byte) 0x7f, (byte) 0xff, 0, 0, 0, 0, 0, 0, 0, 1});
      client.getOutputStream().flush();
      fromClient.read(); // until the client closes
    } catch (IOException e) {
      // the test's assertions tell what went wrong
    }
  }

  private static byte[] readFrame(InputStream in) throws IOException {
    byte[] len = in.readNBytes(4);
    int n = ((len[0] & 0xFF) << 24) | ((len[1] & 0xFF) << 16) | ((len[2] & 0xFF) << 8) | (len[3] & 0xFF);
    byte[] all = new byte[4 + n];
    System.arraycopy(len, 0, all, 0, 4);
    System.arraycopy(in.readNBytes(n), 0, all, 4, n);
    return all;
  }

  @Test
  void close_refusesNewCalls() throws Exception {
    RpcServer s = server(pings(), rpc(Map.of()), new Counters(), 0);
    DirectClient c = client(s, rpc(Map.of()));
    c.call(new PingReq(1));
    c.close();
    FsException e = assertThrows(FsException.class, () -> c.call(new PingReq(2)));
    assertEquals(CallFailure.Stage.NOT_SENT, CallFailure.stageOf(e));
    assertTrue(e.getMessage().contains("closed"), e.getMessage());
  }

  // ---- helpers --------------------------------------------------------------------------------

  private RpcServer server(OpTable ops, RpcConfig config, Counters counters, int port) throws IOException {
    RpcServer s = new RpcServer("direct-test-server", net, new InetSocketAddress("127.0.0.1", port), ops, config, REG, counters);
    opened.push(s);
    s.start();
    return s;
  }

  private DirectClient client(RpcServer s, RpcConfig config) {
    DirectClient c = new DirectClient("direct-test-server",
        InetSocketAddress.createUnresolved("127.0.0.1", s.boundAddress().getPort()), config, REG);
    opened.push(c);
    return c;
  }
}
