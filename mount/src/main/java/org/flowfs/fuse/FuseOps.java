package org.flowfs.fuse;

import java.util.concurrent.Callable;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place that runs a FUSE callback: it catches every failure, maps it to {@code -errno}
 * with {@link Errno#from}, counts the operation, writes the DEBUG access log line
 * ({@code getattr(/a/b): ENOENT 0.4 ms}) and a WARN for slow operations.
 */
final class FuseOps {
  private static final Logger ACCESS = LoggerFactory.getLogger("org.flowfs.fuse.access");
  private static final long SLOW_NANOS = 1_000_000_000L;

  private final Counters counters;

  FuseOps(Counters counters) {
    this.counters = counters;
  }

  /**
   * Body returns a non-negative result (0, or a byte count); failures become {@code -errno}.
   * {@code subject} (a path, or the handle of an open file) names what the log lines are about.
   */
  int call(String op, Object subject, Callable<Integer> body) {
    long t0 = System.nanoTime();
    int rc;
    Errno err = Errno.OK;
    try {
      rc = body.call();
    } catch (Throwable t) {
      err = Errno.from(t);
      rc = -err.code();
    }
    long dt = System.nanoTime() - t0;
    counted(op, err);
    if (dt > SLOW_NANOS && !op.equals("flock") && !op.equals("lock")) { // a blocking lock waits for another's
      ACCESS.warn("{}({}): {} {} ms (slow)", op, subject, err == Errno.OK ? rc : err.name(), dt / 1_000_000);
    } else if (ACCESS.isDebugEnabled()) {
      ACCESS.debug("{}({}): {} {} ms", op, subject, err == Errno.OK ? rc : err.name(), String.format("%.3f", dt / 1e6));
    }
    return rc;
  }

  /** Counts one {@code op} answered with {@code err} (OK: a success), for one answered outside {@link #call}. */
  void counted(String op, Errno err) {
    counters.increment("fuse." + op);
    if (err != Errno.OK) {
      counters.increment("fuse.errors." + err.name());
    }
  }
}
