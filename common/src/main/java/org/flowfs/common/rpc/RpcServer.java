package org.flowfs.common.rpc;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.GlobalEventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.flowfs.common.Counters;
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
import org.flowfs.common.wire.MalformedMessageException;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.MessageRegistry;
import org.flowfs.common.wire.PayloadPlacement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A server endpoint: accepts connections on one address, decodes frames, dispatches each request
 * through its {@link OpTable} and writes the answer back. A connection that sends a malformed
 * frame is logged and closed; every other connection carries on. Each connection has a bounded
 * number of requests (and payload bytes) in flight: past it the server stops reading from that
 * connection; while its answers cannot be written as fast as they come, the server runs none of
 * its requests and reads no more of them, so answers never pile up for a peer that does not read;
 * and it has at most {@link #MAX_EXECUTING} requests on a server's executor, so one peer's deep
 * pipeline does not make everyone else's requests wait behind it.
 *
 * <p>Every connection must first prove membership of the file system ({@link Membership}): the
 * server sends its challenge on accept and serves nothing until the first frame from the peer is
 * a valid {@link AuthReq}. Anything else, a wrong proof, or no proof within {@code
 * rpc.auth-timeout} closes the connection; until then frames are limited to {@link
 * #PRE_AUTH_FRAME} bytes. Log lines peers can cause are rate limited; counters
 * ({@code connections.*}) count every case.
 */
public final class RpcServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RpcServer.class);
  /** Requests in flight per connection before the server stops reading it. */
  static final int MAX_IN_FLIGHT = 1024;
  /** Payload bytes of requests in flight per connection before the server stops reading it. */
  static final long MAX_IN_FLIGHT_BYTES = 64L << 20;
  /**
   * Requests of one connection an executor holds at once (running or queued); past it the
   * connection's further requests wait their turn in the connection, not in the shared queue.
   */
  static final int MAX_EXECUTING = 8;
  /** The largest frame a connection may send before it has proved membership. */
  static final int PRE_AUTH_FRAME = 1024;

  private final String name;
  private final NetRuntime net;
  private final InetSocketAddress bind;
  private final OpTable ops;
  private final RpcConfig config;
  private final MessageRegistry registry;
  private final FrameEncoder encoder;
  private final Counters counters;
  /** Messages whose large payloads are placed (see {@link #placePayloads}); null for none. */
  private Class<? extends HasPayload> placedType;
  private int placedMin;
  private final Membership membership;
  private final LogLimit authLog = new LogLimit(60);
  private final LogLimit badLog = new LogLimit(60);
  private final ChannelGroup channels = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
  private volatile OnewayHandler oneway = (env, ch) -> {
    env.release();
    throw new MalformedMessageException("unexpected one-way message " + env.message().getClass().getSimpleName());
  };
  private Channel serverChannel;

  /** Receives frames that are not requests (the data messages of flows). */
  @FunctionalInterface
  public interface OnewayHandler {
    void onMessage(Envelope env, Channel channel) throws Exception;
  }

  public RpcServer(String name, NetRuntime net, InetSocketAddress bind, OpTable ops, RpcConfig config,
      MessageRegistry registry, Counters counters) {
    this.name = name;
    this.net = net;
    this.bind = bind;
    this.ops = ops;
    this.config = config;
    this.registry = registry;
    this.encoder = new FrameEncoder(registry);
    this.counters = counters;
    this.membership = new Membership(config.secret());
  }

  public void onOneway(OnewayHandler handler) {
    this.oneway = handler;
  }

  /**
   * Reads the payloads of {@code type} messages of at least {@code min} bytes into page-aligned
   * memory, each in one run ({@link PayloadPlacement}): for storage that writes them past the page
   * cache. Call before {@link #start}.
   */
  public void placePayloads(Class<? extends HasPayload> type, int min) {
    this.placedType = type;
    this.placedMin = min;
  }

  /** Binds and starts accepting; returns the bound address (a port 0 becomes a real port). */
  public InetSocketAddress start() throws IOException {
    InetSocketAddress resolved = new InetSocketAddress(bind.getHostString(), bind.getPort());
    ServerBootstrap b = new ServerBootstrap()
        .group(net.group())
        .channel(net.serverChannelType())
        .option(ChannelOption.SO_REUSEADDR, true)
        .option(ChannelOption.SO_BACKLOG, 1024)
        .handler(new ChannelInitializer<Channel>() {
          @Override
          protected void initChannel(Channel ch) {
            LoopbackCongestion.listening(ch, config.loopbackCongestion()); // before bind: what it accepts inherits it
          }
        })
        .childOption(ChannelOption.TCP_NODELAY, true)
        .childOption(ChannelOption.RCVBUF_ALLOCATOR, NetRuntime.SERVER_RECEIVE_BUFFERS)
        .childOption(ChannelOption.SO_KEEPALIVE, true)
        .childHandler(new ChannelInitializer<Channel>() {
          @Override
          protected void initChannel(Channel ch) {
            channels.add(ch);
            LoopbackCongestion.accepted(ch, config.loopbackCongestion());
            counters.increment("connections.accepted");
            FrameDecoder frames = new FrameDecoder(registry, (int) config.maxFrame());
            frames.limit(PRE_AUTH_FRAME);
            if (placedType != null) {
              PayloadPlacement p = new PayloadPlacement(NetRuntime.SERVER_RECEIVE_BUFFERS, NetRuntime.SERVER_READ_MAX);
              ch.config().setRecvByteBufAllocator(p);
              frames.placePayloads(p, placedType, placedMin);
            }
            ch.pipeline()
                .addLast("frame", frames)
                .addLast("encode", encoder)
                .addLast("auth", new ServerAuth(frames))
                .addLast("dispatch", new Dispatcher());
          }
        });
    ChannelFuture f = b.bind(resolved).awaitUninterruptibly();
    if (!f.isSuccess()) {
      throw new IOException(name + " cannot listen on " + resolved + ": " + f.cause().getMessage(), f.cause());
    }
    serverChannel = f.channel();
    channels.add(serverChannel);
    InetSocketAddress bound = (InetSocketAddress) serverChannel.localAddress();
    LOG.info("{} listening on {}", name, bound);
    return bound;
  }

  public InetSocketAddress boundAddress() {
    return serverChannel == null ? null : (InetSocketAddress) serverChannel.localAddress();
  }

  @Override
  public void close() {
    if (serverChannel != null) {
      channels.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
      serverChannel = null;
    }
  }

  /**
   * The server's side of the membership handshake, first in line for every new connection: sends
   * the challenge, checks the answer, then steps out of the pipeline (nothing per request).
   */
  private final class ServerAuth extends ChannelInboundHandlerAdapter {
    private final FrameDecoder frames;
    private final byte[] nonce = Membership.nonce();
    private ScheduledFuture<?> timer;
    private boolean refused;

    ServerAuth(FrameDecoder frames) {
      this.frames = frames;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
      ctx.writeAndFlush(Envelope.oneway(0, new AuthChallenge(name, nonce)));
      timer = ctx.executor().schedule(() -> {
        if (ctx.channel().isActive()) {
          counters.increment("connections.auth-timeout");
          refuse(ctx, "proved no membership within " + config.authTimeout().toMillis() + " ms", null);
        }
      }, config.authTimeout().toNanos(), TimeUnit.NANOSECONDS);
      ctx.fireChannelActive();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      if (refused || !(msg instanceof Envelope env)) {
        if (msg instanceof Envelope e) {
          e.release(); // after a refusal: the connection is closing
        } else {
          ReferenceCountUtil.release(msg);
        }
        return;
      }
      if (env.kind() != Envelope.Kind.REQUEST || !(env.message() instanceof AuthReq q)) {
        env.release();
        counters.increment("connections.auth-refused");
        refuse(ctx, "sent " + env.message().getClass().getSimpleName() + " before proving membership", null);
        return;
      }
      byte[] expected = membership.clientProof(name, nonce, q.nonce());
      if (!Membership.matches(expected, q.proof())) {
        counters.increment("connections.auth-failed");
        refuse(ctx, "failed the membership proof (wrong fs.secret?)",
            Envelope.response(env.id(), new ErrorResp(Errno.EACCES.code(), name + ": not a member of this file system")));
        return;
      }
      timer.cancel(false);
      counters.increment("connections.authenticated");
      frames.limit(Integer.MAX_VALUE);
      ctx.writeAndFlush(Envelope.response(env.id(), new AuthResp(membership.serverProof(name, nonce, q.nonce()))));
      ctx.pipeline().remove(this); // frames after this one go straight to the dispatcher
    }

    /** Logs (rate limited), sends {@code last} if any, and closes; reads nothing more. */
    private void refuse(ChannelHandlerContext ctx, String why, Envelope last) {
      if (refused) {
        return;
      }
      refused = true;
      if (timer != null) {
        timer.cancel(false);
      }
      counters.increment("connections.unauthenticated");
      long s = authLog.admit();
      if (s >= 0) {
        LOG.warn("{}: closing connection from {}: it {}{}", name, ctx.channel().remoteAddress(), why, LogLimit.note(s));
      }
      ctx.channel().config().setAutoRead(false);
      if (last == null) {
        ctx.close();
      } else {
        ctx.writeAndFlush(last).addListener(ChannelFutureListener.CLOSE);
      }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      if (timer != null) {
        timer.cancel(false);
      }
      ctx.fireChannelInactive();
    }
  }

  private final class Dispatcher extends SimpleChannelInboundHandler<Envelope> {
    /** Requests read and not yet answered, and the payload bytes they hold. */
    private int inFlight;
    private long inFlightBytes;
    /** Requests of this connection handed to an executor and not yet answered. */
    private int executing;
    /**
     * Frames read while they could not be handled: the connection's answers could not be written,
     * or its requests already fill their share of the executor. They are handled in the order they
     * came once they can (one-way frames too: a flow's data must not overtake the request that
     * announces the flow); meanwhile nothing more is read from the connection.
     */
    private final ArrayDeque<Held> held = new ArrayDeque<>();

    /** A frame waiting; {@code spec} null for a one-way frame. */
    private record Held(OpSpec<?, ?> spec, Envelope env, long bytes) {}

    Dispatcher() {
      super(false);
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, Envelope env) throws Exception {
      if (env.kind() != Envelope.Kind.REQUEST) {
        if (held.isEmpty()) {
          oneway.onMessage(env, ctx.channel());
        } else {
          hold(ctx, new Held(null, env, 0));
        }
        return;
      }
      OpSpec<?, ?> spec = ops.get(env.message().getClass());
      if (spec == null) {
        env.release();
        throw new MalformedMessageException(name + " does not serve " + env.message().getClass().getSimpleName());
      }
      counters.increment(spec.countName());
      long bytes = env.message() instanceof HasPayload p ? p.payload().readableBytes() : 0;
      inFlight++;
      inFlightBytes += bytes;
      if (inFlight >= MAX_IN_FLIGHT || inFlightBytes >= MAX_IN_FLIGHT_BYTES) {
        ctx.channel().config().setAutoRead(false);
      }
      if (!held.isEmpty() || !canRun(ctx, spec)) {
        hold(ctx, new Held(spec, env, bytes));
        return;
      }
      dispatch(ctx, spec, env, bytes);
    }

    /**
     * Whether a request may run now: not while the peer does not read its answers (they would
     * pile up here), and not past the connection's share of an executor (one peer's pipeline must
     * not queue ahead of everyone else's requests).
     */
    private boolean canRun(ChannelHandlerContext ctx, OpSpec<?, ?> spec) {
      return ctx.channel().isWritable() && (spec.executor() == null || executing < MAX_EXECUTING);
    }

    private void hold(ChannelHandlerContext ctx, Held h) {
      held.add(h);
      ctx.channel().config().setAutoRead(false);
    }

    /** Handles held frames, in order, for as long as they can be. */
    private void drain(ChannelHandlerContext ctx) {
      try {
        while (!held.isEmpty()) {
          Held h = held.peek();
          if (h.spec() != null && !canRun(ctx, h.spec())) {
            break;
          }
          held.poll();
          if (h.spec() == null) {
            oneway.onMessage(h.env(), ctx.channel());
          } else {
            dispatch(ctx, h.spec(), h.env(), h.bytes());
          }
        }
      } catch (Exception e) {
        exceptionCaught(ctx, e);
      }
    }

    private void dispatch(ChannelHandlerContext ctx, OpSpec<?, ?> spec, Envelope env, long bytes) {
      if (spec.executor() == null) {
        run(ctx, spec, env, bytes, false);
      } else {
        executing++;
        try {
          spec.executor().execute(() -> run(ctx, spec, env, bytes, true));
        } catch (RejectedExecutionException e) {
          env.release();
          reply(ctx, env.id(), error(new FsException(Errno.EIO, name + " is shutting down")), bytes, true);
        }
      }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private void run(ChannelHandlerContext ctx, OpSpec spec, Envelope env, long bytes, boolean pooled) {
      long t0 = System.nanoTime();
      CompletionStage<? extends Message> result;
      try {
        result = spec.handler().handle(env.message(), new CallContext(ctx.channel(), env.id()));
      } catch (Throwable t) {
        reply(ctx, env.id(), error(t), bytes, pooled);
        return;
      }
      result.whenComplete((resp, err) -> {
        counters.add(spec.timeName(), (System.nanoTime() - t0) / 1000);
        reply(ctx, env.id(), err == null ? resp : error(err), bytes, pooled);
      });
    }

    private ErrorResp error(Throwable t) {
      Errno e = Errno.from(t);
      counters.increment("errors." + e.name());
      Throwable c = Errno.unwrap(t);
      return new ErrorResp(e.code(), c.getMessage() == null ? e.name() : c.getMessage());
    }

    /** Answers on the event loop; an answer for a connection that is gone is released. */
    private void reply(ChannelHandlerContext ctx, long id, Message resp, long bytes, boolean pooled) {
      if (ctx.executor().inEventLoop()) {
        replyNow(ctx, id, resp, bytes, pooled);
        return;
      }
      try {
        ctx.executor().execute(() -> replyNow(ctx, id, resp, bytes, pooled));
      } catch (RejectedExecutionException e) {
        HasPayload.releaseIfAny(resp); // the event loop is gone, and the connection with it
      }
    }

    private void replyNow(ChannelHandlerContext ctx, long id, Message resp, long bytes, boolean pooled) {
      if (ctx.isRemoved()) {
        HasPayload.releaseIfAny(resp); // the pipeline is torn down: nothing would encode (and release) it
      } else {
        ctx.writeAndFlush(Envelope.response(id, resp));
      }
      inFlight--;
      inFlightBytes -= bytes;
      if (pooled) {
        executing--;
      }
      if (!ctx.isRemoved()) {
        drain(ctx);
        resumeIfDrained(ctx);
      }
    }

    private void resumeIfDrained(ChannelHandlerContext ctx) {
      Channel ch = ctx.channel();
      if (inFlight < MAX_IN_FLIGHT / 2 && inFlightBytes < MAX_IN_FLIGHT_BYTES / 2 && held.isEmpty() && ch.isWritable()
          && !ch.config().isAutoRead()) {
        ch.config().setAutoRead(true);
      }
    }

    /** A peer that does not read its answers is not read from: answers never pile up without bound. */
    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
      Channel ch = ctx.channel();
      if (!ch.isWritable()) {
        ch.config().setAutoRead(false);
      } else {
        drain(ctx);
        resumeIfDrained(ctx);
      }
      ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      for (Held h; (h = held.poll()) != null; ) {
        h.env().release();
      }
      ctx.fireChannelInactive();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
      for (Held h; (h = held.poll()) != null; ) {
        h.env().release();
      }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      Throwable c = cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
      if (c instanceof MalformedMessageException || c instanceof TooLongFrameException) {
        counters.increment("connections.malformed");
        long s = badLog.admit();
        if (s >= 0) {
          LOG.warn("{}: closing connection from {}: {}{}", name, ctx.channel().remoteAddress(), c.getMessage(),
              LogLimit.note(s));
        }
      } else if (c instanceof IOException) {
        LOG.debug("{}: connection from {} failed: {}", name, ctx.channel().remoteAddress(), c.toString());
      } else {
        counters.increment("connections.failed");
        long s = badLog.admit();
        if (s >= 0) {
          LOG.warn("{}: closing connection from {}{}", name, ctx.channel().remoteAddress(), LogLimit.note(s), c);
        }
      }
      ctx.close();
    }
  }
}
