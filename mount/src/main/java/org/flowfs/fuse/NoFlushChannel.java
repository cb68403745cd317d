package org.flowfs.fuse;

import jnr.ffi.Pointer;
import jnr.ffi.Runtime;

/**
 * The libfuse channel that answers the kernel's OPEN of a file for reading only, adding what
 * libfuse 2 cannot say: {@code FOPEN_NOFLUSH} ({@code fuse_kernel.h}, protocol 7.35, Linux 5.16;
 * older kernels ignore the bit). The close of such a file then sends the mount no FLUSH: a reader
 * has nothing to push out (a flush pushes this client's buffered writes, which only a writable
 * open makes, and those go at that open's own close), and the FLUSH was a round trip through the
 * kernel and a FUSE worker inside every {@code close(2)} of a file read ({@code cat}, {@code diff
 * -r}, a compiler's headers). But the kernel releases a process's POSIX record locks on a file at
 * any of its closes of it only through that FLUSH (libfuse then unlocks them, {@code
 * FlowFuse#lock}): so while the mount holds record locks the bit is left off, and every close
 * flushes (a read-only open made before the first lock and closed while it is held still sends
 * none; its owner's locks go at the latest with the open they were taken through). An open that
 * truncates, or may write, is answered on libfuse's own channel as before.
 */
final class NoFlushChannel {
  /** fuse_kernel.h: no FLUSH at the close of the file. */
  static final int FOPEN_NOFLUSH = 1 << 5;
  private static final int O_ACCMODE = 03;
  private static final int O_RDONLY = 0;
  private static final int O_TRUNC = 01000;
  /** fuse_open_in: uint32 flags, uint32 open_flags; after the request header. */
  private static final int IN_OPEN_FLAGS = FuseWire.IN_HEADER;
  /** fuse_open_out: uint64 fh, uint32 open_flags, uint32 padding. */
  private static final int OUT_OPEN_FLAGS = 8;
  /** struct iovec: void *iov_base, size_t iov_len. */
  private static final int IOV = 16;

  private final SendChannel channel;
  private final StaleNodes stale;
  private final java.util.function.BooleanSupplier recordLocks;

  /**
   * A channel on {@code fd} (/dev/fuse) with libfuse's buffer size {@code bufsize}; its failures
   * go by {@code stale} (null: as libfuse gave them); while {@code recordLocks} says record locks
   * are held, it answers as libfuse does.
   */
  NoFlushChannel(FuseLoop.LibFuseLoop lib, Runtime rt, InitChannel.LibC libc, int fd, long bufsize, StaleNodes stale,
      java.util.function.BooleanSupplier recordLocks) {
    this.stale = stale;
    this.recordLocks = recordLocks;
    this.channel = SendChannel.amending(lib, rt, libc, fd, bufsize, this::answer);
  }

  /** Whether the request at {@code request} is an OPEN for reading only, without O_TRUNC. */
  static boolean wants(Pointer request) {
    if (FuseWire.opcode(request) != FuseWire.FUSE_OPEN) {
      return false;
    }
    int flags = request.getInt(IN_OPEN_FLAGS);
    return (flags & O_ACCMODE) == O_RDONLY && (flags & O_TRUNC) == 0;
  }

  /** The channel to have libfuse process such an OPEN on, to answer here. */
  Pointer channel() {
    return channel.pointer();
  }

  /**
   * libfuse's answer: a success (header and fuse_open_out) gets FOPEN_NOFLUSH, and FOPEN_KEEP_CACHE
   * when {@link OpenStore} stored the file's pages for it; a failure goes by {@link StaleNodes}.
   */
  private void answer(Pointer iov, long count) {
    if (count >= 2 && iov.getLong(IOV + 8) >= OUT_OPEN_FLAGS + 4) {
      Pointer out = iov.getPointer(IOV);
      int keep = OpenStore.keepsPages() ? OpenStore.FOPEN_KEEP_CACHE : 0;
      int noFlush = recordLocks.getAsBoolean() ? 0 : FOPEN_NOFLUSH;
      out.putInt(OUT_OPEN_FLAGS, out.getInt(OUT_OPEN_FLAGS) | noFlush | keep);
    } else if (stale != null) {
      stale.answer(iov, count);
    }
  }
}
