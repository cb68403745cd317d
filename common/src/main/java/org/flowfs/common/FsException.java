package org.flowfs.common;

/**
 * An expected file-system outcome that is not success: a missing name, an existing name, a full
 * disk, a server that did not answer. Carries the {@link Errno} the application will see and a
 * detail for logs. Cheap: it records no stack trace, as it is a result, not a bug.
 */
public final class FsException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final Errno errno;

  public FsException(Errno errno, String detail) {
    super(errno.name() + (detail == null || detail.isEmpty() ? "" : ": " + detail), null, false, false);
    this.errno = errno;
  }

  public FsException(Errno errno, String detail, Throwable cause) {
    super(errno.name() + (detail == null || detail.isEmpty() ? "" : ": " + detail), cause, false, false);
    this.errno = errno;
  }

  public Errno errno() {
    return errno;
  }

  public static FsException of(Errno errno, String fmt, Object... args) {
    return new FsException(errno, args.length == 0 ? fmt : String.format(fmt, args));
  }
}
