package org.flowfs.common.rpc;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.config.RpcConfig;
import org.flowfs.common.wire.CommonOp.ErrorResp;
import org.flowfs.common.wire.Envelope;
import org.flowfs.common.wire.FrameDecoder;
import org.flowfs.common.wire.FrameEncoder;
import org.flowfs.common.wire.MalformedMessageException;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.MessageRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A server endpoint: accepts connections on one address, decodes frames, dispatches each request
 * through its {@link OpTable} and writes the answer back. A connection that sends a malformed
 * frame is logged and closed; every other connection carries on. Each connection has a bounded
 * number of requests in flight: past it the server stops reading from that connection.
 */
public final class RpcServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RpcServer.class);
  /** Requests in flight per connection before the server stops reading it. */
  static final int MAX_IN_FLIGHT = 1024;

  private final String name;
  private final NetRuntime net;
  private final InetSocketAddress bind;
  private final OpTable ops;
  private final RpcConfig config;
  private final MessageRegistry registry;
  private final FrameEncoder encoder;
  private final Counters counters;
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
  }

  public void onOneway(OnewayHandler handler) {
    this.oneway = handler;
  }

  /** Binds and starts accepting; returns the bound address (a port 0 becomes a real port). */
  public InetSocketAddress start() throws IOException {
    InetSocketAddress resolved = new InetSocketAddress(bind.getHostString(), bind.getPort());
    ServerBootstrap b = new ServerBootstrap()
        .group(net.group())
        .channel(net.serverChannelType())
        .option(ChannelOption.SO_REUSEADDR, true)
        .option(ChannelOption.SO_BACKLOG, 1024)
        .childOption(ChannelOption.TCP_NODELAY, true)
        .childOption(ChannelOption.SO_KEEPALIVE, true)
        .childHandler(new ChannelInitializer<Channel>() {
          @Override
          protected void initChannel(Channel ch) {
            channels.add(ch);
            ch.pipeline()
                .addLast("frame", new FrameDecoder(registry, (int) config.maxFrame()))
                .addLast("encode", encoder)
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

  private final class Dispatcher extends SimpleChannelInboundHandler<Envelope> {
    private int inFlight;

    Dispatcher() {
      super(false);
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, Envelope env) throws Exception {
      if (env.kind() != Envelope.Kind.REQUEST) {
        oneway.onMessage(env, ctx.channel());
        return;
      }
      OpSpec<?, ?> spec = ops.get(env.message().getClass());
      if (spec == null) {
        env.release();
        throw new MalformedMessageException(name + " does not serve " + env.message().getClass().getSimpleName());
      }
      counters.increment("op." + spec.name());
      if (++inFlight >= MAX_IN_FLIGHT) {
        ctx.channel().config().setAutoRead(false);
      }
      if (spec.executor() == null) {
        run(ctx, spec, env);
      } else {
        try {
          spec.executor().execute(() -> run(ctx, spec, env));
        } catch (RejectedExecutionException e) {
          env.release();
          reply(ctx, env.id(), error(new FsException(Errno.EIO, name + " is shutting down")));
        }
      }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private void run(ChannelHandlerContext ctx, OpSpec spec, Envelope env) {
      CompletionStage<? extends Message> result;
      try {
        result = spec.handler().handle(env.message(), new CallContext(ctx.channel(), env.id()));
      } catch (Throwable t) {
        reply(ctx, env.id(), error(t));
        return;
      }
      result.whenComplete((resp, err) -> reply(ctx, env.id(), err == null ? resp : error(err)));
    }

    private ErrorResp error(Throwable t) {
      Errno e = Errno.from(t);
      counters.increment("errors." + e.name());
      Throwable c = Errno.unwrap(t);
      return new ErrorResp(e.code(), c.getMessage() == null ? e.name() : c.getMessage());
    }

    private void reply(ChannelHandlerContext ctx, long id, Message resp) {
      ctx.writeAndFlush(Envelope.response(id, resp));
      ctx.executor().execute(() -> {
        if (--inFlight < MAX_IN_FLIGHT / 2 && !ctx.channel().config().isAutoRead()) {
          ctx.channel().config().setAutoRead(true);
        }
      });
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      Throwable c = cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
      if (c instanceof MalformedMessageException || c instanceof TooLongFrameException) {
        counters.increment("connections.malformed");
        LOG.warn("{}: closing connection from {}: {}", name, ctx.channel().remoteAddress(), c.getMessage());
      } else if (c instanceof IOException) {
        LOG.debug("{}: connection from {} failed: {}", name, ctx.channel().remoteAddress(), c.toString());
      } else {
        LOG.warn("{}: closing connection from {}", name, ctx.channel().remoteAddress(), c);
      }
      ctx.close();
    }
  }
}
