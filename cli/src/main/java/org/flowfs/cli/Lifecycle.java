package org.flowfs.cli;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The components a process opened, closed in reverse order exactly once: by the process's one
 * shutdown hook (SIGTERM, Ctrl-C) or by {@link #close()} when the work ends by itself.
 */
final class Lifecycle implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Lifecycle.class);

  private final Deque<AutoCloseable> opened = new ArrayDeque<>();
  private final CountDownLatch stopped = new CountDownLatch(1);
  private final Thread hook = new Thread(this::close, "shutdown");
  private boolean closed;

  Lifecycle() {
    Runtime.getRuntime().addShutdownHook(hook);
  }

  synchronized <T extends AutoCloseable> T add(T c) {
    if (closed) {
      throw new IllegalStateException("shutting down");
    }
    opened.push(c);
    return c;
  }

  /** Blocks until {@link #close()} ran (from the shutdown hook or elsewhere). */
  void awaitStop() throws InterruptedException {
    stopped.await();
  }

  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    Readiness.stopping("flowfs");
    try {
      while (true) {
        AutoCloseable c;
        synchronized (this) {
          c = opened.poll();
        }
        if (c == null) {
          break;
        }
        try {
          c.close();
        } catch (Exception e) {
          LOG.warn("closing {} failed", c, e);
        }
      }
    } finally {
      stopped.countDown();
    }
  }
}
