package org.flowfs.common.rpc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBufAllocator;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.config.RpcConfig;
import org.flowfs.common.config.Secret;
import org.flowfs.common.wire.CommonOp.AuthChallenge;
import org.flowfs.common.wire.CommonOp.AuthReq;
import org.flowfs.common.wire.CommonOp.AuthResp;
import org.flowfs.common.wire.CommonOp.ErrorResp;
import org.flowfs.common.wire.CommonOp.PingReq;
import org.flowfs.common.wire.CommonOp.PingResp;
import org.flowfs.common.wire.Envelope;
import org.flowfs.common.wire.IoOp.WriteReq;
import org.flowfs.common.wire.LeakCheck;
import org.flowfs.common.wire.MessageRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The membership handshake ({@link Membership}) between {@link RpcServer} and {@link RpcClient}
 * over loopback, and against peers on raw sockets that do not play by it: only a peer that proves
 * the file system's secret gets a request served, and a client only talks to a server that proves
 * it too.
 */
@ExtendWith(LeakCheck.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MembershipTest {
  private static final MessageRegistry REG = MessageRegistry.DEFAULT;
  private static final String SECRET = "membership-test-secret-42";
  private static final String OTHER = "some-other-file-system-secret";
  private static NetRuntime net;
  private final Deque<AutoCloseable> opened = new ArrayDeque<>();
  private final AtomicInteger served = new AtomicInteger();
  private final Counters counters = new Counters();

  @BeforeAll
  static void startLoops() {
    net = NetRuntime.create("membership-test", 2);
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

  @Test
  void proofs_dependOnSecretNoncesServerAndDirection() {
    Membership m = new Membership(Secret.of(SECRET));
    byte[] sn = Membership.nonce();
    byte[] cn = Membership.nonce();
    byte[] p = m.clientProof("metaserver", sn, cn);
    assertEquals(32, p.length);
    assertArrayEquals(p, m.clientProof("metaserver", sn, cn), "deterministic");
    assertFalse(Membership.matches(p, new Membership(Secret.of(OTHER)).clientProof("metaserver", sn, cn)));
    assertFalse(Membership.matches(p, m.clientProof("ioserver 0", sn, cn)));
    assertFalse(Membership.matches(p, m.clientProof("metaserver", Membership.nonce(), cn)));
    assertFalse(Membership.matches(p, m.clientProof("metaserver", sn, Membership.nonce())));
    assertFalse(Membership.matches(p, m.serverProof("metaserver", sn, cn)), "a client proof is no server proof");
    assertFalse(Membership.matches(p, m.clientProof("metaserver", cn, sn)), "nonces are not interchangeable");
    assertFalse(Membership.matches(p, null));
    assertFalse(Membership.matches(p, new byte[31]));
  }

  @Test
  void call_sameSecret_isServed() throws Exception {
    RpcServer s = server(rpc(SECRET, Map.of()));
    RpcClient c = client(s, rpc(SECRET, Map.of()));
    assertEquals(5, c.call(new PingReq(5)).get(5, TimeUnit.SECONDS).sentNanos());
    assertEquals(1, counters.get("connections.authenticated"));
    assertEquals(0, counters.get("connections.unauthenticated"));
  }

  @Test
  void call_wrongSecret_failsWithEaccesNamingTheServer_andOthersAreStillServed() throws Exception {
    RpcServer s = server(rpc(SECRET, Map.of()));
    RpcClient good = client(s, rpc(SECRET, Map.of("rpc.connections", "1")));
    good.call(new PingReq(1)).get(5, TimeUnit.SECONDS);
    RpcClient stranger = client(s, rpc(OTHER, Map.of("rpc.connections", "1")));
    for (int i = 0; i < 3; i++) {
      FsException e = failure(stranger.call(new PingReq(2)));
      assertEquals(Errno.EACCES, e.errno(), e.getMessage());
      assertTrue(e.getMessage().contains("test-server at 127.0.0.1:" + s.boundAddress().getPort()), e.getMessage());
    }
    // a payload the stranger could not send is released
    var payload = ByteBufAllocator.DEFAULT.directBuffer(8).writeLong(1);
    assertEquals(Errno.EACCES, failure(stranger.call(new WriteReq(Handle.of(1, 1), 0, payload))).errno());
    assertEquals(0, payload.refCnt());
    assertEquals(1, served.get(), "nothing of the stranger's was served");
    assertEquals(4, counters.get("connections.auth-failed"));
    assertEquals(3, good.call(new PingReq(3)).get(5, TimeUnit.SECONDS).sentNanos());
  }

  @Test
  void call_serverThatCannotProveTheSecret_isRefusedWithEacces() throws Exception {
    // a fake server: sends a challenge, accepts any proof, but answers with a proof of another secret
    try (ServerSocket ss = new ServerSocket(0, 10, InetAddress.getLoopbackAddress())) {
      CompletableFuture<Boolean> sawRequest = new CompletableFuture<>();
      Thread t = new Thread(() -> {
        try (Socket sock = ss.accept()) {
          sock.setSoTimeout(5000);
          OutputStream out = sock.getOutputStream();
          byte[] sn = Membership.nonce();
          out.write(RawPeer.encode(Envelope.oneway(0, new AuthChallenge("impostor", sn))));
          Envelope q = readFrame(new DataInputStream(sock.getInputStream()));
          AuthReq a = (AuthReq) q.message();
          out.write(RawPeer.encode(Envelope.response(q.id(),
              new AuthResp(new Membership(Secret.of(OTHER)).serverProof("impostor", sn, a.nonce())))));
          // anything after this would be a request the client should never have sent
          try {
            sock.getInputStream().read();
            sawRequest.complete(sock.getInputStream().available() > 0);
          } catch (IOException e) {
            sawRequest.complete(false);
          }
        } catch (IOException e) {
          sawRequest.completeExceptionally(e);
        }
      });
      t.start();
      RpcClient c = new RpcClient("metaserver", net, new InetSocketAddress("127.0.0.1", ss.getLocalPort()),
          rpc(SECRET, Map.of("rpc.connections", "1")), REG);
      opened.push(c);
      FsException e = failure(c.call(new PingReq(1)));
      assertEquals(Errno.EACCES, e.errno(), e.getMessage());
      assertTrue(e.getMessage().contains("could not prove"), e.getMessage());
      assertTrue(e.getMessage().contains("metaserver at 127.0.0.1:" + ss.getLocalPort()), e.getMessage());
      assertFalse(sawRequest.get(10, TimeUnit.SECONDS), "the client sent no request to the impostor");
      t.join(5000);
    }
  }

  @Test
  void call_serverThatNeverChallenges_failsWithEioWithinTheConnectTimeout() throws Exception {
    try (ServerSocket ss = new ServerSocket(0, 10, InetAddress.getLoopbackAddress())) {
      RpcClient c = new RpcClient("ioserver 3", net, new InetSocketAddress("127.0.0.1", ss.getLocalPort()),
          rpc(SECRET, Map.of("rpc.connect-timeout", "300ms", "rpc.connections", "1")), REG);
      opened.push(c);
      long t0 = System.nanoTime();
      FsException e = failure(c.call(new PingReq(1)));
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertEquals(Errno.EIO, e.errno(), e.getMessage());
      assertTrue(e.getMessage().contains("ioserver 3"), e.getMessage());
      assertTrue(e.getMessage().contains("membership handshake"), e.getMessage());
      assertTrue(ms >= 250 && ms < 5000, "failed after " + ms + " ms");
    }
  }

  @Test
  void rawSocket_thatNeverAuthenticates_isClosedAfterTheAuthTimeout() throws Exception {
    RpcServer s = server(rpc(SECRET, Map.of("rpc.auth-timeout", "300ms")));
    try (RawPeer p = RawPeer.connect(s.boundAddress(), 5000)) {
      long t0 = System.nanoTime();
      Envelope first = p.read();
      AuthChallenge c = assertInstanceOf(AuthChallenge.class, first.message(), "the server speaks first");
      assertEquals("test-server", c.server());
      assertEquals(Membership.NONCE, c.nonce().length);
      assertTrue(p.closedByPeer(), "closed");
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertTrue(ms >= 200 && ms < 4000, "closed after " + ms + " ms with a 300 ms auth timeout");
    }
    assertEquals(1, counters.get("connections.auth-timeout"));
  }

  @Test
  void rawSocket_requestsBeforeAuthenticating_areNotServedAndClose() throws Exception {
    RpcServer s = server(rpc(SECRET, Map.of()));
    Map<String, Envelope> early = new HashMap<>();
    early.put("request", Envelope.request(1, new PingReq(1)));
    early.put("one-way", Envelope.oneway(1, new PingReq(1)));
    early.put("response", Envelope.response(1, new PingResp("x", 0, "v", 1)));
    early.put("auth request as one-way", Envelope.oneway(0, new AuthReq(new byte[32], new byte[32])));
    for (Map.Entry<String, Envelope> e : early.entrySet()) {
      try (RawPeer p = RawPeer.connect(s.boundAddress(), 5000)) {
        p.send(e.getValue());
        assertTrue(p.closedByPeer(), e.getKey());
      }
    }
    assertEquals(0, served.get());
    assertEquals(early.size(), counters.get("connections.auth-refused"));
  }

  @Test
  void rawSocket_largeFrameBeforeAuthenticating_isRefusedWithoutBufferingIt() throws Exception {
    RpcServer s = server(rpc(SECRET, Map.of()));
    try (RawPeer p = RawPeer.connect(s.boundAddress(), 5000)) {
      // announces 1 MiB (under max-frame) but is not a member: refused on the length alone
      p.send(new byte[] {0, 0x10, 0, 0, 1, 0, 0, 3});
      assertTrue(p.closedByPeer());
    }
    assertEquals(1, counters.get("connections.malformed"));
    assertEquals(0, served.get());
  }

  @Test
  void rawSocket_wrongOrReplayedProof_isAnsweredEaccesAndClosed() throws Exception {
    RpcServer s = server(rpc(SECRET, Map.of()));
    try (RawPeer p = RawPeer.connect(s.boundAddress(), 5000)) {
      Envelope answer = p.authenticate(Secret.of(OTHER));
      assertEquals(Errno.EACCES.code(), assertInstanceOf(ErrorResp.class, answer.message()).errno());
      assertTrue(p.closedByPeer());
    }
    // a proof that was right on one connection is worth nothing on the next
    byte[] cn = Membership.nonce();
    byte[] proof;
    try (RawPeer p = RawPeer.connect(s.boundAddress(), 5000)) {
      AuthChallenge c = (AuthChallenge) p.read().message();
      proof = new Membership(Secret.of(SECRET)).clientProof(c.server(), c.nonce(), cn);
      p.send(Envelope.request(0, new AuthReq(cn, proof)));
      assertInstanceOf(AuthResp.class, p.read().message());
    }
    try (RawPeer p = RawPeer.connect(s.boundAddress(), 5000)) {
      p.read();
      p.send(Envelope.request(0, new AuthReq(cn, proof)));
      assertInstanceOf(ErrorResp.class, p.read().message());
      assertTrue(p.closedByPeer());
    }
    assertEquals(2, counters.get("connections.auth-failed"));
    assertEquals(1, counters.get("connections.authenticated"));
  }

  @Test
  void rawSocket_requestsRightBehindTheProof_areServed() throws Exception {
    RpcServer s = server(rpc(SECRET, Map.of()));
    try (RawPeer p = RawPeer.connect(s.boundAddress(), 5000)) {
      AuthChallenge c = (AuthChallenge) p.read().message();
      byte[] cn = Membership.nonce();
      byte[] auth = RawPeer.encode(Envelope.request(0,
          new AuthReq(cn, new Membership(Secret.of(SECRET)).clientProof(c.server(), c.nonce(), cn))));
      byte[] ping = RawPeer.encode(Envelope.request(9, new PingReq(9)));
      byte[] both = new byte[auth.length + ping.length];
      System.arraycopy(auth, 0, both, 0, auth.length);
      System.arraycopy(ping, 0, both, auth.length, ping.length);
      p.send(both); // in one segment: the server decodes both in one read
      assertInstanceOf(AuthResp.class, p.read().message());
      Envelope e = p.read();
      assertEquals(9, e.id());
      assertEquals(9, assertInstanceOf(PingResp.class, e.message()).sentNanos());
      // a second proof on an open connection is not something the server serves
      p.send(Envelope.request(10, new AuthReq(cn, new byte[32])));
      assertTrue(p.closedByPeer());
    }
  }

  @Test
  void calls_madeWhileTheConnectionIsMade_goOutInTheOrderMade() throws Exception {
    java.util.List<Long> order = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
    OpTable ops = new OpTable().async(PingReq.class, Access.READ_ONLY, (q, ctx) -> {
      order.add(q.sentNanos());
      return CompletableFuture.completedFuture(new PingResp("r", 0, "v", q.sentNanos()));
    });
    RpcServer s = new RpcServer("test-server", net, new InetSocketAddress("127.0.0.1", 0), ops, rpc(SECRET, Map.of()), REG,
        counters);
    opened.push(s);
    s.start();
    RpcClient c = client(s, rpc(SECRET, Map.of("rpc.connections", "1")));
    java.util.List<CompletableFuture<PingResp>> calls = new java.util.ArrayList<>();
    for (int i = 0; i < 2000; i++) {
      calls.add(c.call(new PingReq(i))); // the first ones wait for the handshake
    }
    for (CompletableFuture<PingResp> f : calls) {
      f.get(10, TimeUnit.SECONDS);
    }
    for (int i = 0; i < 2000; i++) {
      assertEquals(i, order.get(i), "the server saw call " + order.get(i) + " at place " + i);
    }
  }

  @Test
  void config_withoutSecret_cannotMakeAServer() {
    assertThrows(IllegalArgumentException.class, () -> new RpcConfig(java.time.Duration.ofSeconds(1),
        java.time.Duration.ofSeconds(1), 1 << 20, 1, java.time.Duration.ofSeconds(1), null));
  }

  // ---- helpers ------------------------------------------------------------------------------

  private RpcServer server(RpcConfig config) throws IOException {
    OpTable ops = new OpTable().async(PingReq.class, Access.READ_ONLY, (q, ctx) -> {
      served.incrementAndGet();
      return CompletableFuture.completedFuture(new PingResp("r", 0, "v", q.sentNanos()));
    });
    RpcServer s = new RpcServer("test-server", net, new InetSocketAddress("127.0.0.1", 0), ops, config, REG, counters);
    opened.push(s);
    s.start();
    return s;
  }

  private RpcClient client(RpcServer s, RpcConfig config) {
    RpcClient c = new RpcClient("test-server", net,
        InetSocketAddress.createUnresolved("127.0.0.1", s.boundAddress().getPort()), config, REG);
    opened.push(c);
    return c;
  }

  private static RpcConfig rpc(String secret, Map<String, String> keys) {
    Map<String, String> m = new HashMap<>(keys);
    m.put("meta.address", "127.0.0.1:1");
    m.put("io.0.address", "127.0.0.1:2");
    m.put("fs.secret", secret);
    return FlowFsConfig.of(m).rpc();
  }

  private static FsException failure(CompletableFuture<?> f) {
    ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(10, TimeUnit.SECONDS));
    return assertInstanceOf(FsException.class, e.getCause());
  }

  private static Envelope readFrame(DataInputStream in) throws IOException {
    int n = in.readInt();
    byte[] body = new byte[n];
    in.readFully(body);
    var buf = io.netty.buffer.Unpooled.wrappedBuffer(body);
    try {
      return new org.flowfs.common.wire.FrameDecoder(REG, 1 << 20).decodeFrame(buf);
    } finally {
      buf.release();
    }
  }
}
