package org.flowfs.meta;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.rpc.Access;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.rpc.OpTable;
import org.flowfs.common.rpc.RpcClient;
import org.flowfs.common.rpc.RpcServer;
import org.flowfs.common.wire.CommonOp.OkResp;
import org.flowfs.common.wire.HasPayload;
import org.flowfs.common.wire.IoOp.DataRemoveReq;
import org.flowfs.common.wire.IoOp.HandlesResp;
import org.flowfs.common.wire.IoOp.PrecreateReq;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.MessageRegistry;
import org.flowfs.common.wire.Req;

/**
 * A test fixture: a metadata server on loopback over one stand-in I/O server that only hands out
 * datafile handles and takes removals (it records the handles removed), and clients of it over
 * real sockets. Closes all of them.
 */
final class LoopbackMetaServer implements AutoCloseable {
  private final ConcurrentLinkedQueue<Handle> removed = new ConcurrentLinkedQueue<>();
  private final RpcServer io;
  private final MetaServer server;
  /** Opens a connection to the metadata server. */
  private final Supplier<RpcClient> connect;
  private final List<RpcClient> clients = new ArrayList<>();

  /** Starts both servers; {@code dir} holds the store; regular files get {@code headBytes} of head. */
  LoopbackMetaServer(NetRuntime net, Path dir, int headBytes, Duration leaseTerm) throws IOException {
    this(net, dir, headBytes, leaseTerm, leaseTerm);
  }

  /** As above; an expired lease's unused reservations are kept for {@code grace}. */
  LoopbackMetaServer(NetRuntime net, Path dir, int headBytes, Duration leaseTerm, Duration grace) throws IOException {
    Map<String, String> keys = Map.of(
        "fs.secret", "metaserver-test-secret-0123",
        "meta.address", "127.0.0.1:0",
        "meta.dir", dir.toString(),
        "io.0.address", "127.0.0.1:0",
        "layout.head-bytes", Integer.toString(headBytes),
        "rpc.timeout", "10s");
    io = standInIoServer(net, FlowFsConfig.of(keys));
    Map<String, String> withIo = new HashMap<>(keys);
    withIo.put("io.0.address", "127.0.0.1:" + io.start().getPort());
    FlowFsConfig config = FlowFsConfig.of(withIo);
    server = MetaServer.open(config, net, leaseTerm, grace);
    InetSocketAddress address = InetSocketAddress.createUnresolved("127.0.0.1", server.start().getPort());
    connect = () -> new RpcClient("metaserver", net, address, config.rpc(), MessageRegistry.DEFAULT);
  }

  /** Answers precreates with fresh handles of I/O server 0, and removals with OK. */
  private RpcServer standInIoServer(NetRuntime net, FlowFsConfig config) {
    AtomicLong next = new AtomicLong(1);
    OpTable ops = new OpTable();
    ops.async(PrecreateReq.class, Access.MODIFY, (q, ctx) -> {
      List<Handle> hs = new ArrayList<>();
      for (int i = 0; i < q.count(); i++) {
        hs.add(Handle.of(Handle.serverOfIo(0), next.getAndIncrement()));
      }
      return CompletableFuture.completedFuture(new HandlesResp(hs));
    });
    ops.async(DataRemoveReq.class, Access.MODIFY, (q, ctx) -> {
      removed.addAll(q.handles());
      return CompletableFuture.completedFuture(OkResp.INSTANCE);
    });
    return new RpcServer("ioserver", net, new InetSocketAddress("127.0.0.1", 0), ops, config.rpc(),
        MessageRegistry.DEFAULT, new Counters());
  }

  MetaServer server() {
    return server;
  }

  /** The datafiles the I/O server was asked to remove so far. */
  List<Handle> removed() {
    return List.copyOf(removed);
  }

  /** A new client on a connection of its own. */
  RpcClient client() {
    RpcClient c = connect.get();
    clients.add(c);
    return c;
  }

  static <R extends Message> R call(RpcClient client, Req<R> req) throws Exception {
    return client.call(req).get(10, TimeUnit.SECONDS);
  }

  /** The errno a request fails with (an unexpected answer is released before the test fails). */
  static Errno errno(RpcClient client, Req<?> req) throws Exception {
    Object answer;
    try {
      answer = client.call(req).get(10, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      return assertInstanceOf(FsException.class, e.getCause()).errno();
    }
    if (answer instanceof HasPayload p) {
      p.release();
    }
    return fail(req + " succeeded: " + answer);
  }

  @Override
  public void close() {
    clients.forEach(RpcClient::close);
    server.close();
    io.close();
  }
}
