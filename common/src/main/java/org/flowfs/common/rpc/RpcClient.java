package org.flowfs.common.rpc;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.DecoderException;
import io.netty.util.concurrent.ScheduledFuture;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.config.RpcConfig;
import org.flowfs.common.wire.CommonOp.ErrorResp;
import org.flowfs.common.wire.Envelope;
import org.flowfs.common.wire.FrameDecoder;
import org.flowfs.common.wire.FrameEncoder;
import org.flowfs.common.wire.HasPayload;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.MessageRegistry;
import org.flowfs.common.wire.Req;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls one server: a few connections (opened on first use, reopened after a failure), many
 * requests in flight on each, answers matched by request id.
 *
 * <p>Every call completes: with the answer, with the server's errno, or with EIO when the server
 * cannot be reached, the connection drops or no answer comes within the timeout. Futures complete
 * on an event loop thread: callers must not block in their continuations. Thread safe.
 */
public final class RpcClient implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RpcClient.class);

  private final String peer;
  private final NetRuntime net;
  private final InetSocketAddress address;
  private final RpcConfig config;
  private final MessageRegistry registry;
  private final FrameEncoder encoder;
  private final Connection[] connections;
  private final AtomicInteger next = new AtomicInteger();
  private final AtomicLong ids = new AtomicLong();
  private volatile boolean closed;
  private volatile java.util.function.BiConsumer<Channel, Envelope> oneway = (ch, env) -> {
    env.release();
    LOG.warn("unexpected one-way {} from {}", env.message().getClass().getSimpleName(), ch.remoteAddress());
  };

  public RpcClient(String peer, NetRuntime net, InetSocketAddress address, RpcConfig config, MessageRegistry registry) {
    this.peer = peer;
    this.net = net;
    this.address = address;
    this.config = config;
    this.registry = registry;
    this.encoder = new FrameEncoder(registry);
    this.connections = new Connection[config.connections()];
    for (int i = 0; i < connections.length; i++) {
      connections[i] = new Connection();
    }
  }

  public String peer() {
    return peer;
  }

  public InetSocketAddress address() {
    return address;
  }

  /** Where one-way frames from the server (flow data) go; called on an event loop thread. */
  public void onOneway(java.util.function.BiConsumer<Channel, Envelope> handler) {
    this.oneway = handler;
  }

  /** Sends a request; the future completes within the configured timeout. */
  public <R extends Message> CompletableFuture<R> call(Req<R> req) {
    return call(req, config.timeout());
  }

  public <R extends Message> CompletableFuture<R> call(Req<R> req, Duration timeout) {
    if (closed) {
      release(req);
      return CompletableFuture.failedFuture(new FsException(Errno.EIO, "client to " + peer + " is closed"));
    }
    Connection conn = connections[Math.floorMod(next.getAndIncrement(), connections.length)];
    CompletableFuture<R> out = new CompletableFuture<>();
    conn.link().whenComplete((link, err) -> {
      if (err != null) {
        release(req); // never sent: its payload is still ours
        out.completeExceptionally(err);
        return;
      }
      callOn(link, req, timeout).whenComplete((r, e) -> {
        if (e != null) {
          out.completeExceptionally(e);
        } else if (!out.complete(r)) {
          release(r); // the caller cancelled: nobody else will release a payload
        }
      });
    });
    return out;
  }

  /**
   * One connection of this client, for exchanges whose messages must all travel on the same
   * connection: a flow's request, its data and its trailing ack.
   */
  public final class Conduit {
    private final Link link;

    private Conduit(Link link) {
      this.link = link;
    }

    public Channel channel() {
      return link.channel();
    }

    /** Sends a request on this connection. */
    public <R extends Message> CompletableFuture<R> call(Req<R> req) {
      return callOn(link, req, config.timeout());
    }

    /** Sends a one-way frame with id {@code tag} on this connection; consumes a payload. */
    public io.netty.channel.ChannelFuture send(long tag, Message m) {
      return link.channel().writeAndFlush(Envelope.oneway(tag, m));
    }
  }

  /** A connection (opened if needed), picked round-robin. */
  public CompletableFuture<Conduit> conduit() {
    Connection conn = connections[Math.floorMod(next.getAndIncrement(), connections.length)];
    return conn.link().thenApply(Conduit::new);
  }

  @SuppressWarnings("unchecked")
  private <R extends Message> CompletableFuture<R> callOn(Link link, Req<R> req, Duration timeout) {
    CompletableFuture<R> result = new CompletableFuture<>();
    Class<?> expected = registry.responseTypeOf(req);
    long id = ids.incrementAndGet();
    {
      Channel ch = link.channel();
      if (!ch.isActive()) {
        release(req);
        result.completeExceptionally(new FsException(Errno.EIO, "connection to " + peer + " is closed"));
        return result;
      }
      Pending p = new Pending((CompletableFuture<Message>) (CompletableFuture<?>) result, expected);
      Map<Long, Pending> pending = link.pending();
      pending.put(id, p);
      p.timer = ch.eventLoop().schedule(() -> {
        if (pending.remove(id) != null) {
          result.completeExceptionally(new FsException(Errno.EIO,
              peer + " did not answer " + req.getClass().getSimpleName() + " within " + timeout.toMillis() + " ms"));
        }
      }, timeout.toNanos(), TimeUnit.NANOSECONDS);
      ch.writeAndFlush(Envelope.request(id, req)).addListener(f -> {
        if (!f.isSuccess() && pending.remove(id) != null) {
          p.timer.cancel(false);
          result.completeExceptionally(new FsException(Errno.EIO, "cannot send to " + peer + ": " + f.cause()));
        }
      });
    }
    return result;
  }

  private static void release(Message m) {
    if (m instanceof HasPayload p) {
      p.release();
    }
  }

  @Override
  public void close() {
    closed = true;
    for (Connection c : connections) {
      c.close();
    }
  }

  private static final class Pending {
    final CompletableFuture<Message> future;
    final Class<?> expected;
    ScheduledFuture<?> timer;

    Pending(CompletableFuture<Message> future, Class<?> expected) {
      this.future = future;
      this.expected = expected;
    }
  }

  /** A connected channel and the calls waiting for answers on it. */
  private record Link(Channel channel, Map<Long, Pending> pending) {}

  /** One connection slot: connects on demand, and again after its channel closes. */
  private final class Connection {
    private CompletableFuture<Link> channel;

    synchronized CompletableFuture<Link> link() {
      if (channel != null && (!channel.isDone() || (!channel.isCompletedExceptionally() && channel.join().channel().isActive()))) {
        return channel;
      }
      CompletableFuture<Link> f = new CompletableFuture<>();
      channel = f;
      Map<Long, Pending> pending = new ConcurrentHashMap<>();
      if (closed) {
        f.completeExceptionally(new FsException(Errno.EIO, "client to " + peer + " is closed"));
        return f;
      }
      Bootstrap b = new Bootstrap()
          .group(net.group())
          .channel(net.channelType())
          .option(ChannelOption.TCP_NODELAY, true)
          .option(ChannelOption.SO_KEEPALIVE, true)
          .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) config.connectTimeout().toMillis())
          .handler(new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel ch) {
              ch.pipeline()
                  .addLast("frame", new FrameDecoder(registry, (int) config.maxFrame()))
                  .addLast("encode", encoder)
                  .addLast("answers", new Answers(pending));
            }
          });
      ChannelFuture cf = b.connect(new InetSocketAddress(address.getHostString(), address.getPort()));
      cf.addListener(x -> {
        if (cf.isSuccess()) {
          f.complete(new Link(cf.channel(), pending));
          if (closed) {
            // close() ran while this connection was being made and could not close it
            cf.channel().close();
          }
        } else {
          synchronized (Connection.this) {
            if (channel == f) {
              channel = null; // the next call tries again
            }
          }
          f.completeExceptionally(new FsException(Errno.EIO,
              "cannot reach " + peer + " at " + address.getHostString() + ":" + address.getPort() + ": "
                  + (cf.cause() == null ? "unknown" : cf.cause().getMessage())));
        }
      });
      return f;
    }

    synchronized void close() {
      if (channel != null && channel.isDone() && !channel.isCompletedExceptionally()) {
        Link l = channel.join();
        l.channel().close().awaitUninterruptibly(2, TimeUnit.SECONDS);
        failAll(l.pending(), "client closed");
      }
    }

    void failAll(Map<Long, Pending> pending, String why) {
      for (Long id : pending.keySet()) {
        Pending p = pending.remove(id);
        if (p != null) {
          if (p.timer != null) {
            p.timer.cancel(false);
          }
          p.future.completeExceptionally(new FsException(Errno.EIO, "connection to " + peer + " lost: " + why));
        }
      }
    }

    private final class Answers extends SimpleChannelInboundHandler<Envelope> {
      private final Map<Long, Pending> pending;

      Answers(Map<Long, Pending> pending) {
        super(false);
        this.pending = pending;
      }

      @Override
      protected void channelRead0(ChannelHandlerContext ctx, Envelope env) {
        if (env.kind() == Envelope.Kind.ONEWAY) {
          oneway.accept(ctx.channel(), env);
          return;
        }
        if (env.kind() != Envelope.Kind.RESPONSE) {
          env.release();
          LOG.warn("{} sent an unexpected {} frame; closing", peer, env.kind());
          ctx.close();
          return;
        }
        Pending p = pending.remove(env.id());
        if (p == null) {
          env.release(); // timed out already
          return;
        }
        p.timer.cancel(false);
        Message m = env.message();
        if (m instanceof ErrorResp e) {
          p.future.completeExceptionally(new FsException(Errno.ofCode(e.errno()), peer + ": " + e.detail()));
        } else if (p.expected != null && !p.expected.isInstance(m)) {
          env.release();
          p.future.completeExceptionally(new FsException(Errno.EPROTO,
              peer + " answered with " + m.getClass().getSimpleName() + ", expected " + p.expected.getSimpleName()));
        } else if (!p.future.complete(m)) {
          env.release(); // the caller cancelled: nobody else will release a payload
        }
      }

      @Override
      public void channelInactive(ChannelHandlerContext ctx) {
        failAll(pending, "connection closed");
      }

      @Override
      public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        Throwable c = cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
        LOG.warn("connection to {} failed: {}", peer, c.toString());
        ctx.close();
      }
    }
  }
}
