package org.flowfs.fuse;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import org.flowfs.client.FileSystemClient;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.Handle;

/**
 * Answers the kernel's GETXATTR of a name a file is known not to have, ENODATA, without libfuse.
 * The kernel caches no extended attribute, so every {@code ls -l} asks each entry for two
 * ({@code security.selinux}, {@code system.posix_acl_access}), and a copy or an archiver asks for
 * more: two FUSE round trips per file that nearly always end in "no such attribute", which the
 * client already knows from the listing ({@link FileSystemClient#xattrKnownAbsent}). Through
 * libfuse 2's high-level API each of them also had libfuse build the node's path under its lock,
 * a call up into Java with that path as a string, and the path resolved again, name by name.
 * What this saves is that part alone: the mount's CPU per such GETXATTR went from 5.7-8.9 to
 * 5.5-7.1 us (bindfs: 6.0-6.6; a loop of {@code getxattr}s of 100 listed files, the mount's
 * utime+stime over 0.6 s, two builds in turn); the rest, most of it, is the kernel switching from
 * the caller to a FUSE thread and back (66% of the mount's samples, {@code finish_task_switch}).
 *
 * <p>Here the answer comes from the request itself: its node names a file learned when a request
 * on that node last went through libfuse ({@link KernelRequest}, {@link #learned}: a GETATTR, or a
 * GETXATTR this could not answer) or when a READDIRPLUS handed it to the kernel ({@link
 * #lookedUp}), trusted for the client's entry timeout, as the client trusts the name that led to
 * it. A node of libfuse's is a name; a rename here moves the node with the
 * file, an unlink retires it (libfuse does not reuse a number before it wraps), so what can go
 * stale is a name another client points at another file, and the client's own name cache trusts
 * that for the same time. Anything else, a virtual attribute ({@code flowfs.}), an attribute the
 * client does not know to be absent, a node not learned or learned too long ago, goes to libfuse
 * as before. The kernel checked the caller's access before it asked (default_permissions); an
 * answer here needs no credentials.
 *
 * <p>At most {@link #MAX_NODES} nodes are kept; past that they are forgotten and learned again.
 * Thread safe.
 */
final class AbsentXattrs {
  /** What the client knows of extended attributes and how long it trusts a name. */
  interface Source {
    /** Whether the object {@code h} is known not to have the extended attribute {@code name}. */
    boolean xattrKnownAbsent(Handle h, String name);

    /** How long a node learned here names the same file (the client's entry timeout). */
    Duration entryTimeout();
  }

  static final int MAX_NODES = 1 << 16;
  /** fuse_getxattr_in: uint32 size, uint32 padding; the name follows, NUL-terminated. */
  private static final int IN_NAME = FuseWire.IN_HEADER + 8;
  /** Longest attribute name (XATTR_NAME_MAX). */
  private static final int NAME_MAX = 255;

  private record Known(Handle handle, long untilNanos) {}

  private final InitChannel.LibC libc;
  private final int fd;
  private final FuseOps ops;
  private final Counters counters;
  private final Source source;
  private final long trustNanos;
  private final ConcurrentHashMap<Long, Known> byNode = new ConcurrentHashMap<>();
  /** Each FUSE thread's answer: a header. */
  private final ThreadLocal<Pointer> header;

  AbsentXattrs(InitChannel.LibC libc, Runtime rt, int fd, Counters counters, Source source) {
    this.libc = libc;
    this.fd = fd;
    this.ops = new FuseOps(counters);
    this.counters = counters;
    this.source = source;
    this.trustNanos = source.entryTimeout().toNanos();
    this.header = ThreadLocal.withInitial(() -> Memory.allocateDirect(rt, FuseWire.OUT_HEADER, true));
  }

  /**
   * The request being processed found its file: {@code h}. A GETATTR's or GETXATTR's node is
   * learned now; another request's file is kept until {@link #lookedUp} names its node.
   */
  void learned(Handle h) {
    KernelRequest r = KernelRequest.current();
    long node = r.opcode() == FuseWire.FUSE_GETATTR || r.opcode() == FuseWire.FUSE_GETXATTR ? r.node() : 0;
    if (node == 0) {
      r.found(h); // for lookedUp
    } else {
      learn(node, h);
    }
  }

  /**
   * The LOOKUP the calling thread had libfuse process ({@link ReaddirPlus}) was answered with
   * {@code node}: the file it found is learned for that node.
   */
  void lookedUp(long node) {
    KernelRequest r = KernelRequest.current();
    if (r.found() != null) {
      learn(node, r.found());
      r.found(null);
    }
  }

  private void learn(long node, Handle h) {
    if (trustNanos <= 0) {
      return;
    }
    if (byNode.size() >= MAX_NODES) {
      byNode.clear();
    }
    byNode.put(node, new Known(h, System.nanoTime() + trustNanos));
  }

  /** Answers the GETXATTR at {@code request} if its file is known not to have the name; false: libfuse's to answer. */
  boolean answer(Pointer request) {
    Known k = byNode.get(request.getLong(FuseWire.IN_NODEID));
    if (k == null || System.nanoTime() - k.untilNanos() > 0) {
      return false;
    }
    int room = Math.min(request.getInt(FuseWire.IN_LEN) - IN_NAME, NAME_MAX + 1);
    if (room <= 0) {
      return false;
    }
    String name = request.getString(IN_NAME, room, StandardCharsets.UTF_8);
    if (name.startsWith(FileSystemClient.VIRTUAL_XATTR_PREFIX) || !source.xattrKnownAbsent(k.handle(), name)) {
      return false;
    }
    Pointer out = header.get();
    out.putInt(0, FuseWire.OUT_HEADER);
    out.putInt(4, -Errno.ENODATA.code());
    out.putLong(8, request.getLong(FuseWire.IN_UNIQUE));
    libc.write(fd, out, FuseWire.OUT_HEADER); // fails only for a request interrupted meanwhile: nothing to do
    ops.counted("getxattr", Errno.ENODATA);
    counters.increment("fuse.getxattr.absent-known");
    return true;
  }
}
