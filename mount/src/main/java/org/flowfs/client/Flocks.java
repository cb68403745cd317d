package org.flowfs.client;

import java.security.SecureRandom;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.NamedThreads;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.MetaOp.FlockReq;
import org.flowfs.common.wire.MetaOp.LockRenewReq;
import org.flowfs.common.wire.MetaOp.LockRenewResp;
import org.flowfs.common.wire.Req;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This client's {@code flock(2)} locks, held on the metadata server ({@link FlockReq}) so that
 * they hold against every other client: what it holds, the renewals that keep them while it
 * lives ({@link LockRenewReq}, every third of the server's term), and, when a renewal finds the
 * server does not know them (it restarted), claiming them again.
 *
 * <p>A blocking lock that another owner's lock refuses is asked for again until granted, the
 * wait doubling from 1 ms to {@value #MAX_WAIT_MS} ms, or until the caller is interrupted
 * (EINTR). Each such wait holds the calling thread (a FUSE worker of the mount), so at most
 * {@value #MAX_WAITERS} wait at once; a further one fails with ENOLCK rather than leave the mount
 * no thread to answer the unlock it waits for.
 *
 * <p>Counters {@code lock.waits}, {@code lock.reclaimed}, {@code lock.lost}. Thread safe.
 */
final class Flocks implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Flocks.class);
  static final int MAX_WAITERS = 8;
  static final long MAX_WAIT_MS = 50;
  /** The term until the server says its own, {@code meta.lock-term}'s default. */
  private static final long DEFAULT_TERM_NANOS = TimeUnit.SECONDS.toNanos(15);

  /** The metadata server, as the client calls it (its retries and errnos). */
  interface Meta {
    <R extends Message> R call(Req<R> req);
  }

  private final Meta meta;
  private final Counters counters;
  private final long client = new SecureRandom().nextLong();
  /** Per file, per owner (the kernel's id of an open file description): SHARED or EXCLUSIVE. */
  private final Map<Handle, Map<Long, Integer>> held = new ConcurrentHashMap<>();
  /** The locks taken through each open (its FUSE file handle): released with it. */
  private final Map<Long, Map<Handle, Long>> byOpen = new ConcurrentHashMap<>();
  /** Locks of opens released while the metadata server did not answer: released at a renewal. */
  private final java.util.Set<Map.Entry<Handle, Long>> unlocking = ConcurrentHashMap.newKeySet();
  private final Semaphore waiters = new Semaphore(MAX_WAITERS);
  private final ScheduledExecutorService timer =
      Executors.newSingleThreadScheduledExecutor(new NamedThreads("flowfs-locks"));
  private volatile long termNanos = DEFAULT_TERM_NANOS;
  private boolean renewing; // guarded by this

  Flocks(Meta meta, Counters counters) {
    this.meta = meta;
    this.counters = counters;
  }

  /**
   * Takes ({@link FlockReq#SHARED}, {@link FlockReq#EXCLUSIVE}) or releases ({@link
   * FlockReq#UNLOCK}) {@code owner}'s lock on {@code h}; with {@code wait}, until another owner's
   * lock lets it.
   *
   * @throws FsException EAGAIN (not {@code wait}) when another owner's lock conflicts; EINTR
   *     when {@code interrupted} says so while waiting; ENOLCK when too many calls wait already
   */
  void lock(long open, Handle h, long owner, int op, boolean wait, BooleanSupplier interrupted) {
    if (op == FlockReq.UNLOCK) {
      unlock(h, owner);
      return;
    }
    FlockReq q = new FlockReq(h, client, owner, op, false);
    byOpen.computeIfAbsent(open, k -> new ConcurrentHashMap<>()).put(h, owner);
    if (tryLock(q, wait)) {
      return;
    }
    if (!waiters.tryAcquire()) {
      throw new FsException(Errno.ENOLCK, MAX_WAITERS + " flock calls wait on this mount already");
    }
    counters.increment("lock.waits");
    try {
      long sleepMs = 1;
      while (true) {
        if (interrupted.getAsBoolean()) {
          throw new FsException(Errno.EINTR, "flock interrupted");
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(sleepMs));
        sleepMs = Math.min(sleepMs * 2, MAX_WAIT_MS);
        if (tryLock(q, true)) {
          return;
        }
      }
    } finally {
      waiters.release();
    }
  }

  /**
   * The open {@code open} (a FUSE file handle) is released: the locks taken through it go, as a
   * flock lock goes with the last close of its open file description (the kernel's RELEASE of an
   * open that called flock says so too, {@code flock_release}; the open is what this client
   * knows it by).
   */
  void released(long open) {
    Map<Handle, Long> taken = byOpen.remove(open);
    if (taken == null) {
      return;
    }
    taken.forEach((h, owner) -> {
      try {
        unlock(h, owner);
      } catch (RuntimeException e) {
        // still held here, so still renewed: the next renewal tries again
        unlocking.add(Map.entry(h, owner));
        LOG.warn("could not release a flock lock on {} at its close (tried again with the renewals): {}", h, e.toString());
      }
    });
  }

  private void unlock(Handle h, long owner) {
    Map<Long, Integer> mine = held.get(h);
    if (mine == null || !mine.containsKey(owner)) {
      return; // unlocked already (a release after LOCK_UN), or never held
    }
    meta.call(new FlockReq(h, client, owner, FlockReq.UNLOCK, false));
    forget(h, owner);
  }

  /** Asks once; true when granted, false when refused and {@code wait}. */
  private boolean tryLock(FlockReq q, boolean wait) {
    try {
      termNanos = meta.call(q).termNanos();
    } catch (FsException e) {
      if (e.errno() == Errno.EAGAIN && wait) {
        return false;
      }
      throw e;
    }
    held.computeIfAbsent(q.handle(), k -> new ConcurrentHashMap<>()).put(q.owner(), q.op());
    renewSoon();
    return true;
  }

  private void forget(Handle h, long owner) {
    held.computeIfPresent(h, (k, m) -> {
      m.remove(owner);
      return m.isEmpty() ? null : m;
    });
  }

  /** Starts the renewals when the first lock is held. */
  private synchronized void renewSoon() {
    if (!renewing) {
      renewing = true;
      timer.schedule(this::renew, termNanos / 3, TimeUnit.NANOSECONDS);
    }
  }

  private void renew() {
    synchronized (this) {
      if (held.isEmpty()) {
        renewing = false;
        return;
      }
    }
    for (Map.Entry<Handle, Long> u : unlocking) {
      try {
        unlock(u.getKey(), u.getValue());
        unlocking.remove(u);
      } catch (RuntimeException e) {
        LOG.debug("releasing a flock lock on {} once more: {}", u.getKey(), e.toString());
      }
    }
    try {
      LockRenewResp r = meta.call(new LockRenewReq(client));
      termNanos = r.termNanos();
      if (!r.known()) {
        reclaim();
      }
    } catch (RuntimeException e) {
      LOG.warn("could not renew this mount's flock locks (they last {} s without): {}", termNanos / 1_000_000_000, e.toString());
    } finally {
      timer.schedule(this::renew, termNanos / 3, TimeUnit.NANOSECONDS);
    }
  }

  /** Claims every lock held here again, after the metadata server said it knows none of them. */
  private void reclaim() {
    for (Map.Entry<Handle, Map<Long, Integer>> f : held.entrySet()) {
      for (Map.Entry<Long, Integer> o : f.getValue().entrySet()) {
        if (unlocking.contains(Map.entry(f.getKey(), o.getKey()))) {
          continue; // its open is closed: not to be claimed again
        }
        try {
          meta.call(new FlockReq(f.getKey(), client, o.getKey(), o.getValue(), true));
          counters.increment("lock.reclaimed");
        } catch (FsException e) {
          counters.increment("lock.lost");
          forget(f.getKey(), o.getKey());
          LOG.error("a flock lock on {} is lost: the metadata server did not know it and cannot grant it again ({})",
              f.getKey(), e.getMessage());
        }
      }
    }
  }

  /** Releases every lock held here (best effort: the server drops them after its term anyway). */
  @Override
  public void close() {
    timer.shutdownNow();
    byOpen.clear();
    for (Map.Entry<Handle, Map<Long, Integer>> f : held.entrySet()) {
      for (Long owner : f.getValue().keySet()) {
        try {
          meta.call(new FlockReq(f.getKey(), client, owner, FlockReq.UNLOCK, false));
        } catch (RuntimeException e) {
          LOG.debug("releasing a flock lock on {} at close: {}", f.getKey(), e.toString());
        }
      }
    }
    held.clear();
  }
}
