package org.flowfs.io;

import java.nio.file.Path;
import jnr.ffi.LibraryLoader;
import jnr.ffi.types.off_t;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;

/**
 * {@code fallocate(2)} on a datafile, which the JDK does not offer: storage reserved for a range
 * ({@link #KEEP_SIZE}), or a range freed ({@link #PUNCH_HOLE}, with {@link #KEEP_SIZE}). Opens the
 * datafile's path for the call and closes it after, so the store's cached channels stay as they
 * are. A file system that cannot is {@link Errno#ENOTSUP} (EOPNOTSUPP on Linux), which reaches the
 * application as such.
 */
final class Fallocate {
  /** {@code FALLOC_FL_KEEP_SIZE}: the file's size stays. */
  static final int KEEP_SIZE = 0x01;
  /** {@code FALLOC_FL_PUNCH_HOLE}: the range is freed and reads as zeros. */
  static final int PUNCH_HOLE = 0x02;
  private static final int O_WRONLY = 01;
  private static final int O_CLOEXEC = 02000000;

  /** The libc calls. */
  public interface Native {
    int open(String path, int flags, int mode);

    int fallocate(int fd, int mode, @off_t long offset, @off_t long length);

    int close(int fd);
  }

  private static final class Holder {
    static final Native C = LibraryLoader.create(Native.class).load("c");
    static final jnr.ffi.Runtime RT = jnr.ffi.Runtime.getRuntime(C);
  }

  private Fallocate() {}

  /** {@code fallocate(fd, mode, offset, length)} on the file at {@code path}; an errno as an {@link FsException}. */
  static void range(Path path, int mode, long offset, long length) {
    int fd = Holder.C.open(path.toString(), O_WRONLY | O_CLOEXEC, 0);
    if (fd < 0) {
      throw failure("open", path);
    }
    try {
      if (Holder.C.fallocate(fd, mode, offset, length) != 0) {
        throw failure("fallocate", path);
      }
    } finally {
      Holder.C.close(fd);
    }
  }

  private static FsException failure(String call, Path path) {
    Errno e = Errno.ofCode(Holder.RT.getLastError());
    return new FsException(e, call + " of datafile " + path.getFileName() + " failed: " + e);
  }
}
