package org.flowfs.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class StoragePoolTest {
  private final Counters counters = new Counters();
  private final StoragePool pool = new StoragePool("storage-pool-test", 2, counters);

  @AfterEach
  void stop() {
    pool.shutdown(5000);
  }

  @Test
  void idle_runsOnTheCallingThread() throws Exception {
    Thread caller = Thread.currentThread();
    assertSame(caller, pool.inlineIfIdle(Thread::currentThread).get());
    assertEquals(1, counters.snapshot().get("store.inline"));
    assertEquals(0, pool.busy());
  }

  @Test
  void busy_goesToTheStorageThreads() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch finished = new CountDownLatch(1);
    pool.execute(() -> {
      started.countDown();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      finished.countDown();
    });
    started.await();
    CountDownLatch inside = new CountDownLatch(1);
    CompletableFuture<Thread> ran = pool.inlineIfIdle(() -> {
      inside.countDown();
      return Thread.currentThread();
    });
    assertTrue(inside.await(5, TimeUnit.SECONDS), "runs beside the busy task, on the other storage thread");
    assertNotSame(Thread.currentThread(), ran.get(5, TimeUnit.SECONDS));
    assertEquals(0L, counters.snapshot().getOrDefault("store.inline", 0L));
    release.countDown();
    assertTrue(finished.await(5, TimeUnit.SECONDS));
    // idle again: inline once more
    for (int i = 0; i < 500 && pool.busy() > 0; i++) {
      Thread.sleep(10);
    }
    assertSame(Thread.currentThread(), pool.inlineIfIdle(Thread::currentThread).get());
  }

  @Test
  void failures_areTheFuturesOutcome_andFreeThePool() {
    CompletableFuture<Object> f = pool.inlineIfIdle(() -> {
      throw new FsException(Errno.ENOSPC, "full");
    });
    ExecutionException e = assertThrows(ExecutionException.class, f::get);
    assertEquals(Errno.ENOSPC, assertInstanceOf(FsException.class, e.getCause()).errno());
    assertEquals(0, pool.busy());
  }

  @Test
  void concurrentCallers_neverRunInlineAtOnce() throws Exception {
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    List<Thread> callers = new ArrayList<>();
    List<CompletableFuture<Integer>> all = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      Thread th = new Thread(() -> {
        for (int i = 0; i < 2000; i++) {
          CompletableFuture<Integer> f = pool.inlineIfIdle(() -> {
            int now = inside.incrementAndGet();
            most.accumulateAndGet(now, Math::max);
            inside.decrementAndGet();
            return now;
          });
          synchronized (all) {
            all.add(f);
          }
        }
      });
      callers.add(th);
      th.start();
    }
    for (Thread th : callers) {
      th.join();
    }
    for (CompletableFuture<Integer> f : all) {
      f.get(5, TimeUnit.SECONDS);
    }
    // inline work runs alone: at most one inline run plus the pool's two threads at any moment
    assertTrue(most.get() <= 3, "at most " + most.get());
    assertEquals(0, pool.busy());
  }
}
