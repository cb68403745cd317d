package org.flowfs.meta;

import io.netty.util.internal.ThreadExecutorMap;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one writer of a transactional store, committing in groups.
 *
 * <p>Callers {@link #submit} a mutation and get a future. The writer thread takes up to
 * {@code batch} queued mutations, applies each under the write side of the store's lock (one
 * mutation at a time, so reads in between see whole mutations), then commits once, outside the
 * lock, and only then completes the group's futures, each with its result or its
 * {@link FsException}. While a commit syncs, the next group queues up, so the more callers wait,
 * the larger the groups and the fewer the syncs per mutation.
 *
 * <p>A mutation that throws anything but {@link FsException} (a bug, an I/O error), or a commit
 * that fails, makes the writer roll the transaction back and apply the group's other mutations
 * again one by one, each in a commit of its own; the broken one fails with EIO and changed
 * nothing.
 *
 * <p>Futures are never completed on the writer thread (unless an executor refuses the task), so no
 * continuation can stall the writer: a mutation submitted from a network event loop completes on
 * that event loop (where its answer is written, so it goes out without another hand-over between
 * threads), any other on the {@code completions} executor, one task per group and executor.
 *
 * <p>When nothing is queued and no group is being applied, a mutation submitted from a network
 * event loop is applied and committed right there, as a group of one, and completes before
 * {@code submit} returns: an idle writer would take it up alone anyway, and the two hand-overs
 * between threads (to the writer, and back to the event loop) cost more than the commit on a busy
 * small machine. Such a commit only hands its record to the operating system; a commit that may wait
 * for the disk ({@link Transaction#waitsForDisk}: every commit forced to disk, or a full log to
 * checkpoint) never runs on an event loop, which would wait with every other connection of that
 * loop. Mutations that arrive while a
 * group is being applied queue up for the writer as before, so groups still form under load.
 * Groups never overlap: one runs at a time, on the writer or inline.
 *
 * <p>Thread safe.
 */
final class GroupCommit {
  private static final Logger LOG = LoggerFactory.getLogger(GroupCommit.class);

  /** The transaction of the store the writer commits to. */
  interface Transaction {
    /** Makes everything applied since the last commit durable, or throws. */
    void commit();

    /** Forgets everything applied since the last commit. */
    void rollback();

    /**
     * Whether the next commit may wait for the disk (it forces the log, or checkpoints a full one):
     * then it does not run on an event loop.
     */
    default boolean waitsForDisk() {
      return false;
    }
  }

  private final Pending<Void> stop = new Pending<>(null, null);
  private final BlockingQueue<Pending<?>> queue = new LinkedBlockingQueue<>();
  private final Object admission = new Object();
  private boolean accepting = true; // guarded by admission
  private final Namespace namespace;
  private final ReadWriteLock lock;
  private final Transaction tx;
  private final int batch;
  private final Executor completions;
  private final Thread writer;
  private final AtomicLong commits = new AtomicLong();
  private final AtomicLong applied = new AtomicLong();
  /**
   * Held while a group is applied and committed, by the writer or by an event loop inline, and
   * while {@link #exclusive} work runs; fair, so that under a steady load the writer's next group
   * does not overtake a checkpoint waiting for it (the sync interval is a promise).
   */
  private final ReentrantLock running = new ReentrantLock(true);
  private final AtomicLong inlined = new AtomicLong();

  GroupCommit(String threadName, Namespace namespace, ReadWriteLock lock, Transaction tx, int batch,
      Executor completions) {
    if (batch < 1) {
      throw new IllegalArgumentException("commit batch " + batch);
    }
    this.namespace = namespace;
    this.lock = lock;
    this.tx = tx;
    this.batch = batch;
    this.completions = completions;
    this.writer = new Thread(this::run, threadName);
    writer.setDaemon(true);
    writer.start();
  }

  /**
   * Queues {@code op}, or applies and commits it at once when called on an event loop while the
   * writer is idle and the commit does not wait for the disk; after {@link #close(long)} the future fails with EIO. Never waits for other
   * mutations.
   */
  <T> CompletableFuture<T> submit(Function<Namespace, T> op) {
    Executor origin = ThreadExecutorMap.currentExecutor();
    Pending<T> p = new Pending<>(op, origin);
    boolean here = origin != null && !tx.waitsForDisk() && queue.isEmpty() && !running.isHeldByCurrentThread() && running.tryLock();
    try {
      synchronized (admission) {
        if (!accepting) {
          return CompletableFuture.failedFuture(NamespaceStore.closedError());
        }
        if (!here) {
          queue.add(p);
          return p.future;
        }
      }
      runSafely(List.of(p));
    } finally {
      if (here) {
        running.unlock();
      }
    }
    inlined.incrementAndGet();
    p.complete();
    return p.future;
  }

  /**
   * Runs {@code r} while no group is applied or committed, by the writer or inline; meanwhile the
   * writer waits and an event loop queues its mutations for the writer rather than wait. For work
   * on the store that must not overlap a commit and that an event loop must not wait for (a
   * checkpoint).
   */
  void exclusive(Runnable r) {
    running.lock();
    try {
      r.run();
    } finally {
      running.unlock();
    }
  }

  /** Mutations applied on the event loop that submitted them (for tests). */
  long inlined() {
    return inlined.get();
  }

  /** Successful commits so far. */
  long commits() {
    return commits.get();
  }

  /** Mutations applied and committed so far (successful or failed with an errno). */
  long mutations() {
    return applied.get();
  }

  /**
   * Stops accepting, lets the writer apply and commit everything queued, and waits for it up to
   * {@code timeoutMs}. Idempotent. False if the writer did not finish in time.
   */
  boolean close(long timeoutMs) {
    synchronized (admission) {
      if (accepting) {
        accepting = false;
        queue.add(stop);
      }
    }
    if (Thread.currentThread() == writer) {
      return false;
    }
    try {
      writer.join(timeoutMs);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (writer.isAlive()) {
      return false;
    }
    running.lock(); // and any group being applied inline is done
    running.unlock();
    return true;
  }

  private void run() {
    List<Pending<?>> group = new ArrayList<>(batch);
    boolean stopping = false;
    while (!stopping) {
      try {
        group.add(queue.take());
      } catch (InterruptedException e) {
        continue; // nobody interrupts the writer; close() uses the stop marker
      }
      queue.drainTo(group, batch - 1);
      int last = group.size() - 1;
      if (group.get(last) == stop) { // nothing is queued after the marker
        group.remove(last);
        stopping = true;
      }
      if (!group.isEmpty()) {
        running.lock();
        try {
          runSafely(group);
        } finally {
          running.unlock();
        }
        complete(List.copyOf(group));
      }
      group.clear();
    }
  }

  /** Applies and commits {@code group}; every mutation ends with an outcome. Holding {@link #running}. */
  private void runSafely(List<Pending<?>> group) {
    try {
      runGroup(group);
    } catch (Throwable t) { // never leave a caller waiting forever
      LOG.error("metadata writer failed outside a mutation", t);
      group.forEach(p -> p.fail(new FsException(Errno.EIO, "metadata writer failed", t)));
    }
  }

  private void runGroup(List<Pending<?>> group) {
    boolean changed = false;
    for (int i = 0; i < group.size(); i++) {
      Throwable broken = apply(group.get(i));
      if (broken != null) {
        salvage(group, i, broken);
        return;
      }
      changed |= group.get(i).changed();
    }
    if (changed) { // a group of failed mutations changed nothing: no sync
      try {
        tx.commit();
      } catch (RuntimeException | Error e) {
        salvage(group, -1, e);
        return;
      }
      commits.incrementAndGet();
    }
    applied.addAndGet(group.size());
  }

  /** Applies one mutation under the write lock; returns what broke it, or null. */
  private Throwable apply(Pending<?> p) {
    lock.writeLock().lock();
    try {
      p.run(namespace);
      return null;
    } catch (RuntimeException | Error e) {
      return e;
    } finally {
      lock.writeLock().unlock();
    }
  }

  /**
   * Rolls the group back and applies its mutations again one per commit, except {@code broken}
   * (-1: the commit failed, none is known to be broken), which fails with EIO.
   */
  private void salvage(List<Pending<?>> group, int broken, Throwable cause) {
    LOG.error("metadata group of {} rolled back ({}); applying its mutations one by one",
        group.size(), broken >= 0 ? "mutation " + broken + " failed" : "commit failed", cause);
    rollback();
    for (int i = 0; i < group.size(); i++) {
      Pending<?> p = group.get(i);
      if (i == broken) {
        p.fail(new FsException(Errno.EIO, "metadata mutation failed", cause));
        continue;
      }
      Throwable t = apply(p);
      if (t == null && p.changed()) {
        try {
          tx.commit();
          commits.incrementAndGet();
        } catch (RuntimeException | Error e) {
          t = e;
        }
      }
      if (t != null) {
        LOG.error("metadata mutation failed alone too; it fails with EIO", t);
        rollback();
        p.fail(new FsException(Errno.EIO, "metadata mutation failed", t));
      } else {
        applied.incrementAndGet();
      }
    }
  }

  private void rollback() {
    lock.writeLock().lock();
    try {
      tx.rollback();
    } catch (RuntimeException | Error e) {
      LOG.error("metadata rollback failed", e);
    } finally {
      lock.writeLock().unlock();
    }
  }

  private void complete(List<Pending<?>> group) {
    java.util.Map<Executor, List<Pending<?>>> byOrigin = new java.util.LinkedHashMap<>();
    for (Pending<?> p : group) {
      byOrigin.computeIfAbsent(p.origin, o -> new ArrayList<>()).add(p);
    }
    byOrigin.forEach(this::completeOn);
  }

  /** Completes {@code group} on {@code origin}, or on the completions executor if that is null. */
  private void completeOn(Executor origin, List<Pending<?>> group) {
    try {
      (origin != null ? origin : completions).execute(() -> group.forEach(Pending::complete));
    } catch (RejectedExecutionException e) {
      group.forEach(Pending::complete);
    }
  }

  /** One queued mutation, its outcome once applied, and the future that reports it. */
  private static final class Pending<T> {
    final Function<Namespace, T> op;
    /** The event loop that submitted it, or null. */
    final Executor origin;
    final CompletableFuture<T> future = new CompletableFuture<>();
    private T result;
    private FsException failure;

    Pending(Function<Namespace, T> op, Executor origin) {
      this.op = op;
      this.origin = origin;
    }

    /** Applies the mutation; an {@link FsException} is its outcome, anything else escapes. */
    void run(Namespace ns) {
      result = null;
      failure = null;
      try {
        result = op.apply(ns);
      } catch (FsException e) {
        failure = e;
      }
    }

    /** Whether the last run may have changed the tables (a failed mutation changes nothing). */
    boolean changed() {
      return failure == null;
    }

    void fail(FsException e) {
      result = null;
      failure = e;
    }

    void complete() {
      if (failure != null) {
        future.completeExceptionally(failure);
      } else {
        future.complete(result);
      }
    }
  }
}
