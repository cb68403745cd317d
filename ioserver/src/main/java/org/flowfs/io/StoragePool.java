package org.flowfs.io;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.flowfs.common.Counters;
import org.flowfs.common.NamedThreads;

/**
 * The I/O server's storage threads ({@code io-store-N}), where its disk work runs, and the one
 * way past them: {@link #inlineIfIdle} runs a small piece of storage work on the calling event
 * loop when no storage work at all is running or queued.
 *
 * <p>A task handed to a storage thread costs two thread wake-ups on top of its work: the storage
 * thread's, and the event loop's to send the answer. For a small write into the page cache
 * (a new small file's data: a rename of a pooled datafile, an open, a pwrite) those wake-ups cost
 * more than the work on small machines, where each is a context switch. When the pool is idle the
 * disk has no work of this server's queued, the write finds the page cache free of this server's
 * traffic, and at most one event loop at a time runs such work: the loop's other connections wait
 * for a write of at most {@link #INLINE_MAX} bytes, not for a disk. Under load (anything running or
 * queued) all work goes to the storage threads, in order.
 *
 * <p>Counts work run inline in {@code store.inline}. Thread safe.
 */
final class StoragePool implements Executor {
  /** The largest write {@link #inlineIfIdle} is meant for. */
  static final int INLINE_MAX = 64 * 1024;

  private final ExecutorService threads;
  /** Storage tasks running or queued, on the threads or inline. */
  private final AtomicInteger busy = new AtomicInteger();
  private final Counters counters;

  StoragePool(String name, int threads, Counters counters) {
    this.threads = NamedThreads.pool(name, threads);
    this.counters = counters;
  }

  @Override
  public void execute(Runnable task) {
    busy.incrementAndGet();
    try {
      threads.execute(() -> {
        try {
          task.run();
        } finally {
          busy.decrementAndGet();
        }
      });
    } catch (RejectedExecutionException e) {
      busy.decrementAndGet();
      throw e;
    }
  }

  /**
   * Runs {@code work} now, on the calling thread, if no other storage work is running or queued;
   * else on the storage threads. Returns its outcome either way.
   */
  <T> CompletableFuture<T> inlineIfIdle(Supplier<T> work) {
    if (!busy.compareAndSet(0, 1)) {
      return CompletableFuture.supplyAsync(work, this);
    }
    counters.increment("store.inline");
    try {
      return CompletableFuture.completedFuture(work.get());
    } catch (RuntimeException | Error e) {
      return CompletableFuture.failedFuture(e);
    } finally {
      busy.decrementAndGet();
    }
  }

  /** Storage tasks running or queued now. */
  int busy() {
    return busy.get();
  }

  void shutdown(long millis) {
    NamedThreads.shutdown(threads, millis);
  }
}
