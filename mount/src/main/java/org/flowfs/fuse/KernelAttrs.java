package org.flowfs.fuse;

import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drops the kernel's cached attributes of an inode ({@code FUSE_NOTIFY_INVAL_INODE}, attributes
 * only: the cached pages stay), so that it asks for them again when it next needs them.
 *
 * <p>An open revalidates a file's attributes with the metadata server (close-to-open), but the
 * kernel keeps its own copy, trusted for the attribute timeout, and a copy it got from this
 * client's caches (its inode evicted and looked up again, say) can be older than another client's
 * last close: with it the kernel ends every read at the old size. So when the open finds the
 * attributes changed, it drops the kernel's copy before it answers, and the reader's first read
 * past the old size asks again. Only attributes: without a page range the kernel takes no lock
 * the open could hold, so a FUSE thread may write this while it processes the OPEN.
 */
final class KernelAttrs {
  private static final Logger LOG = LoggerFactory.getLogger(KernelAttrs.class);
  /** The notification header + fuse_notify_inval_inode_out (ino, off, len). */
  private static final int LENGTH = FuseWire.OUT_HEADER + 24;
  private static final ThreadLocal<Pointer> OUT = new ThreadLocal<>();

  private final InitChannel.LibC libc;
  private final Runtime rt;
  private final int fd;

  KernelAttrs(InitChannel.LibC libc, Runtime rt, int fd) {
    this.libc = libc;
    this.rt = rt;
    this.fd = fd;
  }

  /** Drops the kernel's attributes of the file the calling FUSE thread is opening (nothing outside an OPEN). */
  void dropForThisOpen() {
    long node = KernelRequest.current().nodeIf(FuseWire.FUSE_OPEN);
    if (node != 0) {
      drop(node);
    }
  }

  /** Drops the kernel's attributes of {@code node}. */
  void drop(long node) {
    notify(node, -1); // offset < 0: attributes only
  }

  /**
   * Drops the kernel's attributes and cached pages of {@code node}: another client may have
   * written it (a POSIX lock was just granted; the pages are read again from the mount).
   */
  void dropPages(long node) {
    notify(node, 0); // from offset 0, length 0: to the end
  }

  private void notify(long node, long offset) {
    Pointer out = OUT.get();
    if (out == null) {
      out = Memory.allocateDirect(rt, LENGTH, true);
      OUT.set(out);
    }
    FuseWire.notifyHeader(out, LENGTH, FuseWire.NOTIFY_INVAL_INODE);
    out.putLong(16, node);
    out.putLong(24, offset);
    out.putLong(32, 0);
    if (libc.write(fd, out, LENGTH) < 0) { // the kernel forgot the node: nothing to drop
      LOG.debug("dropping the attributes of node {} failed: errno {}", node, rt.getLastError());
    }
  }
}
