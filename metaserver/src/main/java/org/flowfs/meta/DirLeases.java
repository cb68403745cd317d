package org.flowfs.meta;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongSupplier;
import org.flowfs.common.Counters;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.wire.MetaOp.Reserved;

/**
 * The directory leases the metadata server grants: at most one per directory, each with an id
 * (a random non-zero long), an expiry, the files reserved for it (metadata handle to layout), a
 * {@code recalled} flag, and a future {@link Lease#ended()} that completes when it ends. While a
 * lease lives, requests of others that touch its directory wait for that future ({@link
 * #recall}); the holder's batches ({@link #enterBatch}) renew it.
 *
 * <p>A lease ends when its holder ends it ({@link #end}: its unused reservations go back to the
 * caller) or when no batch came for a {@link #termNs() term} (it expires: its unused
 * reservations go to {@link Expiry}, since a stalled holder may have written into their
 * datafiles). A lease never expires while one of its batches is being applied. Ending completes
 * the future outside this object's lock.
 *
 * <p>Thread safe. Knows nothing of the network: the clock and the scheduler that runs expiry
 * checks are given, so tests drive both. Counts {@code lease.recalled}, {@code lease.parked}
 * and {@code lease.expired}.
 */
final class DirLeases implements AutoCloseable {
  /** How long a lease lasts without a batch, unless the server is told otherwise. */
  static final Duration TERM = Duration.ofSeconds(3);

  /** Runs a task after a delay (the server's timer thread; a queue the test runs by hand). */
  @FunctionalInterface
  interface Scheduler {
    /** Runs {@code task} in about {@code delayNs}; may throw RejectedExecutionException when shut. */
    void after(long delayNs, Runnable task);
  }

  /** Takes the reserved files an expired lease did not use. */
  @FunctionalInterface
  interface Expiry {
    void expired(Lease lease, Map<Handle, Layout> unused);
  }

  /** One lease; its mutable state is guarded by the {@link DirLeases} that granted it. */
  static final class Lease {
    private final long id;
    private final Handle dir;
    private final CompletableFuture<Void> ended = new CompletableFuture<>();
    private final Map<Handle, Layout> reserved = new LinkedHashMap<>();
    private long expiresNs;
    private boolean recalled;
    private boolean live = true;
    private int applying;
    /** Batches of this lease taken in (applied, or failed), and removals of its directory waiting for a count of them. */
    private int batchesTaken;
    private final List<Taken> awaiting = new ArrayList<>();

    private Lease(long id, Handle dir, long expiresNs) {
      this.id = id;
      this.dir = dir;
      this.expiresNs = expiresNs;
    }

    long id() {
      return id;
    }

    Handle dir() {
      return dir;
    }

    /** Completes (never exceptionally) when the lease ends, by its holder, expiry or close. */
    CompletableFuture<Void> ended() {
      return ended;
    }

    @Override
    public String toString() {
      return "lease " + Long.toHexString(id) + " on " + dir;
    }
  }

  private final ConcurrentHashMap<Handle, Lease> byDir = new ConcurrentHashMap<>();
  private final long termNs;
  private final LongSupplier clock;
  private final Scheduler scheduler;
  private final Expiry expiry;
  private final Counters counters;

  /**
   * @param term how long a lease lasts without a batch
   * @param clock nanoseconds, only ever compared ({@link System#nanoTime()})
   */
  DirLeases(Duration term, LongSupplier clock, Scheduler scheduler, Expiry expiry, Counters counters) {
    if (term.isNegative() || term.isZero()) {
      throw new IllegalArgumentException("lease term " + term);
    }
    this.termNs = term.toNanos();
    this.clock = clock;
    this.scheduler = scheduler;
    this.expiry = expiry;
    this.counters = counters;
  }

  /** No lease lives: the cheap test every request makes first. */
  boolean isEmpty() {
    return byDir.isEmpty();
  }

  /** Whether a lease lives on {@code dir}. */
  boolean holds(Handle dir) {
    return byDir.containsKey(dir);
  }

  /** How long a lease lasts without a batch. */
  long termNs() {
    return termNs;
  }

  /** A new lease on {@code dir}, registered at once; null when one lives there already. */
  Lease grant(Handle dir) {
    Lease l;
    synchronized (this) {
      if (byDir.containsKey(dir)) {
        return null;
      }
      l = new Lease(newId(), dir, clock.getAsLong() + termNs);
      byDir.put(dir, l);
    }
    checkIn(termNs, l);
    return l;
  }

  private static long newId() {
    long id;
    do {
      id = ThreadLocalRandom.current().nextLong();
    } while (id == 0);
    return id;
  }

  /**
   * What a request touching {@code dir} waits for: the end of the lease on it, which is recalled
   * now (its holder learns so with its next batch); null when no lease lives there.
   */
  CompletableFuture<Void> recall(Handle dir) {
    Lease l = byDir.get(dir);
    if (l == null) {
      return null;
    }
    boolean first;
    synchronized (this) {
      if (!l.live) {
        return null;
      }
      first = !l.recalled;
      l.recalled = true;
    }
    if (first) {
      counters.increment("lease.recalled");
    }
    counters.increment("lease.parked");
    return l.ended;
  }

  /**
   * The live lease {@code id} on {@code dir}, renewed for a term and held from expiring until
   * {@link #leaveBatch}; null when there is none (never granted, ended, expired, another dir).
   */
  synchronized Lease enterBatch(Handle dir, long id) {
    Lease l = byDir.get(dir);
    if (l == null || l.id != id || !l.live) {
      return null;
    }
    l.expiresNs = clock.getAsLong() + termNs;
    l.applying++;
    return l;
  }

  /** A hold {@link #enterBatch} gave is over: the lease may expire again. */
  synchronized void leaveBatch(Lease l) {
    l.applying--;
  }

  /** A removal of a lease's directory waiting until {@code batches} of the lease's batches were taken in. */
  private record Taken(int batches, CompletableFuture<Void> done) {}

  /**
   * A batch of {@code l} that {@link #enterBatch} let in is taken in (applied, or failed): the
   * lease may expire again, and a removal of its directory waiting for it goes on ({@link
   * #afterBatches}).
   */
  void batchTaken(Lease l) {
    List<CompletableFuture<Void>> due = new ArrayList<>();
    synchronized (this) {
      l.applying--;
      l.batchesTaken++;
      for (Iterator<Taken> it = l.awaiting.iterator(); it.hasNext(); ) {
        Taken t = it.next();
        if (t.done().isDone() || t.batches() <= l.batchesTaken) {
          it.remove();
          due.add(t.done());
        }
      }
    }
    due.forEach(f -> f.complete(null));
  }

  /**
   * Completes once {@code batches} batches of {@code l} were taken in ({@link #batchTaken}), or the
   * lease ended, or a lease term passed, whichever comes first: the holder sent that many before
   * the removal of its directory that waits for this, and one may still be on its way on another
   * connection. Never exceptionally.
   */
  CompletableFuture<Void> afterBatches(Lease l, int batches) {
    CompletableFuture<Void> f = new CompletableFuture<>();
    synchronized (this) {
      if (!l.live || l.batchesTaken >= batches) {
        return CompletableFuture.completedFuture(null);
      }
      l.awaiting.add(new Taken(batches, f));
    }
    counters.increment("lease.rmdir-waits");
    l.ended.thenRun(() -> f.complete(null));
    try {
      scheduler.after(termNs, () -> f.complete(null));
    } catch (RejectedExecutionException e) {
      f.complete(null); // shutting down
    }
    return f;
  }

  /** Whether {@code l} is recalled: a request of another waits for its end. */
  synchronized boolean recalled(Lease l) {
    return l.recalled;
  }

  /** Adds reserved files to a live lease; false (nothing added) when it has ended. */
  synchronized boolean reserve(Lease l, List<Reserved> files) {
    if (!l.live) {
      return false;
    }
    for (Reserved r : files) {
      l.reserved.put(r.handle(), r.layout());
    }
    return true;
  }

  /** How many reserved files {@code l} holds unused. */
  synchronized int unused(Lease l) {
    return l.reserved.size();
  }

  /**
   * Takes reservation {@code handle} out of the live lease {@code l} for a create: its layout, or
   * null when the lease does not hold it (never reserved for it, or used already).
   */
  synchronized Layout claim(Lease l, Handle handle) {
    return l.live ? l.reserved.remove(handle) : null;
  }

  /**
   * Ends {@code l} (its holder sends nothing more): completes its future and returns its unused
   * reservations for the caller to give back; empty if it had ended already.
   */
  Map<Handle, Layout> end(Lease l) {
    Map<Handle, Layout> unused = finish(l);
    l.ended.complete(null);
    return unused;
  }

  /** Marks {@code l} ended and takes it out; its unused reservations (none if ended already). */
  private synchronized Map<Handle, Layout> finish(Lease l) {
    if (!l.live) {
      return Map.of();
    }
    l.live = false;
    byDir.remove(l.dir, l);
    Map<Handle, Layout> unused = new LinkedHashMap<>(l.reserved);
    l.reserved.clear();
    return unused;
  }

  /** Checks {@code l} for expiry in {@code delayNs}. */
  private void checkIn(long delayNs, Lease l) {
    try {
      scheduler.after(delayNs, () -> check(l));
    } catch (RejectedExecutionException e) {
      // shutting down: close() ends every lease
    }
  }

  /** Expires {@code l} if its term passed with no batch; otherwise checks again when it may have. */
  private void check(Lease l) {
    long again;
    Map<Handle, Layout> unused;
    synchronized (this) { // decided and done under one lock: no batch enters in between
      if (!l.live) {
        return;
      }
      again = l.applying > 0 ? termNs : l.expiresNs - clock.getAsLong();
      unused = again > 0 ? null : finish(l);
    }
    if (unused == null) {
      checkIn(again, l);
      return;
    }
    counters.increment("lease.expired");
    expiry.expired(l, unused);
    l.ended.complete(null);
  }

  /** The datafiles of every live lease's unused reservations (for fsck: not orphans). */
  synchronized List<Handle> reservedDatafiles() {
    List<Handle> out = new ArrayList<>();
    for (Lease l : byDir.values()) {
      l.reserved.values().forEach(layout -> out.addAll(layout.datafiles()));
    }
    return out;
  }

  /** Ends every lease (the server stops): their waiting requests run; reservations are dropped. */
  @Override
  public void close() {
    for (Lease l : List.copyOf(byDir.values())) {
      end(l);
    }
  }
}
