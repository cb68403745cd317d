package org.flowfs.fuse;

import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;

/**
 * A libfuse channel on /dev/fuse whose send operation is a Java method: libfuse answers a request
 * processed on it through that method, which may complete the answer before it writes it ({@link
 * InitChannel}, {@link NoFlushChannel}).
 */
final class SendChannel {
  /** struct fuse_chan_ops (libfuse 2.9): receive, send, destroy. */
  private static final int OPS_SIZE = 24;
  private static final int OPS_SEND = 8;

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

  Pointer pointer() {
    return channel;
  }
}
