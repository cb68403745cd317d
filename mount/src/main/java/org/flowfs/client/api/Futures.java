package org.flowfs.client.api;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;

/** Waiting for the API's futures: failures come out as the exception the operation raised. */
final class Futures {
  private Futures() {}

  /**
   * Waits for {@code f} (without a total bound: every flow and call under it has its own timeout)
   * and returns its value; rethrows an {@link FsException} or other runtime exception as it is,
   * anything else as an {@link FsException} with its errno.
   */
  static <T> T join(CompletableFuture<T> f) {
    try {
      return f.get();
    } catch (ExecutionException e) {
      throw unwrap(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new FsException(Errno.EINTR, "interrupted");
    }
  }

  static RuntimeException unwrap(Throwable t) {
    Throwable c = Errno.unwrap(t);
    if (c instanceof RuntimeException re) {
      return re;
    }
    if (c instanceof Error err) {
      throw err;
    }
    return new FsException(Errno.from(c), String.valueOf(c.getMessage()), c);
  }

  /** A future failed with {@code t}. */
  static <T> CompletableFuture<T> failed(Throwable t) {
    return CompletableFuture.failedFuture(t);
  }
}
