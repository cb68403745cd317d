package org.flowfs.common.flow;

import io.netty.buffer.ByteBuf;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.NamedThreads;

/**
 * Flow storage in memory for tests: one growing byte array per {@link Handle}, on a pool of four
 * threads. Each operation can be slowed down ({@link #delayMillis}), held until a gate opens
 * ({@link #closeGate}), or failed after a number of successful ones ({@link #failWritesAfter},
 * {@link #failReadsAfter}); {@link #maxConcurrent} says how many operations on one handle ran at
 * once at most. Thread safe.
 */
final class MemFlowStorage implements FlowStorage, AutoCloseable {
  private final ExecutorService pool;
  private final Map<Handle, byte[]> files = new ConcurrentHashMap<>();
  private final Map<Handle, Integer> sizes = new ConcurrentHashMap<>();
  private final Map<Handle, AtomicInteger> running = new ConcurrentHashMap<>();
  private final Map<Handle, AtomicInteger> maxRunning = new ConcurrentHashMap<>();
  private final AtomicInteger started = new AtomicInteger();
  private final AtomicInteger pending = new AtomicInteger();
  private final AtomicInteger writesLeft = new AtomicInteger(Integer.MAX_VALUE);
  private final AtomicInteger readsLeft = new AtomicInteger(Integer.MAX_VALUE);
  private volatile FsException writeFailure;
  private volatile FsException readFailure;
  private volatile long delayMillis;
  private volatile CountDownLatch gate;

  MemFlowStorage(String name) {
    this.pool = Executors.newFixedThreadPool(4, new NamedThreads(name + "-store"));
  }

  @Override
  public Executor executor() {
    return task -> {
      pending.incrementAndGet();
      try {
        pool.execute(() -> {
          try {
            task.run();
          } finally {
            pending.decrementAndGet();
          }
        });
      } catch (RuntimeException e) {
        pending.decrementAndGet();
        throw e;
      }
    };
  }

  /** Whether no operation is queued or running. */
  boolean idle() {
    return pending.get() == 0;
  }

  /** Every operation sleeps this long first. */
  MemFlowStorage delayMillis(long ms) {
    this.delayMillis = ms;
    return this;
  }

  /** Operations block until {@link #openGate} is called. */
  MemFlowStorage closeGate() {
    this.gate = new CountDownLatch(1);
    return this;
  }

  void openGate() {
    CountDownLatch g = gate;
    if (g != null) {
      g.countDown();
    }
  }

  /** After {@code n} successful writes, every write throws {@code failure}. */
  MemFlowStorage failWritesAfter(int n, FsException failure) {
    writesLeft.set(n);
    writeFailure = failure;
    return this;
  }

  /** After {@code n} successful reads, every read throws {@code failure}. */
  MemFlowStorage failReadsAfter(int n, FsException failure) {
    readsLeft.set(n);
    readFailure = failure;
    return this;
  }

  /** Operations started so far, on any handle. */
  int started() {
    return started.get();
  }

  /** The most operations on {@code h} that ran at the same time. */
  int maxConcurrent(Handle h) {
    AtomicInteger m = maxRunning.get(h);
    return m == null ? 0 : m.get();
  }

  /** Forgets the most concurrent operations seen so far. */
  void resetMaxConcurrent() {
    maxRunning.clear();
  }

  /** Operations on {@code h} running now. */
  int running(Handle h) {
    AtomicInteger r = running.get(h);
    return r == null ? 0 : r.get();
  }

  /** A copy of the datafile's bytes. */
  synchronized byte[] contents(Handle h) {
    byte[] f = files.get(h);
    return f == null ? new byte[0] : Arrays.copyOf(f, sizes.get(h));
  }

  synchronized void put(Handle h, byte[] data) {
    files.put(h, data.clone());
    sizes.put(h, data.length);
  }

  @Override
  public int read(Handle h, long offset, int length, ByteBuf dst) {
    enter(h);
    try {
      pause();
      if (readFailure != null && readsLeft.getAndDecrement() <= 0) {
        throw readFailure;
      }
      synchronized (this) {
        byte[] f = files.get(h);
        int size = f == null ? 0 : sizes.get(h);
        int n = (int) Math.max(0, Math.min(length, size - offset));
        if (n > 0) {
          dst.writeBytes(f, (int) offset, n);
        }
        return n;
      }
    } finally {
      exit(h);
    }
  }

  @Override
  public void write(Handle h, long offset, ByteBuf src) {
    enter(h);
    try {
      pause();
      if (writeFailure != null && writesLeft.getAndDecrement() <= 0) {
        throw writeFailure;
      }
      int n = src.readableBytes();
      int end = Math.toIntExact(offset + n);
      synchronized (this) {
        byte[] f = files.getOrDefault(h, new byte[0]);
        if (f.length < end) {
          f = Arrays.copyOf(f, Math.max(end, f.length * 2));
          files.put(h, f);
        }
        src.getBytes(src.readerIndex(), f, (int) offset, n);
        sizes.merge(h, end, Math::max);
      }
    } finally {
      exit(h);
    }
  }

  private void enter(Handle h) {
    started.incrementAndGet();
    int now = running.computeIfAbsent(h, x -> new AtomicInteger()).incrementAndGet();
    maxRunning.computeIfAbsent(h, x -> new AtomicInteger()).accumulateAndGet(now, Math::max);
  }

  private void exit(Handle h) {
    running.get(h).decrementAndGet();
  }

  private void pause() {
    try {
      CountDownLatch g = gate;
      if (g != null && !g.await(10, TimeUnit.SECONDS)) {
        throw new IllegalStateException("storage gate never opened");
      }
      if (delayMillis > 0) {
        Thread.sleep(delayMillis);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("storage interrupted", e);
    }
  }

  /** Opens the gate and stops the pool, waiting (bounded) for running operations. */
  @Override
  public void close() {
    openGate();
    pool.shutdown();
    try {
      if (!pool.awaitTermination(5, TimeUnit.SECONDS)) {
        pool.shutdownNow();
      }
    } catch (InterruptedException e) {
      pool.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }
}
