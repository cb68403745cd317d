package org.flowfs.common.flow;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.flowfs.common.Counters;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.config.RpcConfig;
import org.flowfs.common.dist.Distribution;
import org.flowfs.common.dist.Distributions;
import org.flowfs.common.dist.SimpleStripe;
import org.flowfs.common.request.FileData;
import org.flowfs.common.request.Request;
import org.flowfs.common.rpc.Access;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.rpc.OpTable;
import org.flowfs.common.rpc.RpcClient;
import org.flowfs.common.rpc.RpcServer;
import org.flowfs.common.wire.IoOp.FlowAck;
import org.flowfs.common.wire.IoOp.FlowReq;
import org.flowfs.common.wire.MessageRegistry;
import org.flowfs.common.wire.RequestSpec;

/**
 * A client and {@code n} I/O servers over loopback, each end with its own {@link FlowInterface}
 * running one protocol, doing the handshake the way {@code IoServer} and {@code FlowDataPath} do:
 * the client sends a {@link FlowReq} on a conduit; the server posts its flow between the
 * connection and a {@link MemFlowStorage} and answers {@link FlowAck}; for a write the client
 * posts its memory-to-network flow where it reads the ack, for a read its network-to-memory flow
 * before the request. One-way frames at both ends go to {@link FlowInterface#deliver}.
 *
 * <p>Server {@code i} keeps the file's datafile {@link #handle(int)}. Buffers from {@link
 * #buffer} are released by {@link #close}, after every flow interface has stopped, so a test that
 * fails half-way still cleans up.
 */
final class FlowPair implements AutoCloseable {
  private static final AtomicInteger PAIRS = new AtomicInteger();
  static final Duration WAIT = Duration.ofSeconds(20);

  private final String name = "p" + PAIRS.incrementAndGet();
  private final Supplier<FlowProtocol> protocols;
  private final String protocol;
  private final NetRuntime net;
  private final List<Server> servers = new ArrayList<>();
  private final Counters clientCounters = new Counters();
  private final FlowInterface client;
  private final List<ByteBuf> buffers = new ArrayList<>();
  private final AtomicLong tags = new AtomicLong(1000);

  /** One I/O server: its storage, flow interface, RPC server, and the client's connection to it. */
  final class Server {
    final int index;
    final Handle handle;
    final MemFlowStorage storage;
    final Counters counters = new Counters();
    final FlowInterface flows;
    final RpcServer rpc;
    final RpcClient rpcClient;
    /** Per tag: the server's flow, once posted; completes when it is done. */
    private final Map<Long, CompletableFuture<FlowDescriptor>> done = new ConcurrentHashMap<>();
    /** Per tag: the connection the flow request came on. */
    private final Map<Long, CompletableFuture<Channel>> channels = new ConcurrentHashMap<>();
    /** Off: answer flow requests but never post the flow (a peer that never sends or takes data). */
    volatile boolean postFlows = true;

    Server(int index, Duration stallTimeout) throws Exception {
      this.index = index;
      this.handle = Handle.of(Handle.serverOfIo(index), 7);
      this.storage = new MemFlowStorage(name + "-io" + index);
      this.flows = FlowInterface.initialize(name + "-io" + index, stallTimeout, counters, List.of(protocols.get()));
      OpTable ops = new OpTable().async(FlowReq.class, Access.MODIFY, (q, ctx) -> {
        FlowDescriptor d = flows.alloc()
            .tag(q.tag())
            .type(q.protocol())
            .fileReq(q.fileReq().toRequest())
            .fileReqOffset(q.fileReqOffset())
            .aggregateSize(q.aggregateSize())
            .fileData(new FileData(q.fsize(), q.serverNr(), q.serverCount(), Distributions.of(q.dist()), q.write()));
        Endpoint netEnd = new NetEndpoint(ctx.channel());
        Endpoint disk = new StoreEndpoint(storage, q.handle());
        d.src(q.write() ? netEnd : disk).dest(q.write() ? disk : netEnd);
        long bytes = d.bytesForServer();
        channel(q.tag()).complete(ctx.channel());
        if (postFlows) {
          // as IoServer: in service before the ack leaves, so the data the ack invites finds the
          // flow; on the event loop, which writes the ack when this returns, before anything the
          // flow sends (written by later tasks of the loop)
          try {
            flows.post(d).whenComplete((x, e) -> serverFlow(q.tag()).complete(d));
          } catch (RuntimeException e) {
            serverFlow(q.tag()).completeExceptionally(e);
            return CompletableFuture.failedFuture(e);
          }
        }
        return CompletableFuture.completedFuture(new FlowAck(q.tag(), bytes));
      });
      this.rpc = new RpcServer(name + "-io" + index, net, new InetSocketAddress("127.0.0.1", 0), ops, rpcConfig(),
          MessageRegistry.DEFAULT, counters);
      rpc.onOneway((env, ch) -> {
        if (!flows.deliver(ch, env)) {
          counters.increment("test.orphan-frames");
        }
      });
      InetSocketAddress bound = rpc.start();
      this.rpcClient = new RpcClient("io" + index, net, bound, rpcConfig(), MessageRegistry.DEFAULT);
      rpcClient.onOneway((ch, env) -> {
        if (!client().deliver(ch, env)) {
          clientCounters.increment("test.orphan-frames");
        }
      });
    }

    /** The server's flow with this tag: completes (with the descriptor) when it is done. */
    CompletableFuture<FlowDescriptor> serverFlow(long tag) {
      return done.computeIfAbsent(tag, t -> new CompletableFuture<>());
    }

    /** The server's end of the connection the flow request with this tag came on. */
    CompletableFuture<Channel> channel(long tag) {
      return channels.computeIfAbsent(tag, t -> new CompletableFuture<>());
    }

    long orphanFrames() {
      return counters.get("test.orphan-frames");
    }

    void close() {
      quietly(rpcClient::close);
      quietly(rpc::close);
      quietly(flows::close);
      quietly(storage::close);
    }
  }

  /** What to move: a file request tiled from an offset, optionally a memory request, a distribution, a file size. */
  record Spec(Request fileReq, long fileReqOffset, long aggregate, Request memReq, DistSpec dist, long fsize) {
    static Spec contiguous(long offset, long n) {
      return new Spec(Request.bytes(n), offset, n, null, DistSpec.of(SimpleStripe.NAME, 64 * 1024), offset + n);
    }

    static Spec of(Request fileReq, long fileReqOffset, long aggregate) {
      return new Spec(fileReq, fileReqOffset, aggregate, null, DistSpec.of(SimpleStripe.NAME, 64 * 1024), Long.MAX_VALUE);
    }

    Spec memReq(Request m) {
      return new Spec(fileReq, fileReqOffset, aggregate, m, dist, fsize);
    }

    Spec dist(DistSpec d) {
      return new Spec(fileReq, fileReqOffset, aggregate, memReq, d, fsize);
    }

    Spec fsize(long f) {
      return new Spec(fileReq, fileReqOffset, aggregate, memReq, dist, f);
    }

    Distribution distribution() {
      return Distributions.of(dist);
    }
  }

  /** One server's part of a transfer: the flow at each end. */
  record Leg(Server server, long tag, long bytes, FlowDescriptor clientFlow, CompletableFuture<FlowDescriptor> clientDone,
      CompletableFuture<Channel> channel) {
    CompletableFuture<FlowDescriptor> serverDone() {
      return server.serverFlow(tag);
    }
  }

  /** The flows of one transfer, one per server. */
  record Transfer(List<Leg> legs) {
    /** Waits until both ends of every leg are done; returns this. */
    Transfer await() {
      for (Leg l : legs) {
        awaitDone(l.clientDone());
        awaitDone(l.serverDone());
      }
      return this;
    }

    /** Waits until the client end of every leg is done; returns this. */
    Transfer awaitClient() {
      for (Leg l : legs) {
        awaitDone(l.clientDone());
      }
      return this;
    }

    List<FlowDescriptor> clientFlows() {
      return legs.stream().map(Leg::clientFlow).toList();
    }

    List<FlowDescriptor> serverFlows() {
      return legs.stream().map(l -> l.serverDone().getNow(null)).toList();
    }

    Leg leg(int i) {
      return legs.get(i);
    }

    private static void awaitDone(CompletableFuture<?> f) {
      try {
        f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
      } catch (java.util.concurrent.TimeoutException e) {
        throw new AssertionError("flow not done within " + WAIT, e);
      } catch (Exception e) {
        // failed futures are for the test to look at
      }
    }
  }

  private FlowPair(Supplier<FlowProtocol> protocols, int serverCount, Duration stallTimeout) throws Exception {
    this.protocols = protocols;
    FlowProtocol first = protocols.get();
    this.protocol = first.name();
    this.net = NetRuntime.create(name + "-net", 2);
    try {
      this.client = FlowInterface.initialize(name + "-client", stallTimeout, clientCounters, List.of(first));
      for (int i = 0; i < serverCount; i++) {
        servers.add(new Server(i, stallTimeout));
      }
    } catch (Exception | Error e) {
      close();
      throw e;
    }
  }

  /** A client and {@code servers} servers, each end with a fresh protocol from {@code protocols}. */
  static FlowPair open(Supplier<FlowProtocol> protocols, int servers, Duration stallTimeout) throws Exception {
    return new FlowPair(protocols, servers, stallTimeout);
  }

  static RpcConfig rpcConfig() {
    return new RpcConfig(Duration.ofSeconds(10), Duration.ofSeconds(2), 16L << 20, 1, Duration.ofSeconds(10),
        org.flowfs.common.config.Secret.of("flow-pair-test-secret"));
  }

  String name() {
    return name;
  }

  String protocol() {
    return protocol;
  }

  FlowInterface client() {
    return client;
  }

  Counters clientCounters() {
    return clientCounters;
  }

  Server server(int i) {
    return servers.get(i);
  }

  List<Server> servers() {
    return servers;
  }

  Handle handle(int i) {
    return servers.get(i).handle;
  }

  long nextTag() {
    return tags.incrementAndGet();
  }

  /** A buffer the pair releases on close, {@code n} bytes, readable, filled with {@code fill}. */
  ByteBuf buffer(int n, int fill) {
    ByteBuf b = PooledByteBufAllocator.DEFAULT.directBuffer(n, n);
    b.writerIndex(n);
    b.setBytes(0, filled(n, fill));
    synchronized (buffers) {
      buffers.add(b);
    }
    return b;
  }

  /** A buffer holding {@code data}, released on close. */
  ByteBuf buffer(byte[] data) {
    ByteBuf b = buffer(data.length, 0);
    b.setBytes(0, data);
    return b;
  }

  private static byte[] filled(int n, int fill) {
    byte[] a = new byte[n];
    java.util.Arrays.fill(a, (byte) fill);
    return a;
  }

  /** Writes {@code mem} (laid out by the spec's memory request, or contiguous) to the file. */
  Transfer write(Spec spec, ByteBuf mem) {
    return transfer(spec, mem, true);
  }

  /** Reads the spec's bytes into {@code mem}. */
  Transfer read(Spec spec, ByteBuf mem) {
    return transfer(spec, mem, false);
  }

  /** Reads the spec's bytes into {@code views}, by reference. */
  Transfer readViews(Spec spec, MemViews views) {
    return transfer(spec, new MemEndpoint(views), false);
  }

  /** One flow per server, all at once, as {@code FlowDataPath.transfer} (servers with no bytes too). */
  Transfer transfer(Spec spec, ByteBuf mem, boolean write) {
    return transfer(spec, new MemEndpoint(mem), write);
  }

  private Transfer transfer(Spec spec, MemEndpoint mem, boolean write) {
    Distribution dist = spec.distribution();
    int n = servers.size();
    RequestSpec wireReq = RequestSpec.of(spec.fileReq());
    List<Leg> legs = new ArrayList<>();
    for (int s = 0; s < n; s++) {
      Server srv = servers.get(s);
      int serverNr = s;
      long tag = nextTag();
      FlowDescriptor d = client.alloc()
          .tag(tag)
          .type(protocol)
          .fileReq(spec.fileReq())
          .fileReqOffset(spec.fileReqOffset())
          .aggregateSize(spec.aggregate())
          .memReq(spec.memReq())
          .fileData(new FileData(spec.fsize(), s, n, dist, write));
      long bytes = d.bytesForServer();
      CompletableFuture<Channel> channel = new CompletableFuture<>();
      CompletableFuture<FlowDescriptor> done = srv.rpcClient.conduit().thenCompose(c -> {
        channel.complete(c.channel());
        FlowReq req = new FlowReq(tag, srv.handle, write, wireReq, spec.fileReqOffset(), spec.aggregate(), spec.dist(),
            serverNr, n, write ? 0 : spec.fsize(), protocol);
        if (write) {
          return c.call(req, ack -> {
            if (ack.bytes() != bytes) {
              throw new FsException(Errno.EPROTO, "server expects " + ack.bytes() + " bytes, client has " + bytes);
            }
            d.src(mem).dest(new NetEndpoint(c.channel()));
            return client.post(d);
          });
        }
        d.src(new NetEndpoint(c.channel())).dest(mem);
        CompletableFuture<FlowDescriptor> f = client.post(d);
        c.call(req).whenComplete((ack, err) -> {
          if (err != null) {
            client.fail(d, Errno.from(err), "flow request failed: " + err);
          } else if (ack.bytes() != bytes) {
            client.fail(d, Errno.EPROTO, "server sends " + ack.bytes() + " bytes, client expects " + bytes);
          }
        });
        return f;
      });
      legs.add(new Leg(srv, tag, bytes, d, done, channel));
    }
    return new Transfer(legs);
  }

  /** Closes everything in reverse order of opening, then releases the pair's buffers. */
  @Override
  public void close() {
    for (Server s : servers) {
      quietly(s.rpcClient::close);
    }
    if (client != null) {
      quietly(client::close);
    }
    for (int i = servers.size() - 1; i >= 0; i--) {
      servers.get(i).close();
    }
    quietly(net::close);
    List<String> held = new ArrayList<>();
    synchronized (buffers) {
      for (ByteBuf b : buffers) {
        if (b.refCnt() != 1) {
          held.add("a memory buffer still has " + b.refCnt() + " references after every flow ended");
        }
        if (b.refCnt() > 0) {
          b.release();
        }
      }
      buffers.clear();
    }
    if (!held.isEmpty()) {
      throw new AssertionError(String.join("; ", held));
    }
  }

  private static void quietly(Runnable r) {
    try {
      r.run();
    } catch (RuntimeException e) {
      // closing goes on
    }
  }
}
