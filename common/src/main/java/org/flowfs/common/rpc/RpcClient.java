package org.flowfs.common.rpc;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.DecoderException;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.Function;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.config.RpcConfig;
import org.flowfs.common.wire.CommonOp.AuthChallenge;
import org.flowfs.common.wire.CommonOp.AuthReq;
import org.flowfs.common.wire.CommonOp.AuthResp;
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
 *
 * <p>A new connection is handed to calls only after the membership handshake ({@link Membership})
 * has succeeded both ways: the client proved it knows the file system's secret and the server
 * proved it too. A server that refuses the proof fails the calls waiting for the connection with
 * EACCES, one that cannot prove its own membership with EACCES too, one that does not complete the
 * handshake within the connect timeout with EIO; each error names the server.
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
  private final Membership membership;
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
    this.membership = new Membership(config.secret());
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

  /** What is done with each new connection once it proved membership; on its event loop. */
  private volatile java.util.function.Consumer<Conduit> connected = c -> {};

  /**
   * Runs {@code hook} with each connection this client makes, once it proved membership, on the
   * connection's event loop (calls may already be on their way on it).
   */
  public void onConnected(java.util.function.Consumer<Conduit> hook) {
    this.connected = hook;
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
      HasPayload.releaseIfAny(req);
      return CompletableFuture.failedFuture(CallFailure.eio(CallFailure.Stage.NOT_SENT, "client to " + peer + " is closed"));
    }
    Connection conn = connections[Math.floorMod(next.getAndIncrement(), connections.length)];
    CompletableFuture<R> out = new CompletableFuture<>();
    conn.whenReady((link, err) -> {
      if (err != null) {
        HasPayload.releaseIfAny(req); // never sent: its payload is still ours
        out.completeExceptionally(err);
        return;
      }
      callOn(link, req, timeout, f -> f).whenComplete((r, e) -> {
        if (e != null) {
          out.completeExceptionally(e);
        } else if (!out.complete(r)) {
          HasPayload.releaseIfAny(r); // the caller cancelled: nobody else will release a payload
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
      return callOn(link, req, config.timeout(), f -> f);
    }

    /**
     * Sends a request on this connection; {@code then} takes the answer where it is read, before
     * any frame that follows it on the connection. A flow posted in {@code then} (a write's, after
     * the server's ack) is there for the server's next frames, even for an answer that comes back
     * before this method returns: composing on the future {@link #call(Req)} returns would then run
     * in the caller's thread, while the connection reads on.
     */
    public <R extends Message, T> CompletableFuture<T> call(Req<R> req,
        Function<? super R, ? extends CompletionStage<T>> then) {
      return callOn(link, req, config.timeout(), f -> f.thenCompose(then));
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
  /**
   * Sends {@code req} on the link; {@code answered} composes on the answer's future before the
   * request leaves, so what it adds runs where the answer is read. Returns what it returns.
   */
  private <R extends Message, T> CompletableFuture<T> callOn(Link link, Req<R> req, Duration timeout,
      Function<CompletableFuture<R>, CompletableFuture<T>> answered) {
    CompletableFuture<R> result = new CompletableFuture<>();
    CompletableFuture<T> out = answered.apply(result);
    Class<?> expected = registry.responseTypeOf(req);
    long id = ids.incrementAndGet();
    {
      Channel ch = link.channel();
      if (!ch.isActive()) {
        HasPayload.releaseIfAny(req);
        result.completeExceptionally(CallFailure.eio(CallFailure.Stage.NOT_SENT, "connection to " + peer + " is closed"));
        return out;
      }
      Pending p = new Pending((CompletableFuture<Message>) (CompletableFuture<?>) result, expected);
      Map<Long, Pending> pending = link.pending();
      pending.put(id, p);
      // the timer and the write in one task: from another thread, one wake-up of the event loop
      // (two tasks could take two: the loop may run the first and sleep again before the second)
      Runnable send = () -> {
        p.timer = ch.eventLoop().schedule(() -> {
          if (pending.remove(id) != null) {
            result.completeExceptionally(CallFailure.eio(CallFailure.Stage.TIMED_OUT,
                peer + " did not answer " + req.getClass().getSimpleName() + " within " + timeout.toMillis() + " ms"));
          }
        }, timeout.toNanos(), TimeUnit.NANOSECONDS);
        ch.writeAndFlush(Envelope.request(id, req)).addListener(f -> {
          if (!f.isSuccess() && pending.remove(id) != null) {
            p.timer.cancel(false);
            result.completeExceptionally(CallFailure.eio(CallFailure.Stage.LOST, "cannot send to " + peer + ": " + f.cause()));
          }
        });
      };
      if (ch.eventLoop().inEventLoop()) {
        send.run();
      } else {
        try {
          ch.eventLoop().execute(send);
        } catch (RejectedExecutionException e) {
          if (pending.remove(id) != null) {
            HasPayload.releaseIfAny(req);
            result.completeExceptionally(CallFailure.eio(CallFailure.Stage.NOT_SENT, "connection to " + peer + " is closing"));
          }
        }
      }
    }
    return out;
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

  /**
   * What answer {@code m} from {@code peer}, to a request answered by {@code expected} (null: any),
   * means as a failure: the server's errno, or EPROTO for an answer of another type; null when it
   * is the answer.
   */
  static FsException failureOf(String peer, Message m, Class<?> expected) {
    if (m instanceof ErrorResp e) {
      return new FsException(Errno.ofCode(e.errno()), peer + ": " + e.detail());
    }
    if (expected != null && !expected.isInstance(m)) {
      return new FsException(Errno.EPROTO, peer + " answered with " + m.getClass().getSimpleName() + ", expected "
          + expected.getSimpleName());
    }
    return null;
  }

  /** A connected channel and the calls waiting for answers on it. */
  private record Link(Channel channel, Map<Long, Pending> pending) {}

  /** One connection slot: connects on demand, and again after its channel closes. */
  private final class Connection {
    private CompletableFuture<Link> channel;
    /** The calls waiting for the connection being made, if any. */
    private Connecting connecting;

    /**
     * Calls made while a connection is made (and proves membership), in the order they were made:
     * they go out in that order once it is ready. Guarded by the slot's lock.
     */
    private static final class Connecting {
      final CompletableFuture<Link> future;
      final ArrayDeque<BiConsumer<Link, Throwable>> calls = new ArrayDeque<>();
      boolean open = true;

      Connecting(CompletableFuture<Link> future) {
        this.future = future;
      }
    }

    /**
     * Runs {@code action} with the connection once it is ready, or with the reason it cannot be
     * made; actions of calls made in some order run in that order (a future's own dependents would
     * run in reverse order).
     */
    void whenReady(BiConsumer<Link, Throwable> action) {
      CompletableFuture<Link> f;
      synchronized (this) {
        f = link();
        Connecting c = connecting;
        if (c != null && c.future == f && c.open) {
          c.calls.add(action);
          return;
        }
      }
      f.whenComplete(action);
    }

    /** Runs the calls that waited for {@code c}, in order; successful sends under this slot's lock. */
    private void ready(Connecting c, Link link, Throwable err) {
      synchronized (this) {
        if (!c.open) {
          return;
        }
        c.open = false;
        if (connecting == c) {
          connecting = null;
        }
        if (err == null) {
          // under the lock: a call made meanwhile waits until these are sent
          c.calls.forEach(a -> a.accept(link, null));
          return;
        }
      }
      c.calls.forEach(a -> a.accept(null, err));
    }

    synchronized CompletableFuture<Link> link() {
      if (channel != null && (!channel.isDone() || (!channel.isCompletedExceptionally() && channel.join().channel().isActive()))) {
        return channel;
      }
      CompletableFuture<Link> f = new CompletableFuture<>();
      channel = f;
      Connecting c = new Connecting(f);
      connecting = c;
      f.whenComplete((l, e) -> ready(c, l, e));
      Map<Long, Pending> pending = new ConcurrentHashMap<>();
      if (closed) {
        f.completeExceptionally(CallFailure.eio(CallFailure.Stage.NOT_SENT, "client to " + peer + " is closed"));
        return f;
      }
      // resolved once: the loopback check and the connect see the same address
      InetSocketAddress target = new InetSocketAddress(address.getHostString(), address.getPort());
      Bootstrap b = new Bootstrap()
          .group(net.group())
          .channel(net.channelType())
          .option(ChannelOption.TCP_NODELAY, true)
          .option(ChannelOption.RCVBUF_ALLOCATOR, NetRuntime.RECEIVE_BUFFERS)
          .option(ChannelOption.SO_KEEPALIVE, true)
          .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) config.connectTimeout().toMillis())
          .handler(new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel ch) {
              LoopbackCongestion.connecting(ch, target, config.loopbackCongestion());
              FrameDecoder frames = new FrameDecoder(registry, (int) config.maxFrame());
              frames.limit(RpcServer.PRE_AUTH_FRAME);
              ch.pipeline()
                  .addLast("frame", frames)
                  .addLast("encode", encoder)
                  .addLast("auth", new ClientAuth(frames, f, pending))
                  .addLast("answers", new Answers(pending));
            }
          });
      ChannelFuture cf = b.connect(target);
      cf.addListener(x -> {
        if (cf.isSuccess()) {
          // the handshake completes f
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
          f.completeExceptionally(CallFailure.eio(CallFailure.Stage.NOT_SENT,
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
          p.future.completeExceptionally(CallFailure.eio(CallFailure.Stage.LOST, "connection to " + peer + " lost: " + why));
        }
      }
    }

    /**
     * The client's side of the membership handshake: answers the server's challenge, checks the
     * server's proof, then hands the connection to calls and steps out of the pipeline.
     */
    private final class ClientAuth extends ChannelInboundHandlerAdapter {
      private final FrameDecoder frames;
      private final CompletableFuture<Link> link;
      private final Map<Long, Pending> pending;
      private ScheduledFuture<?> timer;
      private String server;
      private byte[] serverNonce;
      private byte[] clientNonce;

      ClientAuth(FrameDecoder frames, CompletableFuture<Link> link, Map<Long, Pending> pending) {
        this.frames = frames;
        this.link = link;
        this.pending = pending;
      }

      private String where() {
        return peer + " at " + address.getHostString() + ":" + address.getPort();
      }

      @Override
      public void channelActive(ChannelHandlerContext ctx) {
        timer = ctx.executor().schedule(() -> fail(ctx, Errno.EIO,
            where() + " did not complete the membership handshake within " + config.connectTimeout().toMillis() + " ms"),
            config.connectTimeout().toNanos(), TimeUnit.NANOSECONDS);
        ctx.fireChannelActive();
      }

      @Override
      public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof Envelope env)) {
          ReferenceCountUtil.release(msg);
          return;
        }
        if (link.isDone()) {
          env.release(); // failed already; the connection is closing
          return;
        }
        Message m = env.message();
        if (serverNonce == null) {
          if (env.kind() == Envelope.Kind.ONEWAY && m instanceof AuthChallenge c) {
            server = c.server();
            serverNonce = c.nonce();
            clientNonce = Membership.nonce();
            ctx.writeAndFlush(Envelope.request(0, new AuthReq(clientNonce, membership.clientProof(server, serverNonce, clientNonce))));
          } else {
            env.release();
            fail(ctx, Errno.EPROTO, where() + " sent " + m.getClass().getSimpleName() + " instead of a membership challenge");
          }
          return;
        }
        if (env.kind() == Envelope.Kind.RESPONSE && env.id() == 0 && m instanceof AuthResp r) {
          if (!Membership.matches(membership.serverProof(server, serverNonce, clientNonce), r.proof())) {
            fail(ctx, Errno.EACCES, where() + " (\"" + server + "\") could not prove it belongs to this file system:"
                + " its fs.secret differs from ours");
            return;
          }
          timer.cancel(false);
          frames.limit(Integer.MAX_VALUE);
          ctx.pipeline().remove(this);
          Link l = new Link(ctx.channel(), pending);
          link.complete(l);
          try {
            connected.accept(new Conduit(l));
          } catch (RuntimeException e) {
            LOG.warn("after connecting to {}: {}", where(), e.toString());
          }
          if (closed) {
            ctx.close(); // close() ran during the handshake and could not close this connection
          }
        } else if (env.kind() == Envelope.Kind.RESPONSE && env.id() == 0 && m instanceof ErrorResp e) {
          Errno errno = Errno.ofCode(e.errno());
          fail(ctx, errno == Errno.OK ? Errno.EACCES : errno, where() + " refused this client's membership proof (" + e.detail()
              + "): is fs.secret the same as the server's?");
        } else {
          env.release();
          fail(ctx, Errno.EPROTO, where() + " answered the membership proof with " + m.getClass().getSimpleName());
        }
      }

      private void fail(ChannelHandlerContext ctx, Errno errno, String why) {
        if (timer != null) {
          timer.cancel(false);
        }
        // an EIO here is a connection that never carried a request: safe to retry anything
        FsException e = errno == Errno.EIO ? CallFailure.eio(CallFailure.Stage.NOT_SENT, why) : new FsException(errno, why);
        if (link.completeExceptionally(e)) {
          LOG.warn("{}", why);
        }
        ctx.close();
      }

      @Override
      public void channelInactive(ChannelHandlerContext ctx) {
        fail(ctx, Errno.EIO, where() + " closed the connection during the membership handshake");
        ctx.fireChannelInactive();
      }

      @Override
      public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        Throwable c = cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
        fail(ctx, Errno.EIO, "membership handshake with " + where() + " failed: " + c);
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
        FsException failed = failureOf(peer, m, p.expected);
        if (failed != null) {
          if (!(m instanceof ErrorResp)) {
            env.release();
          }
          p.future.completeExceptionally(failed);
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
