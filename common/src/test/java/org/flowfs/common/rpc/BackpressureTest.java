package org.flowfs.common.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBufAllocator;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.flowfs.common.Counters;
import org.flowfs.common.Handle;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.config.RpcConfig;
import org.flowfs.common.wire.CommonOp.PingReq;
import org.flowfs.common.wire.CommonOp.PingResp;
import org.flowfs.common.wire.Envelope;
import org.flowfs.common.wire.IoOp.ReadReq;
import org.flowfs.common.wire.IoOp.ReadResp;
import org.flowfs.common.wire.LeakCheck;
import org.flowfs.common.wire.MessageRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A member that sends requests and does not read the answers: the server makes no more answers
 * than the connection can hold, instead of piling them up in memory, and serves the rest once the
 * peer reads again.
 */
@ExtendWith(LeakCheck.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BackpressureTest {
  private static final String SECRET = "backpressure-test-secret";
  private static final int ANSWER = 64 * 1024;
  private static NetRuntime net;

  @BeforeAll
  static void startLoops() {
    net = NetRuntime.create("backpressure-test", 2);
  }

  @AfterAll
  static void stopLoops() {
    net.close();
  }

  @Test
  void server_peerThatDoesNotRead_getsNoMoreAnswersMadeThanTheConnectionHolds() throws Exception {
    AtomicInteger served = new AtomicInteger();
    OpTable ops = new OpTable()
        .async(ReadReq.class, Access.READ_ONLY, (q, ctx) -> {
          served.incrementAndGet();
          return CompletableFuture.completedFuture(new ReadResp(ByteBufAllocator.DEFAULT.directBuffer(ANSWER).writeZero(ANSWER)));
        })
        .async(PingReq.class, Access.READ_ONLY, (q, ctx) -> CompletableFuture.completedFuture(new PingResp("r", 0, "v", 0)));
    Map<String, String> m = new HashMap<>();
    m.put("fs.secret", SECRET);
    m.put("meta.address", "127.0.0.1:1");
    m.put("io.0.address", "127.0.0.1:2");
    RpcConfig config = FlowFsConfig.of(m).rpc();
    try (RpcServer s = new RpcServer("server", net, new InetSocketAddress("127.0.0.1", 0), ops, config,
        MessageRegistry.DEFAULT, new Counters())) {
      s.start();
      int n = 3000; // 190 MiB of answers
      try (RawPeer p = RawPeer.connect(s.boundAddress(), 30_000, 64 * 1024)) {
        p.authenticate(org.flowfs.common.config.Secret.of(SECRET));
        OutputStream out = p.socket().getOutputStream();
        byte[] one = RawPeer.encode(Envelope.request(1, new ReadReq(Handle.of(1, 1), 0, ANSWER)));
        for (int i = 0; i < n; i++) {
          out.write(one);
        }
        out.flush();
        Thread.sleep(1000);
        int made = served.get();
        assertTrue(made < 600, made + " answers of " + ANSWER + " bytes made for a peer that reads none");
        // once it reads, everything is answered
        int got = 0;
        while (got < n) {
          Envelope e = p.read();
          assertTrue(e.message() instanceof ReadResp, e.toString());
          got++;
        }
        assertEquals(n, served.get());
        System.out.printf("backpressure: %d of %d answers made while the peer read nothing%n", made, n);
      } catch (IOException e) {
        throw new AssertionError(e);
      }
    }
  }
}
