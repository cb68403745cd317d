package org.flowfs.fuse;

import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;

/**
 * A libfuse channel on /dev/fuse whose send operation is a Java method: libfuse answers a request
 * processed on it through that method, which may complete the answer before it writes it ({@link
 * InitChannel}, {@link NoFlushChannel}, {@link StaleNodes}).
 */
final class SendChannel {
  /** struct fuse_chan_ops (libfuse 2.9): receive, send, destroy. */
  private static final int OPS_SIZE = 24;
  private static final int OPS_SEND = 8;
  /** struct iovec: void *iov_base, size_t iov_len. */
  private static final long IOVEC = 16;

  private final Pointer channel;
  /** Held so that the closure libfuse calls stays alive as long as the channel. */
  private final InitChannel.Send send;
  private final Pointer ops;

  /** A channel on {@code fd} whose buffer size {@code bufsize} libfuse sees as the channel's. */
  SendChannel(FuseLoop.LibFuseLoop lib, Runtime rt, int fd, long bufsize, InitChannel.Send send) {
    this.send = send;
    this.ops = Memory.allocateDirect(rt, OPS_SIZE, true);
    ops.putPointer(OPS_SEND, rt.getClosureManager().getClosurePointer(InitChannel.Send.class, send));
    this.channel = lib.fuse_chan_new(ops, fd, bufsize, null);
    if (channel == null) {
      throw new IllegalStateException("fuse_chan_new failed");
    }
  }

  /** What a channel of {@link #amending} does to an answer before it is written. */
  @FunctionalInterface
  interface Amend {
    /** Amends the answer libfuse sends, {@code count} iovecs at {@code iov}, header first. */
    void amend(Pointer iov, long count);
  }

  /**
   * A channel on {@code fd} whose answers {@code amend} sees first; then they are written to {@code
   * fd} as they are, with {@code writev}.
   */
  static SendChannel amending(FuseLoop.LibFuseLoop lib, Runtime rt, InitChannel.LibC libc, int fd, long bufsize,
      Amend amend) {
    return new SendChannel(lib, rt, fd, bufsize, (ch, iov, count) -> {
      amend.amend(iov, count);
      if (libc.writev(fd, iov, (int) count) < 0) {
        return -rt.getLastError(); // ENOENT: the request was interrupted; libfuse knows what to do
      }
      return 0;
    });
  }

  Pointer pointer() {
    return channel;
  }

  /** The bytes of an answer libfuse sends: the lengths of its {@code count} iovecs at {@code iov}. */
  static long length(Pointer iov, long count) {
    long length = 0;
    for (int i = 0; i < count; i++) {
      length += iov.getLong(i * IOVEC + 8);
    }
    return length;
  }

  /**
   * Gathers the answer's {@code count} iovecs at {@code iov} into {@code target}, at most {@code
   * limit} bytes; returns how many it gathered.
   */
  static long gather(Runtime rt, Pointer iov, long count, Pointer target, long limit) {
    long at = 0;
    for (int i = 0; i < count; i++) {
      long address = iov.getLong(i * IOVEC);
      long n = Math.min(iov.getLong(i * IOVEC + 8), limit - at);
      if (n > 0 && address != 0) {
        Pointer.wrap(rt, address).transferTo(0, target, at, n);
        at += n;
      }
    }
    return at;
  }
}
