package org.flowfs.io;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.AttributeKey;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicInteger;
import org.flowfs.common.Counters;
import org.flowfs.common.DirLock;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.NamedThreads;
import org.flowfs.common.StorageSpace;
import org.flowfs.common.Version;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.config.IoServerConfig;
import org.flowfs.common.rpc.Access;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.rpc.OpTable;
import org.flowfs.common.rpc.RpcServer;
import org.flowfs.common.wire.CommonOp.OkResp;
import org.flowfs.common.wire.CommonOp.PingReq;
import org.flowfs.common.wire.CommonOp.PingResp;
import org.flowfs.common.wire.CommonOp.StatsReq;
import org.flowfs.common.wire.CommonOp.StatsResp;
import org.flowfs.common.wire.Frames;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.flowfs.common.config.FlowConfig;
import org.flowfs.common.dist.Distributions;
import org.flowfs.common.flow.BufferedFlowProtocol;
import org.flowfs.common.flow.Endpoint;
import org.flowfs.common.flow.FlowDescriptor;
import org.flowfs.common.flow.FlowInterface;
import org.flowfs.common.flow.FlowProtocol;
import org.flowfs.common.flow.NetEndpoint;
import org.flowfs.common.flow.StoreEndpoint;
import org.flowfs.common.request.FileData;
import org.flowfs.common.wire.IoOp.AllocateReq;
import org.flowfs.common.wire.IoOp.DataRemoveReq;
import org.flowfs.common.wire.IoOp.EagerData;
import org.flowfs.common.wire.IoOp.EagerWriteReq;
import org.flowfs.common.wire.IoOp.FlowAck;
import org.flowfs.common.wire.IoOp.FlowData;
import org.flowfs.common.wire.IoOp.FlowReq;
import org.flowfs.common.wire.IoOp.HandlesResp;
import org.flowfs.common.wire.IoOp.IoStatfsReq;
import org.flowfs.common.wire.IoOp.IoStatfsResp;
import org.flowfs.common.wire.IoOp.ListReq;
import org.flowfs.common.wire.IoOp.PrecreateReq;
import org.flowfs.common.wire.IoOp.ReadReq;
import org.flowfs.common.wire.IoOp.ReadResp;
import org.flowfs.common.wire.IoOp.SizesReq;
import org.flowfs.common.wire.IoOp.SizesResp;
import org.flowfs.common.wire.IoOp.SyncReq;
import org.flowfs.common.wire.IoOp.TruncateReq;
import org.flowfs.common.wire.IoOp.WriteReq;
import org.flowfs.common.wire.IoOp.WriteResp;
import org.flowfs.common.wire.MessageRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One I/O server: its storage directory, its handle range, and the operations on its datafiles,
 * served over the network. Disk work runs on the {@code io-store-N} pool (a read flow's reads,
 * with io.reads-anywhere, on {@code io-read-N}), never on event loops.
 */
public final class IoServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(IoServer.class);

  private final int id;
  private final FlowFsConfig config;
  private final DirLock lock;
  private final BStreamStore store;
  private final HandleAllocator allocator;
  private final ExecutorService pool;
  /** Where read flows' bulk reads run: {@link #pool}, or with io.reads-anywhere a pool of its own on every CPU. */
  private final ExecutorService readPool;
  private final Counters counters = new Counters();
  private final RpcServer rpc;
  private final int maxRead;
  private final FlowInterface flows;
  private final StoreFlowStorage flowStorage;
  private final EagerWrites eager;
  /** Flows in service per connection, at most {@link #MAX_FLOWS_PER_CONNECTION}. */
  private static final AttributeKey<AtomicInteger> FLOWS = AttributeKey.valueOf(IoServer.class, "flows");
  /** Flows one connection may have in service at once; more are refused with EAGAIN. */
  static final int MAX_FLOWS_PER_CONNECTION = 128;
  /** The largest flow: a client's buffer holds at most this many bytes. */
  static final long MAX_FLOW_BYTES = Integer.MAX_VALUE;

  private IoServer(FlowFsConfig config, int id, NetRuntime net) throws IOException {
    this.id = id;
    this.config = config;
    IoServerConfig me = config.ioServer(id);
    this.lock = DirLock.acquire(me.requireDir(), "I/O server");
    try {
      this.store = new FileBStreamStore(me.dir(), Handle.serverOfIo(id), config.io().openFiles(), config.io().writeback(),
          config.io().directWrite(), config.io().directRead(), counters);
      this.allocator = new HandleAllocator(me.dir().resolve("handles"), Handle.serverOfIo(id));
    } catch (IOException | RuntimeException e) {
      lock.close();
      throw e;
    }
    this.pool = NamedThreads.pool("io-store-" + id, config.io().threads());
    this.readPool = config.io().readsAnywhere() ? NamedThreads.unconfinedPool("io-read-" + id, config.io().threads()) : pool;
    this.maxRead = (int) Math.min(Integer.MAX_VALUE, config.rpc().maxFrame() - Frames.HEADER - 64);
    this.flowStorage = new StoreFlowStorage(store, pool, readPool, counters, config.io().sendfile());
    this.eager = new EagerWrites(config.rpc().timeout());
    FlowConfig fc = config.flow();
    List<FlowProtocol> protocols = new ArrayList<>(List.of(
        new BufferedFlowProtocol(BufferedFlowProtocol.DOUBLE_BUFFER, fc.bufferSize(), fc.buffers()),
        BufferedFlowProtocol.singleBuffer(fc.bufferSize())));
    protocols.sort((a, b) -> a.name().equals(fc.protocol()) ? -1 : b.name().equals(fc.protocol()) ? 1 : 0);
    this.flows = FlowInterface.initialize("io" + id, config.rpc().timeout(), counters, protocols);
    this.rpc = new RpcServer("ioserver " + id, net, me.address(), ops(), config.rpc(), MessageRegistry.DEFAULT, counters);
    this.rpc.onOneway((env, ch) -> {
      if (env.message() instanceof EagerData) {
        eager.deliver(ch, env);
      } else if (!flows.deliver(ch, env)) {
        counters.increment("flow.orphan-frames");
      }
    });
    if (config.io().directWrite() > 0) {
      // flow data that may go past the page cache arrives where the direct writes take it from
      this.rpc.placePayloads(FlowData.class, (int) config.io().directWrite());
    }
  }

  /** Opens the storage of I/O server {@code id}; {@link #start()} then listens. */
  public static IoServer open(FlowFsConfig config, int id, NetRuntime net) throws IOException {
    return new IoServer(config, id, net);
  }

  public InetSocketAddress start() throws IOException {
    InetSocketAddress a = rpc.start();
    LOG.info("ioserver {} started: {} storage {} ({} datafiles), listening on {}", id, Version.describe(),
        config.ioServer(id).dir(), store.count(), a);
    return a;
  }

  public int id() {
    return id;
  }

  public Counters counters() {
    return counters;
  }

  private OpTable ops() {
    OpTable t = new OpTable();
    t.async(PingReq.class, Access.READ_ONLY, (q, ctx) ->
        CompletableFuture.completedFuture(new PingResp("ioserver", id, Version.RELEASE, q.sentNanos())));
    t.async(StatsReq.class, Access.READ_ONLY, (q, ctx) ->
        CompletableFuture.completedFuture(new StatsResp("ioserver", id, counters.snapshot())));
    t.blocking(PrecreateReq.class, Access.MODIFY, pool, (q, ctx) -> new HandlesResp(allocator.allocate(q.count())));
    // a client on this machine shares memory for the payloads of each direction (ShmSlots)
    new ShmHost(counters, config.node().shmDir()).register(t);
    // the short write: the data rides in the request
    t.blocking(WriteReq.class, Access.MODIFY, pool, (q, ctx) -> {
      try {
        int n = q.payload().readableBytes();
        long size = store.write(checked(q.handle()), q.offset(), q.payload());
        counters.add("bytes.written", n);
        counters.increment("path.short.ops");
        counters.add("path.short.bytes", n);
        return new WriteResp(n, size);
      } finally {
        q.release();
      }
    });
    // the eager write: request, then the data message, then this answer
    t.async(EagerWriteReq.class, Access.MODIFY, (q, ctx) -> {
      Handle h = checked(q.handle());
      return eager.expect(ctx.channel(), q.tag()).thenApplyAsync(data -> {
        try {
          if (data.readableBytes() != q.length()) {
            throw new FsException(Errno.EINVAL, "eager write announced " + q.length() + " bytes, sent " + data.readableBytes());
          }
          long size = store.write(h, q.offset(), data);
          counters.add("bytes.written", q.length());
          counters.increment("path.eager-write.ops");
          counters.add("path.eager-write.bytes", q.length());
          return new WriteResp(q.length(), size);
        } finally {
          data.release();
        }
      }, pool);
    });
    // flows: the handshake answers, then the flow moves the data
    t.async(FlowReq.class, Access.MODIFY, (q, ctx) -> {
      Handle h = checked(q.handle());
      if (q.protocol() != null && !flows.protocolNames().contains(q.protocol())) {
        throw new FsException(Errno.EINVAL, "no flow protocol '" + q.protocol() + "'; have " + flows.protocolNames());
      }
      if (q.aggregateSize() > MAX_FLOW_BYTES) {
        throw new FsException(Errno.EINVAL, "flow of " + q.aggregateSize() + " bytes; at most " + MAX_FLOW_BYTES);
      }
      AtomicInteger fresh = new AtomicInteger();
      AtomicInteger known = ctx.channel().attr(FLOWS).setIfAbsent(fresh);
      AtomicInteger slots = known == null ? fresh : known;
      if (slots.incrementAndGet() > MAX_FLOWS_PER_CONNECTION) {
        slots.decrementAndGet();
        counters.increment("flow.refused");
        throw new FsException(Errno.EAGAIN, "more than " + MAX_FLOWS_PER_CONNECTION + " flows on one connection");
      }
      // building the request and counting this server's bytes is work in proportion to the
      // request: on the pool, never on the event loop
      return CompletableFuture.supplyAsync(() -> {
        FlowDescriptor d = flows.alloc();
        try {
          d.tag(q.tag())
              .type(q.protocol())
              .fileReq(q.fileReq().toRequest())
              .fileReqOffset(q.fileReqOffset())
              .aggregateSize(q.aggregateSize())
              .fileData(FileData.forFlow(q.fsize(), q.serverNr(), q.serverCount(), Distributions.of(q.dist()), q.head(),
                  q.write()));
          Endpoint net = new NetEndpoint(ctx.channel());
          Endpoint disk = new StoreEndpoint(flowStorage, h);
          d.src(q.write() ? net : disk).dest(q.write() ? disk : net);
          return new Object[] {d, d.bytesForServer()};
        } catch (IllegalArgumentException e) {
          throw new FsException(Errno.EINVAL, "bad flow request: " + e.getMessage());
        }
      }, pool).whenComplete((x, err) -> {
        if (err != null) {
          slots.decrementAndGet();
        }
      }).thenApplyAsync(x -> {
        FlowDescriptor d = (FlowDescriptor) x[0];
        // in service before the ack leaves: the data the ack invites must find the flow. (This
        // runs on the connection's event loop, which writes the ack as soon as this returns; what
        // the flow sends is written by later tasks of the loop, so after the ack.)
        try {
          flows.post(d);
        } catch (RuntimeException e) {
          slots.decrementAndGet();
          // a tag already in service on this connection, say: the client's mistake
          throw e instanceof IllegalArgumentException || e instanceof IllegalStateException
              ? new FsException(Errno.EINVAL, "cannot start flow " + q.tag() + ": " + e.getMessage()) : e;
        }
        d.completion().whenComplete((done, err) -> slots.decrementAndGet());
        d.completion().thenAccept(done -> {
          counters.increment("path.flow.ops");
          counters.add("path.flow.bytes", done.totalTransferred());
        });
        return new FlowAck(q.tag(), (Long) x[1]);
      }, ctx.channel().eventLoop());
    });
    t.blocking(ReadReq.class, Access.READ_ONLY, pool, (q, ctx) -> {
      if (q.length() > maxRead) {
        throw new FsException(Errno.EINVAL, "read of " + q.length() + " bytes exceeds " + maxRead);
      }
      Handle h = checked(q.handle());
      // never more than the datafile holds there: the length is the client's word
      int length = (int) Math.max(0, Math.min(q.length(), store.size(h) - q.offset()));
      ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(length);
      try {
        store.read(h, q.offset(), length, buf);
        counters.add("bytes.read", buf.readableBytes());
        counters.increment("path.eager-read.ops");
        counters.add("path.eager-read.bytes", buf.readableBytes());
        return new ReadResp(buf);
      } catch (RuntimeException e) {
        buf.release();
        throw e;
      }
    });
    t.blocking(TruncateReq.class, Access.MODIFY, pool, (q, ctx) -> {
      store.truncate(checked(q.handle()), q.size());
      return OkResp.INSTANCE;
    });
    t.blocking(AllocateReq.class, Access.MODIFY, pool, (q, ctx) -> {
      store.allocate(checked(q.handle()), q.offset(), q.length(), q.punch());
      counters.increment(q.punch() ? "punch" : "allocate");
      return OkResp.INSTANCE;
    });
    t.blocking(SizesReq.class, Access.READ_ONLY, pool, (q, ctx) -> {
      long[] sizes = new long[q.handles().size()];
      for (int i = 0; i < sizes.length; i++) {
        sizes[i] = store.size(checked(q.handles().get(i)));
      }
      return new SizesResp(sizes);
    });
    t.blocking(DataRemoveReq.class, Access.MODIFY, pool, (q, ctx) -> {
      for (Handle h : q.handles()) {
        store.remove(checked(h));
      }
      return OkResp.INSTANCE;
    });
    t.blocking(SyncReq.class, Access.MODIFY, pool, (q, ctx) -> {
      store.sync(checked(q.handle()), q.dataOnly());
      return OkResp.INSTANCE;
    });
    t.blocking(IoStatfsReq.class, Access.READ_ONLY, pool, (q, ctx) -> {
      StorageSpace s = store.space();
      return new IoStatfsResp(s.total(), s.free(), s.available(), s.device(), store.count());
    });
    t.blocking(ListReq.class, Access.READ_ONLY, pool, (q, ctx) -> new HandlesResp(store.list(q.cursor(), q.max())));
    return t;
  }

  /** Refuses handles of other servers and handles this server never issued. */
  private Handle checked(Handle h) {
    if (!allocator.issued(h)) {
      throw new FsException(Errno.ESTALE, "handle " + h + " was not issued by ioserver " + id);
    }
    return h;
  }

  @Override
  public void close() {
    rpc.close();
    flows.close();
    NamedThreads.shutdown(pool, 5000);
    if (readPool != pool) {
      NamedThreads.shutdown(readPool, 5000);
    }
    store.close();
    allocator.close();
    lock.close();
    LOG.info("ioserver {} stopped", id);
  }
}
