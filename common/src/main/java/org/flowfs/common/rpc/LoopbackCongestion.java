package org.flowfs.common.rpc;

import io.netty.channel.Channel;
import io.netty.channel.unix.UnixChannel;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicBoolean;
import jnr.ffi.LibraryLoader;
import jnr.ffi.byref.IntByReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The TCP congestion control of connections between processes on the same host
 * ({@code rpc.loopback-congestion}). A kernel whose default is BBR paces every connection's sends
 * by timer; between processes of one host there is no link to pace for, and the timers cost CPU
 * that the flows of a client and its servers on one machine need: four readers of the process shape
 * on two cores moved 885-1,091 MB/s cold and 1,353-1,468 with the servers' datafiles cached under
 * BBR, 1,131-1,443 and 1,788-1,867 under CUBIC. Pacing is decided when a connection is established,
 * so the choice must come first: a client sets it on its socket before connecting to a peer on this
 * host; a server sets it on its listening socket, whose connections inherit it, and gives a
 * connection from another host the kernel's default back as it is accepted. Set with {@code
 * setsockopt(TCP_CONGESTION)} on epoll sockets; where it cannot be (NIO transport, an algorithm the
 * kernel does not allow) connections keep the kernel's choice and the first failure is logged.
 */
final class LoopbackCongestion {
  private static final Logger LOG = LoggerFactory.getLogger(LoopbackCongestion.class);
  private static final int IPPROTO_TCP = 6;
  private static final int TCP_CONGESTION = 13;
  private static final AtomicBoolean WARNED = new AtomicBoolean();

  /** The part of libc this needs. */
  public interface LibC {
    int setsockopt(int fd, int level, int name, byte[] value, int length);

    int getsockopt(int fd, int level, int name, byte[] value, IntByReference length);
  }

  private static final class Holder {
    static final LibC LIBC = load();
    /** Read once per process: every connection accepted from another host needs it. */
    static final String KERNEL_DEFAULT = readKernelDefault();

    private static LibC load() {
      try {
        return LibraryLoader.create(LibC.class).failImmediately().load("c");
      } catch (RuntimeException | LinkageError e) {
        warn("cannot load libc: " + e);
        return null;
      }
    }
  }

  private LoopbackCongestion() {}

  /** Before a client connects to {@code peer}: {@code algorithm} if the peer is on this host. */
  static void connecting(Channel ch, InetSocketAddress peer, String algorithm) {
    if (!algorithm.isEmpty() && local(peer)) {
      set(ch, algorithm, peer);
    }
  }

  /** A server's listening socket, before it binds: {@code algorithm} for what it accepts. */
  static void listening(Channel ch, String algorithm) {
    if (!algorithm.isEmpty()) {
      set(ch, algorithm, null);
    }
  }

  /** A connection just accepted: one from another host gets the kernel's default back. */
  static void accepted(Channel ch, String algorithm) {
    InetSocketAddress peer = (InetSocketAddress) ch.remoteAddress();
    if (!algorithm.isEmpty() && !local(peer)) {
      String def = kernelDefault();
      if (def != null && !def.equals(algorithm)) {
        set(ch, def, peer);
      }
    }
  }

  private static void set(Channel ch, String algorithm, InetSocketAddress peer) {
    LibC libc = Holder.LIBC;
    if (libc == null || !(ch instanceof UnixChannel u)) {
      return;
    }
    byte[] name = algorithm.getBytes(StandardCharsets.US_ASCII);
    if (libc.setsockopt(u.fd().intValue(), IPPROTO_TCP, TCP_CONGESTION, name, name.length) != 0) {
      warn("the kernel refused TCP congestion control '" + algorithm + "' (rpc.loopback-congestion) on "
          + (peer == null ? "a listening socket" : "a connection with " + peer)
          + ": is it in net.ipv4.tcp_allowed_congestion_control? Keeping the kernel's default");
    }
  }

  /** The congestion control of {@code ch}'s socket, or null where it cannot be read. */
  static String of(Channel ch) {
    LibC libc = Holder.LIBC;
    if (libc == null || !(ch instanceof UnixChannel u)) {
      return null;
    }
    byte[] name = new byte[16];
    IntByReference len = new IntByReference(name.length);
    if (libc.getsockopt(u.fd().intValue(), IPPROTO_TCP, TCP_CONGESTION, name, len) != 0) {
      return null;
    }
    int n = 0;
    while (n < Math.min(len.getValue(), name.length) && name[n] != 0) {
      n++;
    }
    return new String(name, 0, n, StandardCharsets.US_ASCII);
  }

  /** The kernel's default congestion control, or null where it cannot be read. */
  static String kernelDefault() {
    return Holder.KERNEL_DEFAULT;
  }

  private static String readKernelDefault() {
    try {
      return Files.readString(Path.of("/proc/sys/net/ipv4/tcp_congestion_control")).trim();
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  /**
   * Whether {@code peer} is this host: a loopback address, or one of this host's interfaces (a
   * client on a server's node that names the node's address).
   */
  static boolean local(InetSocketAddress peer) {
    if (peer == null) {
      return false;
    }
    InetAddress a = peer.getAddress(); // null for an unresolved one: not known to be here
    if (a == null) {
      return false;
    }
    if (a.isLoopbackAddress()) {
      return true;
    }
    try {
      return NetworkInterface.getByInetAddress(a) != null;
    } catch (IOException e) {
      return false;
    }
  }

  private static void warn(String why) {
    if (WARNED.compareAndSet(false, true)) {
      LOG.warn("{}", why);
    } else {
      LOG.debug("{}", why);
    }
  }
}
