package org.flowfs.fuse;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.internal.PlatformDependent;
import java.nio.ByteBuffer;
import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import org.flowfs.common.Counters;

/**
 * Answers the kernel's READ requests without libfuse: the bytes go from where they are (the
 * read-ahead window that holds them) to {@code /dev/fuse} in one {@code writev}, header first.
 * libfuse 2's high-level read allocates a buffer of the request's size (1 MiB), has the file
 * system copy the bytes into it, writes it and frees it: a copy of every byte read and a
 * megabyte of malloc per request, and the node's path looked up under libfuse's lock, which the
 * read does not need (an open file is found by its handle, {@code fh}).
 *
 * <p>What libfuse would do besides is not needed for a READ: the caller's credentials (a read
 * checks none: the open did), and interrupt bookkeeping (an interrupted READ is answered when it
 * is done, as libfuse does for a file system without interrupt handlers).
 */
final class DirectRead {
  /** Where a READ's bytes come from: the mount's open files. */
  interface Source {
    /**
     * Up to {@code size} bytes of open file {@code fh} at {@code offset} (fewer at its end); the
     * caller releases the buffer. Failures are thrown and become the answer's errno.
     */
    ByteBuf readForKernel(long fh, long offset, int size);
  }

  /** struct iovec: void *base, size_t len. */
  private static final int IOVEC = 16;
  /**
   * Pieces of memory one answer takes at most before its bytes are gathered into one buffer: as
   * many as one writev takes (IOV_MAX, 1024) with the header. A window read by flows is slices of
   * the frames its bytes arrived in, themselves the network's reads (often 16-64 KiB): a 1 MiB
   * answer can be a hundred pieces.
   */
  static final int MAX_PIECES = 1023;

  private final InitChannel.LibC libc;
  private final Runtime rt;
  private final int fd;
  private final FuseOps ops;
  private final Counters counters;
  private final Source source;

  DirectRead(InitChannel.LibC libc, Runtime rt, int fd, Counters counters, Source source) {
    this.libc = libc;
    this.rt = rt;
    this.fd = fd;
    this.ops = new FuseOps(counters);
    this.counters = counters;
    this.source = source;
  }

  /** One FUSE thread's memory for answers: a header and the iovecs. */
  final class Scratch {
    private final Pointer header = Memory.allocateDirect(rt, FuseWire.OUT_HEADER, true);
    private final Pointer iov = Memory.allocateDirect(rt, (MAX_PIECES + 1) * IOVEC, true);
  }

  Scratch scratch() {
    return new Scratch();
  }

  /**
   * Answers the READ request at {@code request}, whose memory (the loop's receive buffer, of at
   * least {@link FuseLoop#MAX_REQUEST} bytes past its header) may be used for gathering.
   */
  void answer(Pointer request, Scratch s) {
    long unique = request.getLong(FuseWire.IN_UNIQUE);
    long fh = request.getLong(FuseWire.READ_IN_FH);
    long offset = request.getLong(FuseWire.READ_IN_OFFSET);
    int size = request.getInt(FuseWire.READ_IN_SIZE);
    ByteBuf[] got = new ByteBuf[1];
    int rc = ops.call("read", fh, () -> {
      got[0] = source.readForKernel(fh, offset, size);
      return got[0].readableBytes();
    });
    ByteBuf data = got[0];
    try {
      s.header.putInt(4, rc < 0 ? rc : 0);
      s.header.putLong(8, unique);
      int pieces = rc <= 0 ? 0 : gather(data, s.iov);
      if (pieces < 0) {
        // more pieces than the iovecs hold (or memory without an address): one copy into the
        // request's buffer, which the loop no longer needs
        data.getBytes(data.readerIndex(), Unpooled.wrappedBuffer(request.address(), rc, false).clear(), rc);
        setIovec(s.iov, 1, request.address(), rc);
        pieces = 1;
        counters.increment("fuse.read.gathered");
      }
      int length = FuseWire.OUT_HEADER + Math.max(rc, 0);
      s.header.putInt(0, length);
      setIovec(s.iov, 0, s.header.address(), FuseWire.OUT_HEADER);
      if (libc.writev(fd, s.iov, pieces + 1) < 0) {
        // the request was interrupted and is gone (ENOENT), or the file system is unmounting
        counters.increment("fuse.read.unanswered");
      }
    } finally {
      if (data != null) {
        data.release();
      }
    }
  }

  /** The pieces of {@code data}'s memory as iovecs 1..n; -1 if they do not fit or one has no address. */
  static int gather(ByteBuf data, Pointer iov) {
    ByteBuffer[] parts = data.nioBuffers(data.readerIndex(), data.readableBytes());
    if (parts.length > MAX_PIECES) {
      return -1;
    }
    int n = 0;
    for (ByteBuffer b : parts) {
      if (!b.isDirect()) {
        return -1;
      }
      if (b.remaining() > 0) {
        n++;
        setIovec(iov, n, PlatformDependent.directBufferAddress(b) + b.position(), b.remaining());
      }
    }
    return n;
  }

  static void setIovec(Pointer iov, int i, long address, long length) {
    iov.putLong((long) i * IOVEC, address);
    iov.putLong((long) i * IOVEC + 8, length);
  }
}
