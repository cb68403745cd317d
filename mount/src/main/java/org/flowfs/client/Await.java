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
    try {
      return f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      Throwable c = Errno.unwrap(e);
      if (c instanceof FsException fe) {
        throw fe;
      }
      throw new FsException(Errno.from(c), String.valueOf(c.getMessage()), c);
    } catch (TimeoutException e) {
      f.cancel(false);
      throw new FsException(Errno.EIO, "no answer within " + timeout.toMillis() + " ms");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new FsException(Errno.EINTR, "interrupted");
    }
  }
}
