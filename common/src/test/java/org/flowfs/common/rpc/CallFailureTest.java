package org.flowfs.common.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.config.RpcConfig;
import org.flowfs.common.wire.MessageRegistry;
import org.flowfs.common.wire.MetaOp.GetattrReq;
import org.flowfs.common.wire.MetaOp.LookupReq;
import org.flowfs.common.wire.MetaOp.ReadlinkReq;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Every way a call fails without an answer carries its {@link CallFailure.Stage}; answers carry none. */
class CallFailureTest {
  private final NetRuntime net = NetRuntime.create("call-failure-test", 1);
  private RpcServer server;
  private RpcClient client;

  @AfterEach
  void close() {
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.close();
    }
    net.close();
  }

  private static RpcConfig rpc() {
    return FlowFsConfig.parse("test", "fs.secret = call-failure-test-secret-0123456789\n"
        + "meta.address = 127.0.0.1:1\nio.0.address = 127.0.0.1:2\nrpc.connect-timeout = 1s\n").rpc();
  }

  /** Serves getattr by dropping the connection, readlink never, lookup with ENOENT. */
  private InetSocketAddress serve() throws IOException {
    OpTable ops = new OpTable();
    ops.async(GetattrReq.class, Access.READ_ONLY, (q, ctx) -> {
      ctx.channel().close();
      return new CompletableFuture<>();
    });
    ops.async(ReadlinkReq.class, Access.READ_ONLY, (q, ctx) -> new CompletableFuture<>());
    ops.async(LookupReq.class, Access.READ_ONLY, (q, ctx) -> CompletableFuture.failedFuture(new FsException(Errno.ENOENT, "x")));
    server = new RpcServer("test", net, new InetSocketAddress("127.0.0.1", 0), ops, rpc(), MessageRegistry.DEFAULT, new Counters());
    return server.start();
  }

  private static Throwable failure(CompletableFuture<?> f) {
    ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(10, TimeUnit.SECONDS));
    return e.getCause();
  }

  @Test
  void call_serverRefusesConnection_notSent() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    client = new RpcClient("nobody", net, new InetSocketAddress("127.0.0.1", port), rpc(), MessageRegistry.DEFAULT);
    Throwable t = failure(client.call(new GetattrReq(Handle.ROOT)));
    assertEquals(Errno.EIO, Errno.from(t));
    assertEquals(CallFailure.Stage.NOT_SENT, CallFailure.stageOf(t));
  }

  @Test
  void call_connectionDropsBeforeAnswer_lost() throws Exception {
    client = new RpcClient("test", net, serve(), rpc(), MessageRegistry.DEFAULT);
    Throwable t = failure(client.call(new GetattrReq(Handle.ROOT)));
    assertEquals(Errno.EIO, Errno.from(t));
    assertEquals(CallFailure.Stage.LOST, CallFailure.stageOf(t));
  }

  @Test
  void call_noAnswerInTime_timedOut() throws Exception {
    client = new RpcClient("test", net, serve(), rpc(), MessageRegistry.DEFAULT);
    Throwable t = failure(client.call(new ReadlinkReq(Handle.ROOT), Duration.ofMillis(200)));
    assertEquals(CallFailure.Stage.TIMED_OUT, CallFailure.stageOf(t));
  }

  @Test
  void call_serverAnswersErrno_noStage() throws Exception {
    client = new RpcClient("test", net, serve(), rpc(), MessageRegistry.DEFAULT);
    Throwable t = failure(client.call(new LookupReq(Handle.ROOT, "x")));
    assertEquals(Errno.ENOENT, Errno.from(t));
    assertNull(CallFailure.stageOf(t));
  }
}
