package org.flowfs.fuse;

import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;

/**
 * Answers ESTALE, not ENOENT, to a request on a node whose name went away while the kernel was on
 * its way to it, so that the kernel looks the name up again.
 *
 * <p>libfuse 2's high-level API finds a node's path in its own table of names. A rename over a
 * name (or an unlink of it) takes the replaced node out of that table at once, while a {@code
 * stat} or {@code open} whose path walk reached that node just before still sends its GETATTR or
 * OPEN for it; libfuse then answers ENOENT without asking the file system (or, when the replaced
 * file was open here and so renamed away to {@code .fuse_hidden*}, the file system answers ENOENT
 * for that name once the last close removed it). So {@code stat target} failed while {@code mv new
 * target} ran, although one of the two files had the name all along: 83 of the stats in a loop
 * beside 1,000 such renames with {@code client.attr-timeout = 0s}, and with the default timeout
 * when the replaced node's attributes had expired (a mount that paused for a second), as once in
 * a while in {@code PosixNamespaceTest}.
 *
 * <p>The kernel retries a path walk whose request on the node it reached ended in ESTALE once,
 * with every name on it looked up again ({@code LOOKUP_REVAL}; NFS's stale file handles take the
 * same way): stat, open, chmod, chown, utimensat, truncate and readlink do. The retry finds the
 * name's new node, or that the name is gone (ENOENT, from the lookup). So the requests on a node
 * that such calls send (GETATTR and SETATTR not on an open file's handle, OPEN, READLINK) are
 * processed on a channel of their own ({@link #wants}), whose answer ({@link #answer}) ENOENT
 * becomes ESTALE. Once per call: a node that truly has no name left (a removed working directory:
 * {@code stat .}) gets the same thread's retry back, and ENOENT for it as before; the last {@link
 * #RECENT} such answers are remembered by node and thread for that. An open file's handle needs no
 * path (libfuse's {@code nullpath_ok}), and the kernel does not retry those requests: they stay on
 * libfuse's channel. Counter {@code fuse.stale-retries}.
 */
final class StaleNodes {
  /** fuse_getattr_in.getattr_flags (the first field): the request names an open file's handle. */
  private static final int FUSE_GETATTR_FH = 1;
  /** fuse_setattr_in.valid (the first field): the request names an open file's handle. */
  private static final int FATTR_FH = 1 << 6;

  /** How many ESTALE answers are remembered: a retry comes right after its answer. */
  static final int RECENT = 64;

  private final SendChannel channel;
  private final Counters counters;
  /** The node and thread of the last {@link #RECENT} requests answered ESTALE, round-robin. */
  private final long[] nodes = new long[RECENT];
  private final int[] threads = new int[RECENT];
  private int next;

  /** A channel on {@code fd} (/dev/fuse) with libfuse's buffer size {@code bufsize}. */
  StaleNodes(FuseLoop.LibFuseLoop lib, Runtime rt, InitChannel.LibC libc, int fd, long bufsize, Counters counters) {
    this.counters = counters;
    this.channel = SendChannel.amending(lib, rt, libc, fd, bufsize, this::answer);
  }

  /** Whether the request at {@code request} is one a path walk sends for the node it reached. */
  static boolean wants(Pointer request) {
    return switch (FuseWire.opcode(request)) {
      case FuseWire.FUSE_GETATTR -> (request.getInt(FuseWire.IN_HEADER) & FUSE_GETATTR_FH) == 0;
      case FuseWire.FUSE_SETATTR -> (request.getInt(FuseWire.IN_HEADER) & FATTR_FH) == 0;
      case FuseWire.FUSE_OPEN, FuseWire.FUSE_READLINK -> true;
      default -> false;
    };
  }

  /** The channel to have libfuse process such a request on. */
  Pointer channel() {
    return channel.pointer();
  }

  /**
   * libfuse's answer (header first, in {@code iov}) to the request the calling FUSE thread
   * processes: ENOENT becomes ESTALE, unless it answers the retry of one so answered.
   */
  void answer(Pointer iov, long count) {
    Pointer header = iov.getPointer(0);
    if (header.getInt(FuseWire.OUT_ERROR) == -Errno.ENOENT.code()
        && firstFor(KernelRequest.current().node(), KernelRequest.current().pid())) {
      header.putInt(FuseWire.OUT_ERROR, -Errno.ESTALE.code());
      counters.increment("fuse.stale-retries");
    }
  }

  /** Whether {@code thread}'s request on {@code node} was not answered ESTALE lately; remembers it. */
  private synchronized boolean firstFor(long node, int thread) {
    for (int i = 0; i < RECENT; i++) {
      if (nodes[i] == node && threads[i] == thread) {
        return false;
      }
    }
    nodes[next] = node;
    threads[next] = thread;
    next = (next + 1) % RECENT;
    return true;
  }
}
