package org.flowfs.bench;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import jnr.ffi.Pointer;
import org.flowfs.fuse.FuseLoop;
import org.flowfs.fuse.FuseMount;
import org.flowfs.fuse.MountTable;
import ru.serce.jnrfuse.ErrorCodes;
import ru.serce.jnrfuse.FuseFillDir;
import ru.serce.jnrfuse.FuseStubFS;
import ru.serce.jnrfuse.struct.FileStat;
import ru.serce.jnrfuse.struct.FuseFileInfo;
import ru.serce.jnrfuse.struct.Statvfs;
import ru.serce.jnrfuse.struct.Timespec;

/**
 * A FUSE file system in Java that stores nothing: writes are taken (each buffer copied once into
 * the heap, as a real file system must at least do) and dropped, reads return zeros up to the
 * file's size. It mounts the way FlowFS mounts (the same options, FlowFS's request loop on Java
 * threads with requests of up to 1 MiB, the same kernel read-ahead), so it measures what jnr-fuse
 * and that path cost: the ceiling of a Java FUSE file system like FlowFS on this machine for
 * sequential I/O.
 *
 * <p>It mounts with {@code hard_remove}: the kernel sends a file's release after {@code close}
 * returns, so an unlink right after a reader closed can find the file still open, and libfuse
 * would then keep it under a hidden name (a rename) instead; a file system that keeps no data has
 * nothing to keep readable.
 */
public final class NullFuse extends FuseStubFS {
  private final Map<String, AtomicLong> files = new ConcurrentHashMap<>();
  private static final ThreadLocal<byte[]> SCRATCH = ThreadLocal.withInitial(() -> new byte[128 * 1024]);

  public static void main(String[] args) throws Exception {
    NullFuse fs = new NullFuse();
    Path mnt = Path.of(args[0]).toAbsolutePath();
    int max = FuseLoop.MAX_REQUEST;
    CompletableFuture<Integer> loop = FuseLoop.start(fs.fuseOperations, List.of("nullfuse", "-o",
        "fsname=nullfuse,subtype=nullfuse,big_writes,max_write=" + max + ",max_read=" + max + ",max_readahead=" + max
            + ",allow_other,attr_timeout=1,entry_timeout=1,hard_remove", mnt.toString()), FuseMount.FUSE_THREADS, 0);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      if (!loop.isDone()) {
        FuseMount.unmount(mnt);
      }
    }));
    while (!"fuse.nullfuse".equals(MountTable.typeAt(mnt)) && !loop.isDone()) {
      Thread.sleep(20);
    }
    FuseMount.kernelReadAhead(mnt, max / 1024);
    loop.get();
  }

  @Override
  public int getattr(String path, FileStat stat) {
    if (path.equals("/")) {
      stat.st_mode.set(FileStat.S_IFDIR | 0755);
      stat.st_nlink.set(2);
      return 0;
    }
    AtomicLong size = files.get(path);
    if (size == null) {
      return -ErrorCodes.ENOENT();
    }
    stat.st_mode.set(FileStat.S_IFREG | 0644);
    stat.st_nlink.set(1);
    stat.st_size.set(size.get());
    return 0;
  }

  @Override
  public int create(String path, long mode, FuseFileInfo fi) {
    files.putIfAbsent(path, new AtomicLong());
    return 0;
  }

  @Override
  public int open(String path, FuseFileInfo fi) {
    return files.containsKey(path) ? 0 : -ErrorCodes.ENOENT();
  }

  @Override
  public int write(String path, Pointer buf, long size, long offset, FuseFileInfo fi) {
    byte[] b = SCRATCH.get();
    for (long done = 0; done < size; done += b.length) {
      buf.get(done, b, 0, (int) Math.min(b.length, size - done));
    }
    AtomicLong s = files.get(path);
    if (s != null) {
      s.accumulateAndGet(offset + size, Math::max);
    }
    return (int) size;
  }

  @Override
  public int read(String path, Pointer buf, long size, long offset, FuseFileInfo fi) {
    AtomicLong s = files.get(path);
    if (s == null) {
      return -ErrorCodes.ENOENT();
    }
    long n = Math.max(0, Math.min(size, s.get() - offset));
    byte[] zeros = new byte[(int) Math.min(n, 128 * 1024)];
    for (long done = 0; done < n; done += zeros.length) {
      buf.put(done, zeros, 0, (int) Math.min(zeros.length, n - done));
    }
    return (int) n;
  }

  @Override
  public int truncate(String path, long size) {
    AtomicLong s = files.get(path);
    if (s == null) {
      return -ErrorCodes.ENOENT();
    }
    s.set(size);
    return 0;
  }

  @Override
  public int unlink(String path) {
    return files.remove(path) == null ? -ErrorCodes.ENOENT() : 0;
  }

  @Override
  public int rename(String oldpath, String newpath) {
    AtomicLong size = files.remove(oldpath);
    if (size == null) {
      return -ErrorCodes.ENOENT();
    }
    files.put(newpath, size);
    return 0;
  }

  @Override
  public int utimens(String path, Timespec[] timespec) {
    return 0;
  }

  @Override
  public int fsync(String path, int isdatasync, FuseFileInfo fi) {
    return 0;
  }

  @Override
  public int flush(String path, FuseFileInfo fi) {
    return 0;
  }

  @Override
  public int release(String path, FuseFileInfo fi) {
    return 0;
  }

  @Override
  public int readdir(String path, Pointer buf, FuseFillDir filter, long offset, FuseFileInfo fi) {
    filter.apply(buf, ".", null, 0);
    filter.apply(buf, "..", null, 0);
    for (String f : files.keySet()) {
      filter.apply(buf, f.substring(1), null, 0);
    }
    return 0;
  }

  @Override
  public int statfs(String path, Statvfs stbuf) {
    stbuf.f_bsize.set(4096);
    stbuf.f_frsize.set(4096);
    stbuf.f_blocks.set(1L << 30);
    stbuf.f_bfree.set(1L << 30);
    stbuf.f_bavail.set(1L << 30);
    return 0;
  }
}
