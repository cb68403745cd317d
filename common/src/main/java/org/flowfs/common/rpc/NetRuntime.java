package org.flowfs.common.rpc;

import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.util.concurrent.TimeUnit;
import org.flowfs.common.NamedThreads;

/**
 * The event loops of one process, shared by its servers and clients: native epoll where it is
 * available, NIO otherwise. Closing it stops every loop (bounded wait).
 */
public final class NetRuntime implements AutoCloseable {
  /**
   * How much a socket read takes at once: adaptive, up to 1 MiB, so that a flow's 256 KiB data
   * frame mostly arrives in one read and the frame decoder need not copy it together.
   */
  public static final io.netty.channel.RecvByteBufAllocator RECEIVE_BUFFERS =
      new io.netty.channel.AdaptiveRecvByteBufAllocator(512, 64 * 1024, 1024 * 1024);

  /** The most a server's socket read takes at once (see {@link #SERVER_RECEIVE_BUFFERS}). */
  public static final int SERVER_READ_MAX = 64 * 1024;

  /**
   * How much a server's socket read takes at once: up to 64 KiB. A read is one stretch of kernel
   * code (copying the bytes out of the socket) that a thread woken on the same CPU waits for, since
   * a kernel without preemption does not stop it: where servers share a machine with applications
   * (the benchmark's machine, a node that is client and server at once), 1 MiB reads of write flows
   * made the tail of a random writer's latency (fio p99 232-261 us against 191-230 with 64 KiB on
   * the process shape). A server receives mostly write data, which its storage threads take a flow
   * buffer at a time whether it arrived in one read or in four (the frame decoder keeps the reads
   * as views, no copy); clients keep large reads for read flows.
   */
  public static final io.netty.channel.RecvByteBufAllocator SERVER_RECEIVE_BUFFERS =
      new io.netty.channel.AdaptiveRecvByteBufAllocator(512, SERVER_READ_MAX, SERVER_READ_MAX);

  private final EventLoopGroup group;
  private final boolean epoll;

  private NetRuntime(EventLoopGroup group, boolean epoll) {
    this.group = group;
    this.epoll = epoll;
  }

  /** A runtime with {@code threads} event loops named {@code name-N}. */
  public static NetRuntime create(String name, int threads) {
    DefaultThreadFactory tf = new DefaultThreadFactory(name, true) {
      @Override
      protected Thread newThread(Runnable r, String threadName) {
        return super.newThread(NamedThreads.confined(r), threadName); // whoever hands the loop its first task
      }
    };
    if (Epoll.isAvailable()) {
      return new NetRuntime(new EpollEventLoopGroup(threads, tf), true);
    }
    return new NetRuntime(new NioEventLoopGroup(threads, tf), false);
  }

  public EventLoopGroup group() {
    return group;
  }

  public Class<? extends Channel> channelType() {
    return epoll ? EpollSocketChannel.class : NioSocketChannel.class;
  }

  public Class<? extends ServerChannel> serverChannelType() {
    return epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
  }

  @Override
  public void close() {
    group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
  }
}
