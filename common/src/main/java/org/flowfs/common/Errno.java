package org.flowfs.common;

import java.io.FileNotFoundException;
import java.nio.channels.ClosedChannelException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Linux errno values. This enum is the only place where failures are turned into numbers: it is
 * the status code on the wire, and the FUSE adapter returns {@code -errno.code()}.
 *
 * <p>{@link #from(Throwable)} is the single mapping function from any exception to an errno.
 */
public enum Errno {
  OK(0),
  EPERM(1),
  ENOENT(2),
  ESRCH(3),
  EINTR(4),
  EIO(5),
  ENXIO(6),
  E2BIG(7),
  EBADF(9),
  EAGAIN(11),
  ENOMEM(12),
  EACCES(13),
  EFAULT(14),
  EBUSY(16),
  EEXIST(17),
  EXDEV(18),
  ENODEV(19),
  ENOTDIR(20),
  EISDIR(21),
  EINVAL(22),
  ENFILE(23),
  EMFILE(24),
  EFBIG(27),
  ENOSPC(28),
  ESPIPE(29),
  EROFS(30),
  EMLINK(31),
  ERANGE(34),
  EDEADLK(35),
  ENAMETOOLONG(36),
  ENOLCK(37),
  ENOSYS(38),
  ENOTEMPTY(39),
  ELOOP(40),
  ENODATA(61),
  EPROTO(71),
  EOVERFLOW(75),
  EBADMSG(74),
  ENOTSUP(95),
  ECONNREFUSED(111),
  EHOSTUNREACH(113),
  ENOTCONN(107),
  ETIMEDOUT(110),
  ESTALE(116),
  EDQUOT(122);

  private static final Logger LOG = LoggerFactory.getLogger(Errno.class);
  private static final Errno[] BY_CODE = new Errno[256];

  static {
    for (Errno e : values()) {
      BY_CODE[e.code] = e;
    }
  }

  private final int code;

  Errno(int code) {
    this.code = code;
  }

  /** The positive Linux errno value. */
  public int code() {
    return code;
  }

  /** The errno with this Linux value; unknown values become {@link #EIO}. */
  public static Errno ofCode(int code) {
    Errno e = code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    return e == null ? EIO : e;
  }

  /**
   * Maps any failure to an errno: unwraps completion wrappers, passes {@link FsException} through,
   * maps a few JDK exceptions, and sends everything else to {@link #EIO}, logged once with its stack.
   */
  public static Errno from(Throwable t) {
    Throwable c = unwrap(t);
    if (c instanceof FsException fe) {
      return fe.errno();
    }
    if (c instanceof NoSuchFileException || c instanceof FileNotFoundException) {
      return ENOENT;
    }
    if (c instanceof FileAlreadyExistsException) {
      return EEXIST;
    }
    if (c instanceof DirectoryNotEmptyException) {
      return ENOTEMPTY;
    }
    if (c instanceof NotDirectoryException) {
      return ENOTDIR;
    }
    if (c instanceof AccessDeniedException) {
      return EACCES;
    }
    if (c instanceof TimeoutException) {
      return EIO;
    }
    if (c instanceof InterruptedException || c instanceof CancellationException) {
      return EINTR;
    }
    if (c instanceof ClosedChannelException) {
      return EIO;
    }
    if (c instanceof java.io.IOException io && io.getMessage() != null
        && io.getMessage().contains("No space left on device")) {
      return ENOSPC;
    }
    if (c instanceof java.io.IOException io && "File too large".equals(io.getMessage())) {
      return EFBIG; // past the local file system's largest file
    }
    if (c instanceof OutOfMemoryError) {
      return ENOMEM;
    }
    LOG.error("unexpected failure, reported as EIO", c);
    return EIO;
  }

  /** Strips {@link CompletionException} and {@link ExecutionException} wrappers. */
  public static Throwable unwrap(Throwable t) {
    Throwable c = t;
    while ((c instanceof CompletionException || c instanceof ExecutionException)
        && c.getCause() != null) {
      c = c.getCause();
    }
    return c;
  }
}
