package org.flowfs.client;

import java.security.SecureRandom;
import java.util.List;
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
import org.flowfs.common.RecordLocks;
import org.flowfs.common.RecordLocks.Range;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.MetaOp.FlockReq;
import org.flowfs.common.wire.MetaOp.LockRenewReq;
import org.flowfs.common.wire.MetaOp.LockRenewResp;
import org.flowfs.common.wire.MetaOp.RecordLockReq;
import org.flowfs.common.wire.MetaOp.RecordLockResp;
import org.flowfs.common.wire.Req;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This client's {@code flock(2)} locks and POSIX record locks ({@code fcntl(2)}), held on the
 * metadata server ({@link FlockReq}, {@link RecordLockReq}) so that they hold against every other
 * client: what it holds, the renewals that keep them while it lives ({@link LockRenewReq}, every
 * third of the server's term), and, when a renewal finds the server does not know them (it
 * restarted), claiming them again. A lock goes at the latest with the open it was taken through
 * ({@link #released}); a record lock also with its owner's unlock at any close of the file
 * (libfuse's FLUSH), which costs no call when the owner holds none here.
 *
 * <p>A blocking lock that another owner's lock refuses is asked for again until granted, the
 * wait doubling from 1 ms to {@value #MAX_WAIT_MS} ms, or until the caller is interrupted
 * (EINTR). Each such wait holds the calling thread (a FUSE worker of the mount), so at most
 * {@value #MAX_WAITERS} wait at once; a further one fails with ENOLCK rather than leave the mount
 * no thread to answer the unlock it waits for.
 *
 * <p>Counters {@code lock.waits}, {@code lock.reclaimed}, {@code lock.lost}. Thread safe.
 */
final class Locks implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Locks.class);
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
  /** Per file, per record lock owner (the kernel's lock owner): the ranges held and the process. */
  private final Map<Handle, Map<Long, Held>> records = new ConcurrentHashMap<>();
  /** The record lock owners that locked through each open: their locks go with it. */
  private final Map<Long, Map<Map.Entry<Handle, Long>, Boolean>> recordsByOpen = new ConcurrentHashMap<>();
  /** Locks of opens released while the metadata server did not answer: released at a renewal. */
  private final java.util.Set<Pending> unlocking = ConcurrentHashMap.newKeySet();
  private final Semaphore waiters = new Semaphore(MAX_WAITERS);
  private final ScheduledExecutorService timer =
      Executors.newSingleThreadScheduledExecutor(new NamedThreads("flowfs-locks"));
  private volatile long termNanos = DEFAULT_TERM_NANOS;
  private boolean renewing; // guarded by this

  private record Held(List<Range> ranges, int pid) {}

  /** A lock to release once the metadata server answers: an owner's flock, or all its record locks. */
  private record Pending(Handle handle, long owner, boolean record) {}

  Locks(Meta meta, Counters counters) {
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
    waitFor(() -> tryLock(q, wait), interrupted);
  }

  /**
   * Takes ({@link RecordLocks#READ}, {@link RecordLocks#WRITE}) or releases ({@link
   * RecordLocks#UNLOCK}) {@code owner}'s record lock on bytes {@code [start, end]} of {@code h}
   * for process {@code pid}, through the open {@code open}; with {@code wait}, until other owners'
   * locks let it. Errors as {@link #lock}.
   */
  void recordLock(long open, Handle h, long owner, int type, long start, long end, int pid, boolean wait,
      BooleanSupplier interrupted) {
    if (type == RecordLocks.UNLOCK) {
      recordUnlock(h, owner, start, end);
      return;
    }
    RecordLockReq q = new RecordLockReq(h, client, owner, type, start, end, pid, false, false);
    recordsByOpen.computeIfAbsent(open, k -> new ConcurrentHashMap<>()).put(Map.entry(h, owner), true);
    waitFor(() -> tryRecordLock(q, wait), interrupted);
  }

  /**
   * The first lock of another owner that a record lock of {@code type} on bytes {@code [start,
   * end]} of {@code h} by {@code owner} would wait for ({@code type} {@link RecordLocks#UNLOCK}:
   * none), as {@code F_GETLK} asks.
   */
  RecordLockResp testRecordLock(Handle h, long owner, int type, long start, long end) {
    return meta.call(new RecordLockReq(h, client, owner, type, start, end, 0, true, false));
  }

  /** Whether {@code owner} holds a record lock on {@code h} here. */
  boolean holdsRecord(Handle h, long owner) {
    Map<Long, Held> mine = records.get(h);
    return mine != null && mine.containsKey(owner);
  }

  /** Whether this client holds a record lock on any file. */
  boolean holdsRecordLocks() {
    return !records.isEmpty();
  }

  /** Runs {@code attempt} until it grants, waiting between attempts; see {@link #lock}. */
  private void waitFor(BooleanSupplier attempt, BooleanSupplier interrupted) {
    if (attempt.getAsBoolean()) {
      return;
    }
    if (!waiters.tryAcquire()) {
      throw new FsException(Errno.ENOLCK, MAX_WAITERS + " lock calls wait on this mount already");
    }
    counters.increment("lock.waits");
    try {
      long sleepMs = 1;
      while (true) {
        if (interrupted.getAsBoolean()) {
          throw new FsException(Errno.EINTR, "lock wait interrupted");
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(sleepMs));
        sleepMs = Math.min(sleepMs * 2, MAX_WAIT_MS);
        if (attempt.getAsBoolean()) {
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
    if (taken != null) {
      taken.forEach((h, owner) -> release(new Pending(h, owner, false)));
    }
    Map<Map.Entry<Handle, Long>, Boolean> recorded = recordsByOpen.remove(open);
    if (recorded != null) {
      recorded.keySet().forEach(e -> release(new Pending(e.getKey(), e.getValue(), true)));
    }
  }

  private void release(Pending p) {
    try {
      unlock(p);
    } catch (RuntimeException e) {
      // still held here, so still renewed: the next renewal tries again
      unlocking.add(p);
      LOG.warn("could not release a lock on {} at its close (tried again with the renewals): {}", p.handle, e.toString());
    }
  }

  private void unlock(Pending p) {
    if (p.record) {
      recordUnlock(p.handle, p.owner, 0, RecordLocks.EOF);
    } else {
      unlock(p.handle, p.owner);
    }
  }

  private void recordUnlock(Handle h, long owner, long start, long end) {
    Map<Long, Held> mine = records.get(h);
    Held held = mine == null ? null : mine.get(owner);
    if (held == null || held.ranges.stream().noneMatch(r -> r.overlaps(start, end))) {
      return; // holds nothing there: no call (libfuse unlocks at every FLUSH)
    }
    meta.call(new RecordLockReq(h, client, owner, RecordLocks.UNLOCK, start, end, 0, false, false));
    recorded(h, owner, RecordLocks.UNLOCK, start, end, held.pid);
  }

  /** Notes a record lock the metadata server granted (or an unlock it took). */
  private void recorded(Handle h, long owner, int type, long start, long end, int pid) {
    records.compute(h, (k, m) -> {
      Map<Long, Held> owners = m == null ? new ConcurrentHashMap<>() : m;
      Held before = owners.get(owner);
      List<Range> after = RecordLocks.apply(before == null ? List.of() : before.ranges, type, start, end);
      if (after.isEmpty()) {
        owners.remove(owner);
      } else {
        owners.put(owner, new Held(after, pid));
      }
      return owners.isEmpty() ? null : owners;
    });
  }

  /** Asks once; true when granted, false when refused and {@code wait}. */
  private boolean tryRecordLock(RecordLockReq q, boolean wait) {
    try {
      termNanos = meta.call(q).termNanos();
    } catch (FsException e) {
      if (e.errno() == Errno.EAGAIN && wait) {
        return false;
      }
      throw e;
    }
    recorded(q.handle(), q.owner(), q.type(), q.start(), q.end(), q.pid());
    renewSoon();
    return true;
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
      if (held.isEmpty() && records.isEmpty()) {
        renewing = false;
        return;
      }
    }
    for (Pending u : unlocking) {
      try {
        unlock(u);
        unlocking.remove(u);
      } catch (RuntimeException e) {
        LOG.debug("releasing a lock on {} once more: {}", u.handle, e.toString());
      }
    }
    try {
      LockRenewResp r = meta.call(new LockRenewReq(client));
      termNanos = r.termNanos();
      if (!r.known()) {
        reclaim();
      }
    } catch (RuntimeException e) {
      LOG.warn("could not renew this mount's locks (they last {} s without): {}", termNanos / 1_000_000_000, e.toString());
    } finally {
      timer.schedule(this::renew, termNanos / 3, TimeUnit.NANOSECONDS);
    }
  }

  /** Claims every lock held here again, after the metadata server said it knows none of them. */
  private void reclaim() {
    for (Map.Entry<Handle, Map<Long, Integer>> f : held.entrySet()) {
      for (Map.Entry<Long, Integer> o : f.getValue().entrySet()) {
        if (unlocking.contains(new Pending(f.getKey(), o.getKey(), false))) {
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
    for (Map.Entry<Handle, Map<Long, Held>> f : records.entrySet()) {
      for (Map.Entry<Long, Held> o : f.getValue().entrySet()) {
        if (unlocking.contains(new Pending(f.getKey(), o.getKey(), true))) {
          continue;
        }
        try {
          for (Range r : o.getValue().ranges) {
            meta.call(new RecordLockReq(f.getKey(), client, o.getKey(), r.type(), r.start(), r.end(), o.getValue().pid, false, true));
          }
          counters.increment("lock.reclaimed");
        } catch (FsException e) {
          counters.increment("lock.lost");
          recorded(f.getKey(), o.getKey(), RecordLocks.UNLOCK, 0, RecordLocks.EOF, 0);
          LOG.error("a record lock on {} is lost: the metadata server did not know it and cannot grant it again ({})",
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
    recordsByOpen.clear();
    for (Map.Entry<Handle, Map<Long, Held>> f : records.entrySet()) {
      for (Long owner : f.getValue().keySet()) {
        try {
          meta.call(new RecordLockReq(f.getKey(), client, owner, RecordLocks.UNLOCK, 0, RecordLocks.EOF, 0, false, false));
        } catch (RuntimeException e) {
          LOG.debug("releasing a record lock on {} at close: {}", f.getKey(), e.toString());
        }
      }
    }
    records.clear();
  }
}
