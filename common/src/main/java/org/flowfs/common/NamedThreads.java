package org.flowfs.common;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Named, daemon thread pools, so a thread dump says which component a thread belongs to. Their
 * threads run on the service CPUs ({@link ServiceCpus}) whoever started them, but those of an
 * {@link #unconfinedPool}, which run on every CPU the process had.
 */
public final class NamedThreads implements ThreadFactory {
  private final String prefix;
  /** Whether its threads stay on the service CPUs ({@link #confined}) or run on every CPU ({@link #released}). */
  private final boolean onServiceCpus;
  private final AtomicInteger n = new AtomicInteger();

  public NamedThreads(String prefix) {
    this(prefix, true);
  }

  private NamedThreads(String prefix, boolean onServiceCpus) {
    this.prefix = prefix;
    this.onServiceCpus = onServiceCpus;
  }

  @Override
  public Thread newThread(Runnable r) {
    Thread t = new Thread(onServiceCpus ? confined(r) : released(r), prefix + "-" + n.getAndIncrement());
    t.setDaemon(true);
    return t;
  }

  /** {@code r}, run on the service CPUs ({@link ServiceCpus#confine}). */
  public static Runnable confined(Runnable r) {
    return () -> {
      ServiceCpus.confine();
      r.run();
    };
  }

  /** {@code r}, run on every CPU the process had before the service CPUs ({@link ServiceCpus#release}). */
  private static Runnable released(Runnable r) {
    return () -> {
      ServiceCpus.release();
      r.run();
    };
  }

  /** A fixed pool of {@code threads} threads named {@code prefix-N}. */
  public static ExecutorService pool(String prefix, int threads) {
    return fixed(threads, new NamedThreads(prefix));
  }

  private static ExecutorService fixed(int threads, NamedThreads factory) {
    return new ThreadPoolExecutor(threads, threads, 60, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), factory);
  }

  /**
   * A fixed pool of {@code threads} threads named {@code prefix-N} that run on every CPU the
   * process had before the service CPUs were installed ({@link ServiceCpus#release}), whoever
   * started them.
   */
  public static ExecutorService unconfinedPool(String prefix, int threads) {
    return fixed(threads, new NamedThreads(prefix, false));
  }

  /**
   * One thread named {@code prefix-N}, started when work comes and ended after 5 s without any;
   * work queues behind it.
   */
  public static ExecutorService single(String prefix) {
    return new ThreadPoolExecutor(0, 1, 5, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), new NamedThreads(prefix));
  }

  /** Shuts a pool down, waiting a bounded time for running work. */
  public static void shutdown(ExecutorService pool, long millis) {
    pool.shutdown();
    try {
      if (!pool.awaitTermination(millis, TimeUnit.MILLISECONDS)) {
        pool.shutdownNow();
      }
    } catch (InterruptedException e) {
      pool.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }
}
