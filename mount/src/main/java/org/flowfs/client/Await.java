package org.flowfs.client;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;

/** Waits for a future with a bound, turning every failure into an {@link FsException}. */
final class Await {
  private Await() {}

  static <T> T get(CompletableFuture<T> f, Duration timeout) {
    // wait on the outcome rather than on the value: f.get() would wrap a failure in a new
    // ExecutionException, a stack trace of the whole FUSE call per ENOENT or ENODATA
    Throwable failure;
    try {
      failure = f.handle((v, t) -> t).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      failure = e.getCause(); // not reached: the outcome future never fails
    } catch (TimeoutException e) {
      f.cancel(false);
      throw new FsException(Errno.EIO, "no answer within " + timeout.toMillis() + " ms");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new FsException(Errno.EINTR, "interrupted");
    }
    if (failure == null) {
      return f.getNow(null);
    }
    Throwable c = Errno.unwrap(failure);
    if (c instanceof FsException fe) {
      throw fe;
    }
    throw new FsException(Errno.from(c), String.valueOf(c.getMessage()), c);
  }
}
