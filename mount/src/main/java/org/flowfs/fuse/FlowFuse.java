package org.flowfs.fuse;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import org.flowfs.client.Caller;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.client.PageSink;
import org.flowfs.common.Attr;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.RecordLocks;
import org.flowfs.common.wire.MetaOp;
import org.flowfs.common.wire.MetaOp.Dirent;
import org.flowfs.common.wire.MetaOp.FlockReq;
import org.flowfs.common.wire.MetaOp.SetxattrReq;
import ru.serce.jnrfuse.FuseFillDir;
import ru.serce.jnrfuse.FuseStubFS;
import ru.serce.jnrfuse.struct.FileStat;
import ru.serce.jnrfuse.struct.Flock;
import ru.serce.jnrfuse.struct.FuseContext;
import ru.serce.jnrfuse.struct.FuseFileInfo;
import ru.serce.jnrfuse.struct.Statvfs;
import ru.serce.jnrfuse.struct.Timespec;

/**
 * The FUSE adapter: converts each callback's arguments, calls the {@link FileSystemClient}, and
 * returns through {@link FuseOps#call}, the only place errors become errnos. No file-system logic
 * lives here. Buffers from the kernel are wrapped, not copied, before the client sees them.
 */
final class FlowFuse extends FuseStubFS implements DirectRead.Source, AbsentXattrs.Source {
  private static final long UTIME_NOW = (1L << 30) - 1;
  private static final long UTIME_OMIT = (1L << 30) - 2;
  /** The earliest time a file can have, in ns since the epoch: just above the client's UTIME_ values. */
  private static final long EARLIEST_NS = Math.max(FileSystemClient.UTIME_NOW, FileSystemClient.UTIME_OMIT) + 1;
  private static final int XATTR_CREATE = 1;
  private static final int XATTR_REPLACE = 2;

  private final FileSystemClient fs;
  private final FuseOps ops;
  private final String name;
  private volatile Runnable onUnmount = () -> {};
  /** Where reads put the pages they read around (null until the loop starts, and for no read-around). */
  private volatile PageStore pages;
  /** The kernel's page cache, to store into (null until the loop starts). */
  private volatile PageStore kernelPages;
  /** Drops the kernel's cached attributes (null until the loop starts). */
  private volatile KernelAttrs kernelAttrs;
  /** Stores a small file's bytes at its open (null until the loop starts). */
  private volatile OpenStore opens;
  /** The kernel's nodes of files with more than one name (null until the loop starts). */
  private volatile LinkNodes links;
  private volatile AbsentXattrs absentXattrs;

  FlowFuse(FileSystemClient fs, String name) {
    this.fs = fs;
    this.ops = new FuseOps(fs.counters());
    this.name = name;
    allowUtimeOmit();
  }

  /**
   * Sets {@code flag_utime_omit_ok} in libfuse's operations struct. Without it libfuse 2 drops a
   * time update that leaves one of the two times alone ({@code touch -a}, {@code touch -m}).
   * jnr-fuse models the flags word (C bitfields: nullpath_ok, nopath, utime_omit_ok, reserved)
   * as padding, so the bit is set in the struct's memory: bit 2 of that word on little-endian.
   */
  private void allowUtimeOmit() {
    Pointer mem = jnr.ffi.Struct.getMemory(fuseOperations);
    long at = StructOffsets.offsetOf(fuseOperations.flag_nullpath_ok);
    mem.putInt(at, mem.getInt(at) | (1 << 2));
  }

  void started(PageStore p, KernelAttrs attrs, OpenStore opens, AbsentXattrs xattrs) {
    this.absentXattrs = xattrs;
    this.pages = fs.config().client().readAround() > 0 ? p : null;
    this.kernelPages = p;
    this.opens = fs.config().client().openStore() ? opens : null;
    this.kernelAttrs = attrs;
    this.links = attrs == null ? null : new LinkNodes(attrs);
  }

  void onUnmount(Runnable r) {
    this.onUnmount = r;
  }

  @Override
  protected String getFSName() {
    return name;
  }

  /** jnr-fuse's own shutdown hook calls this: route it to the orderly unmount. */
  @Override
  public void umount() {
    onUnmount.run();
  }

  void unmountNow() {
    super.umount();
  }

  /** libfuse's operations struct, wired to this adapter's callbacks. */
  ru.serce.jnrfuse.struct.FuseOperations operations() {
    return fuseOperations;
  }

  /** The calling process's credentials; valid only on the FUSE thread during the callback. */
  private Caller caller() {
    FuseContext c = getContext();
    return new Caller(c.uid.intValue(), c.gid.intValue(), c.pid.intValue(), c.umask.intValue() & 0777);
  }

  private static ByteBuf wrap(Pointer p, long size) {
    return Unpooled.wrappedBuffer(p.address(), (int) size, false);
  }

  private OpenFile file(FuseFileInfo fi) {
    return fs.openFile(fi.fh.get());
  }

  /**
   * libfuse 2's {@code fuse_file_info.writepage}: set on writes of the kernel's cached pages
   * (shared mappings). jnr-fuse models that {@code int} as padding: it is the 4 bytes from the
   * member it names {@code direct_io}, right after {@code fh_old}.
   */
  private static boolean writepage(FuseFileInfo fi) {
    return jnr.ffi.Struct.getMemory(fi).getInt(StructOffsets.offsetOf(fi.direct_io)) != 0;
  }

  @Override
  public int getattr(String path, FileStat stat) {
    boolean kill = SetidKill.take(); // a setattr that only clears set-ID bits, answered with this getattr
    return ops.call("getattr", path, () -> {
      answer(stat, kill ? fs.killSetid(path) : fs.getattr(path));
      return 0;
    });
  }

  @Override
  public int fgetattr(String path, FileStat stat, FuseFileInfo fi) {
    boolean kill = SetidKill.take();
    return ops.call("fgetattr", path, () -> {
      if (fi.fh.get() == 0) {
        answer(stat, kill ? fs.killSetid(path) : fs.getattr(path));
      } else {
        answer(stat, kill ? fs.killSetid(file(fi)) : fs.getattr(file(fi)));
      }
      return 0;
    });
  }

  /** Fills the answer to a getattr (or to a setattr: libfuse answers one with a getattr). */
  private void answer(FileStat stat, Attr a) {
    Stats.fill(stat, a);
    learned(a.handle());
    LinkNodes l = links;
    if (l != null) {
      l.answered(a);
    }
  }

  /**
   * Runs {@code change}, which changes the file {@code path} names (if any, when it starts), and
   * keeps the kernel's other names of that file in step ({@link LinkNodes}).
   */
  private void changing(String path, Runnable change) {
    LinkNodes l = links;
    Attr before = null;
    if (l != null && l.any()) {
      try {
        before = fs.getattr(path);
      } catch (FsException e) {
        // no such name (a rename to a new name): nothing to keep in step
      }
    }
    change.run();
    if (before != null) {
      l.changed(before.handle().id());
    }
  }

  @Override
  public int readlink(String path, Pointer buf, long size) {
    return ops.call("readlink", path, () -> {
      byte[] t = fs.readlink(path).getBytes(StandardCharsets.UTF_8);
      int n = (int) Math.min(t.length, size - 1);
      buf.put(0, t, 0, n);
      buf.putByte(n, (byte) 0);
      return 0;
    });
  }

  @Override
  public int mknod(String path, long mode, long rdev) {
    Caller c = caller();
    return ops.call("mknod", path, () -> {
      fs.mknod(path, (int) mode, (int) rdev, c);
      return 0;
    });
  }

  @Override
  public int mkdir(String path, long mode) {
    Caller c = caller();
    return ops.call("mkdir", path, () -> {
      fs.mkdir(path, (int) mode, c);
      return 0;
    });
  }

  @Override
  public int unlink(String path) {
    return ops.call("unlink", path, () -> {
      changing(path, () -> fs.unlink(path)); // the file's other names lose a link
      return 0;
    });
  }

  @Override
  public int rmdir(String path) {
    return ops.call("rmdir", path, () -> {
      fs.rmdir(path);
      return 0;
    });
  }

  @Override
  public int symlink(String target, String path) {
    Caller c = caller();
    return ops.call("symlink", path, () -> {
      fs.symlink(target, path, c);
      return 0;
    });
  }

  @Override
  public int rename(String from, String to) {
    return ops.call("rename", from, () -> {
      // a file renamed over loses a link, and the file moved shows a new ctime through every name
      changing(to, () -> changing(from, () -> fs.rename(from, to, 0)));
      return 0;
    });
  }

  @Override
  public int link(String existing, String path) {
    return ops.call("link", path, () -> {
      Attr a = fs.link(existing, path);
      LinkNodes l = links;
      if (l != null) {
        l.linked(a);
      }
      return 0;
    });
  }

  @Override
  public int chmod(String path, long mode) {
    return ops.call("chmod", path, () -> {
      fs.chmod(path, (int) mode);
      return 0;
    });
  }

  @Override
  public int chown(String path, long uid, long gid) {
    // the kernel asks every chown of a file to clear its set-ID bits; this chown does so itself (as
    // on Linux), so the getattr libfuse answers it with must not clear them in a second setattr
    SetidKill.take();
    return ops.call("chown", path, () -> {
      fs.chown(path, (int) uid, (int) gid);
      return 0;
    });
  }

  @Override
  public int truncate(String path, long size) {
    boolean kill = SetidKill.take();
    return ops.call("truncate", path, () -> {
      fs.truncate(path, size, kill);
      return 0;
    });
  }

  @Override
  public int ftruncate(String path, long size, FuseFileInfo fi) {
    boolean kill = SetidKill.take();
    return ops.call("ftruncate", path, () -> {
      fs.truncate(file(fi), size, kill);
      return 0;
    });
  }

  @Override
  public int fallocate(String path, int mode, long off, long length, FuseFileInfo fi) {
    // a local file system clears set-ID bits unless the caller may keep them; Linux 6.18 asks for
    // that with a setattr before the call (PosixFallocateTest passes without this), older kernels
    // send nothing
    boolean kill = caller().uid() != 0;
    return ops.call("fallocate", path, () -> {
      fs.allocate(file(fi), mode, off, length, kill);
      return 0;
    });
  }

  @Override
  public int utimens(String path, Timespec[] ts) {
    return ops.call("utimens", path, () -> {
      fs.utimens(path, time(ts[0]), time(ts[1]));
      return 0;
    });
  }

  private static long time(Timespec t) {
    long ns = t.tv_nsec.longValue();
    if (ns == UTIME_NOW) {
      return FileSystemClient.UTIME_NOW;
    }
    if (ns == UTIME_OMIT) {
      return FileSystemClient.UTIME_OMIT;
    }
    // ns since the epoch in a long: years 1677 to 2262; times beyond are clamped, as the kernel
    // clamps times to the range a file system stores
    long sec = t.tv_sec.get();
    try {
      return Math.max(Math.addExact(Math.multiplyExact(sec, 1_000_000_000L), ns), EARLIEST_NS);
    } catch (ArithmeticException e) {
      return sec < 0 ? EARLIEST_NS : Long.MAX_VALUE;
    }
  }

  @Override
  public int open(String path, FuseFileInfo fi) {
    return ops.call("open", path, () -> {
      OpenFile f = fs.open(path, fi.flags.get());
      fi.fh.set(f.id());
      KernelAttrs k = kernelAttrs;
      if (f.attrsChanged() && k != null) {
        k.dropForThisOpen(); // before the answer: the reader's first read must not end at the old size
      }
      OpenStore o = opens;
      ByteBuf whole = o == null || !OpenStore.mayStore() ? null : fs.wholeFile(f); // not for a node with pages
      if (whole != null) {
        o.opened(whole);
      }
      return 0;
    });
  }

  /** flock(2)'s operations, as libfuse hands them on. */
  private static final int LOCK_SH = 1;
  private static final int LOCK_EX = 2;
  private static final int LOCK_NB = 4;
  private static final int LOCK_UN = 8;

  /**
   * {@code flock(2)} on an open regular file, held against every client of the file system on
   * the metadata server; released at the latest with the open (the last close of the open file
   * description). The kernel keeps a directory's flock locks itself, local to this mount, as it
   * keeps fcntl's POSIX locks.
   */
  @Override
  public int flock(String path, FuseFileInfo fi, int op) {
    long owner = fi.lock_owner.get();
    int kind = (op & LOCK_UN) != 0 ? FlockReq.UNLOCK : (op & LOCK_EX) != 0 ? FlockReq.EXCLUSIVE
        : (op & LOCK_SH) != 0 ? FlockReq.SHARED : 0;
    if (kind == 0) {
      return -Errno.EINVAL.code();
    }
    return ops.call("flock", path, () -> {
      fs.flock(fi.fh.get(), owner, kind, (op & LOCK_NB) == 0, FuseLoop::interrupted);
      return 0;
    });
  }

  /** fcntl(2)'s commands and lock types as libfuse hands them on (Linux, 64-bit offsets). */
  private static final int F_GETLK = 5;
  private static final int F_SETLK = 6;
  private static final int F_SETLKW = 7;
  private static final short F_RDLCK = 0;
  private static final short F_WRLCK = 1;
  private static final short F_UNLCK = 2;

  /**
   * {@code fcntl(2)}'s POSIX record locks (and open file description locks) on an open regular
   * file, held against every client on the metadata server. As NFS does, taking a lock drops the
   * kernel's cached pages of the file, and releasing one first pushes this client's buffered
   * writes of it ({@link FileSystemClient#recordLock}), so that processes on several machines that
   * read-modify-write under locks see each other's bytes. libfuse's own table answers an
   * {@code F_GETLK} that another owner on this mount refuses; libfuse unlocks the owner's locks at
   * each FLUSH (a close) through here too, which costs nothing when it holds none.
   */
  @Override
  public int lock(String path, FuseFileInfo fi, int cmd, Flock lock) {
    long owner = fi.lock_owner.get();
    int type = switch (lock.l_type.get()) {
      case F_RDLCK -> RecordLocks.READ;
      case F_WRLCK -> RecordLocks.WRITE;
      case F_UNLCK -> RecordLocks.UNLOCK;
      default -> 0;
    };
    long start = lock.l_start.get();
    long len = lock.l_len.get();
    if (type == 0 || start < 0 || len < 0 || (len > 0 && start + len - 1 < start)) {
      return -Errno.EINVAL.code();
    }
    long end = len == 0 ? RecordLocks.EOF : start + len - 1;
    long fh = fi.fh.get();
    return ops.call("lock", path, () -> {
      switch (cmd) {
        case F_GETLK -> {
          MetaOp.RecordLockResp r = fs.testRecordLock(fh, owner, type, start, end);
          lock.l_whence.set(0);
          if (r.type() == RecordLocks.UNLOCK) {
            lock.l_type.set(F_UNLCK);
          } else {
            lock.l_type.set(r.type() == RecordLocks.WRITE ? F_WRLCK : F_RDLCK);
            lock.l_start.set(r.start());
            lock.l_len.set(r.end() == RecordLocks.EOF ? 0 : r.end() - r.start() + 1);
            lock.l_pid.set(r.pid());
          }
        }
        case F_SETLK, F_SETLKW -> {
          int pid = (int) (lock.l_pid.get() != 0 ? lock.l_pid.get() : getContext().pid.get());
          long grew = fs.recordLock(fh, owner, type, start, end, pid, cmd == F_SETLKW, FuseLoop::interrupted);
          if (type != RecordLocks.UNLOCK) {
            revalidate(KernelRequest.current().node(), fh, grew);
          }
        }
        default -> throw new FsException(Errno.EINVAL, "fcntl lock command " + cmd);
      }
      return 0;
    });
  }

  /**
   * After a record lock on kernel node {@code node} (open {@code fh}) was granted: drops the
   * kernel's cached pages and attributes of the file, so that what another client wrote under its
   * lock is read; and when the file grew ({@code grew}, its size, else -1), stores its last page
   * into the kernel's cache, which is how the kernel learns the new size at once. (The kernel
   * asks for the attributes at the next read past the size it knows, but throws the answer away
   * when a write through this mount to the file crossed it, and the read then ends early: bytes a
   * read-modify-write would turn into zeros.) One at a time on this mount: a drop after a store
   * cannot leave that store's page, fetched before the drop's lock was granted, in the cache.
   */
  private synchronized void revalidate(long node, long fh, long grew) {
    KernelAttrs k = kernelAttrs;
    if (k == null || node == 0) {
      return;
    }
    k.dropPages(node);
    PageStore p = kernelPages;
    if (grew <= 0 || p == null) {
      return;
    }
    long from = (grew - 1) & -PAGE;
    ByteBuf tail = fs.readViews(fs.openFile(fh), from, (int) (grew - from), null);
    try {
      if (tail.readableBytes() == grew - from) {
        p.storeNow(node, from, tail);
      }
    } finally {
      tail.release();
    }
  }

  private static final long PAGE = 4096;

  @Override
  public int create(String path, long mode, FuseFileInfo fi) {
    Caller c = caller();
    return ops.call("create", path, () -> {
      fi.fh.set(fs.create(path, (int) mode, fi.flags.get(), c).id());
      return 0;
    });
  }

  @Override
  public int read(String path, Pointer buf, long size, long offset, FuseFileInfo fi) {
    PageSink sink = readAround();
    return ops.call("read", path, () -> fs.read(file(fi), offset, (int) size, wrap(buf, size).clear(), sink));
  }

  /** A READ answered by {@link DirectRead}: as {@link #read}, the bytes handed over, not copied. */
  @Override
  public ByteBuf readForKernel(long fh, long offset, int size) {
    PageSink sink = readAround();
    return fs.readViews(fs.openFile(fh), offset, size, sink);
  }

  /**
   * Where this read puts the pages it reads around, or null for none: none while this mount holds
   * record locks, since such pages, stored into the kernel's cache after a lock dropped it, could
   * hold bytes another client changes under its lock meanwhile.
   */
  private PageSink readAround() {
    PageStore p = pages;
    return p == null || fs.holdsRecordLocks() ? null : p.forThisRead();
  }

  @Override
  public int write(String path, Pointer buf, long size, long offset, FuseFileInfo fi) {
    boolean kill = SetidKill.take();
    return ops.call("write", path, () -> {
      OpenFile f = file(fi);
      fs.write(f, offset, wrap(buf, size), writepage(fi), kill);
      LinkNodes l = links;
      if (l != null) {
        l.changed(f.handle().id()); // its size and times, as the other names show them
      }
      return (int) size;
    });
  }

  @Override
  public int flush(String path, FuseFileInfo fi) {
    return ops.call("flush", path, () -> {
      fs.flush(file(fi));
      return 0;
    });
  }

  @Override
  public int fsync(String path, int datasync, FuseFileInfo fi) {
    return ops.call("fsync", path, () -> {
      fs.fsync(file(fi), datasync != 0);
      return 0;
    });
  }

  @Override
  public int release(String path, FuseFileInfo fi) {
    return ops.call("release", path, () -> {
      fs.release(file(fi)); // and the flock locks taken through it
      return 0;
    });
  }

  @Override
  public int statfs(String path, Statvfs stbuf) {
    return ops.call("statfs", path, () -> {
      Stats.fill(stbuf, fs.statfs());
      return 0;
    });
  }

  @Override
  public int opendir(String path, FuseFileInfo fi) {
    return ops.call("opendir", path, () -> {
      fi.fh.set(fs.opendir(path));
      return 0;
    });
  }

  @Override
  public int readdir(String path, Pointer buf, FuseFillDir filler, long offset, FuseFileInfo fi) {
    return ops.call("readdir", path, () -> {
      long dir = fi.fh.get();
      long off = offset;
      if (off == 0) {
        if (filler.apply(buf, ".", null, 1) != 0) {
          return 0;
        }
        off = 1;
      }
      if (off == 1) {
        if (filler.apply(buf, "..", null, 2) != 0) {
          return 0;
        }
        off = 2;
      }
      FileStat st = Stats.entry(Runtime.getSystemRuntime());
      for (int i = (int) (off - 2); ; i++) {
        Dirent e = fs.readdir(dir, i);
        if (e == null) {
          return 0;
        }
        st.st_ino.set(e.handle().id());
        st.st_mode.set(e.type().bits());
        if (filler.apply(buf, e.name(), st, i + 3) != 0) {
          return 0;
        }
      }
    });
  }

  @Override
  public int releasedir(String path, FuseFileInfo fi) {
    return ops.call("releasedir", path, () -> {
      fs.releasedir(fi.fh.get());
      return 0;
    });
  }

  @Override
  public int fsyncdir(String path, FuseFileInfo fi) {
    return ops.call("fsyncdir", path, () -> {
      fs.syncMetadata();
      return 0;
    });
  }

  @Override
  public int access(String path, int mask) {
    return ops.call("access", path, () -> {
      fs.getattr(path);
      return 0;
    });
  }

  @Override
  public int setxattr(String path, String xname, Pointer value, long size, int flags) {
    Caller c = caller();
    return ops.call("setxattr", path, () -> {
      byte[] v = new byte[(int) size];
      value.get(0, v, 0, v.length);
      int f = ((flags & XATTR_CREATE) != 0 ? SetxattrReq.CREATE : 0) | ((flags & XATTR_REPLACE) != 0 ? SetxattrReq.REPLACE : 0);
      fs.setxattr(path, xname, v, f, c);
      return 0;
    });
  }

  @Override
  public int getxattr(String path, String xname, Pointer value, long size) {
    return ops.call("getxattr", path, () -> {
      byte[] v;
      if (xname.startsWith(FileSystemClient.VIRTUAL_XATTR_PREFIX)) {
        v = fs.getxattr(path, xname);
      } else {
        Handle h = fs.resolve(path);
        learned(h);
        v = fs.getxattr(h, xname);
      }
      if (size == 0) {
        return v.length;
      }
      if (size < v.length) {
        throw new FsException(Errno.ERANGE, "xattr value of " + v.length + " bytes");
      }
      value.put(0, v, 0, v.length);
      return v.length;
    });
  }

  /** The request being processed (a GETATTR, a GETXATTR, a LOOKUP) found its file {@code h} ({@link AbsentXattrs}). */
  private void learned(Handle h) {
    AbsentXattrs x = absentXattrs;
    if (x != null) {
      x.learned(h);
    }
  }

  @Override
  public boolean xattrKnownAbsent(Handle h, String name) {
    return fs.xattrKnownAbsent(h, name);
  }

  @Override
  public Duration entryTimeout() {
    return fs.config().client().entryTimeout();
  }

  @Override
  public int listxattr(String path, Pointer list, long size) {
    return ops.call("listxattr", path, () -> {
      List<String> names = fs.listxattr(path);
      int total = 0;
      for (String n : names) {
        total += n.getBytes(StandardCharsets.UTF_8).length + 1;
      }
      if (size == 0) {
        return total;
      }
      if (size < total) {
        throw new FsException(Errno.ERANGE, "xattr names need " + total + " bytes");
      }
      int at = 0;
      for (String n : names) {
        byte[] b = n.getBytes(StandardCharsets.UTF_8);
        list.put(at, b, 0, b.length);
        list.putByte(at + b.length, (byte) 0);
        at += b.length + 1;
      }
      return total;
    });
  }

  @Override
  public int removexattr(String path, String xname) {
    return ops.call("removexattr", path, () -> {
      fs.removexattr(path, xname);
      return 0;
    });
  }
}
