package org.flowfs.meta;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.RecordLocks;
import org.flowfs.common.RecordLocks.Range;
import org.flowfs.common.wire.MetaOp.FlockReq;
import org.flowfs.common.wire.MetaOp.RecordLockReq;
import org.flowfs.common.wire.MetaOp.RecordLockResp;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code flock(2)} locks and POSIX record locks ({@code fcntl(2)}) of every client, so that a
 * lock taken through one mount holds against the others (a job script's {@code flock FILE cmd} on
 * many nodes, HDF5's file locks, MPI-IO's locks around a read-modify-write, SQLite): per file,
 * which owners (a client's id and the kernel's lock owner) hold it shared or exclusive, and for
 * record locks which byte ranges ({@link RecordLocks}). The two kinds do not conflict with each
 * other, as on Linux.
 *
 * <p>Kept in memory only. A client that holds locks renews them within {@code meta.lock-term}
 * ({@link #renew}); one that does not (its mount died, or it lost the network) loses them when
 * the term is over ({@link #expire}). While any lock is held, the file {@value #MARKER} in the
 * metadata server's directory says so: a server that starts and finds it waits one term before
 * it grants locks other than the ones their holders claim back ({@link FlockReq#reclaim()}),
 * which they do when a renewal finds them unknown. A server that had none starts granting at
 * once.
 *
 * <p>Counters {@code lock.granted}, {@code lock.refused}, {@code lock.expired}. Thread safe.
 */
final class LockTable {
  private static final Logger LOG = LoggerFactory.getLogger(LockTable.class);
  static final String MARKER = "locks-held";

  private record Owner(long client, long id) {}

  private static final class Client {
    long seenNanos;
    final Set<Handle> files = new HashSet<>();
    /** The process of each of its record lock owners: what a test from this client is told. */
    final Map<Long, Integer> pids = new HashMap<>();
  }

  private final Map<Handle, Map<Owner, Integer>> byFile = new HashMap<>();
  private final Map<Handle, Map<Owner, List<Range>>> records = new HashMap<>();
  private final Map<Long, Client> clients = new HashMap<>();
  private final long termNanos;
  private final Path marker;
  private final Counters counters;
  /** Until when ({@code System.nanoTime()}) only claims are granted; 0: from the start. */
  private final long graceUntil;

  /** With {@code marker} null, no file says that locks are held (tests). */
  LockTable(long termNanos, Path marker, Counters counters, long nowNanos) {
    this.termNanos = termNanos;
    this.marker = marker;
    this.counters = counters;
    this.graceUntil = marker != null && Files.exists(marker) ? nowNanos + termNanos : 0;
  }

  long termNanos() {
    return termNanos;
  }

  /** Whether the table still waits for the holders of the locks a previous run granted. */
  synchronized boolean inGrace(long nowNanos) {
    return graceUntil != 0 && nowNanos - graceUntil < 0;
  }

  /**
   * Takes, converts or releases the lock {@code q} asks for.
   *
   * @throws FsException EAGAIN when another owner's lock conflicts, or the table waits for the
   *     holders of a previous run's locks and {@code q} claims none
   */
  synchronized void lock(FlockReq q, long nowNanos) {
    Owner o = new Owner(q.client(), q.owner());
    Map<Owner, Integer> locks = byFile.get(q.handle());
    Client c = clients.computeIfAbsent(q.client(), k -> new Client());
    c.seenNanos = nowNanos;
    if (q.op() == FlockReq.UNLOCK) {
      if (locks != null && locks.remove(o) != null) {
        dropIfEmpty(q.handle(), byFile, locks);
        forgetIfNone(c, q.client(), q.handle());
      }
      return;
    }
    refuseInGrace(q.reclaim(), nowNanos);
    if (locks != null) {
      for (Map.Entry<Owner, Integer> e : locks.entrySet()) {
        if (!e.getKey().equals(o) && (q.op() == FlockReq.EXCLUSIVE || e.getValue() == FlockReq.EXCLUSIVE)) {
          counters.increment("lock.refused");
          throw new FsException(Errno.EAGAIN, "locked by another");
        }
      }
    }
    if (none()) {
      mark(true);
    }
    byFile.computeIfAbsent(q.handle(), k -> new HashMap<>()).put(o, q.op());
    c.files.add(q.handle());
    counters.increment("lock.granted");
  }

  /**
   * Takes, converts or releases the record lock {@code q} asks for, or with {@link
   * RecordLockReq#test()} only says what would refuse it.
   *
   * @return {@link RecordLocks#UNLOCK} with no range when nothing conflicts; for a test, else the
   *     first conflicting lock (its process only when it is the asking client's)
   * @throws FsException EAGAIN when another owner's lock conflicts, or the table waits for the
   *     holders of a previous run's locks and {@code q} claims none
   */
  synchronized RecordLockResp lock(RecordLockReq q, long nowNanos) {
    Owner o = new Owner(q.client(), q.owner());
    Map<Owner, List<Range>> locks = records.get(q.handle());
    Client c = clients.computeIfAbsent(q.client(), k -> new Client());
    c.seenNanos = nowNanos;
    if (q.type() != RecordLocks.UNLOCK) {
      if (!q.test()) {
        refuseInGrace(q.reclaim(), nowNanos);
      }
      for (Map.Entry<Owner, List<Range>> e : locks == null ? Map.<Owner, List<Range>>of().entrySet() : locks.entrySet()) {
        if (e.getKey().equals(o)) {
          continue;
        }
        for (Range r : e.getValue()) {
          if (r.conflicts(q.type(), q.start(), q.end())) {
            if (q.test()) {
              Client holder = clients.get(e.getKey().client);
              int pid = e.getKey().client == q.client() && holder != null ? holder.pids.getOrDefault(e.getKey().id, 0) : 0;
              return new RecordLockResp(r.type(), r.start(), r.end(), pid, termNanos);
            }
            counters.increment("lock.refused");
            throw new FsException(Errno.EAGAIN, "bytes " + r.start() + ".." + r.end() + " locked by another");
          }
        }
      }
    }
    if (!q.test()) {
      List<Range> before = locks == null ? List.of() : locks.getOrDefault(o, List.of());
      List<Range> after = RecordLocks.apply(before, q.type(), q.start(), q.end());
      if (after.isEmpty()) {
        if (locks != null && locks.remove(o) != null) {
          dropIfEmpty(q.handle(), records, locks);
          forgetIfNone(c, q.client(), q.handle());
        }
      } else {
        if (none()) {
          mark(true);
        }
        records.computeIfAbsent(q.handle(), k -> new HashMap<>()).put(o, after);
        c.files.add(q.handle());
        c.pids.put(q.owner(), q.pid());
        counters.increment("lock.granted");
      }
    }
    return new RecordLockResp(RecordLocks.UNLOCK, 0, 0, 0, termNanos);
  }

  private void refuseInGrace(boolean reclaim, long nowNanos) {
    if (!reclaim && inGrace(nowNanos)) {
      counters.increment("lock.refused");
      throw new FsException(Errno.EAGAIN, "the metadata server restarted: the holders of its locks claim them first");
    }
  }

  /** Forgets that {@code client} holds locks on {@code h} once it holds none of either kind. */
  private void forgetIfNone(Client c, long client, Handle h) {
    Map<Owner, Integer> f = byFile.get(h);
    Map<Owner, List<Range>> r = records.get(h);
    if ((f == null || f.keySet().stream().noneMatch(x -> x.client == client))
        && (r == null || r.keySet().stream().noneMatch(x -> x.client == client))) {
      c.files.remove(h);
      if (c.files.isEmpty()) {
        c.pids.clear();
      }
    }
  }

  /** {@code client} is alive; false when it holds no lock here (unknown, or expired). */
  synchronized boolean renew(long client, long nowNanos) {
    Client c = clients.get(client);
    if (c == null) {
      return false;
    }
    c.seenNanos = nowNanos;
    return true;
  }

  /** Drops the locks of every client not heard from for a term; how many locks went. */
  synchronized int expire(long nowNanos) {
    int dropped = 0;
    for (Iterator<Map.Entry<Long, Client>> it = clients.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<Long, Client> e = it.next();
      if (nowNanos - e.getValue().seenNanos <= termNanos) {
        continue;
      }
      it.remove();
      for (Handle h : e.getValue().files) {
        for (Map<Handle, ? extends Map<Owner, ?>> kind : List.of(byFile, records)) {
          Map<Owner, ?> locks = kind.get(h);
          if (locks != null && locks.keySet().removeIf(o -> o.client == e.getKey())) {
            dropped++;
            dropIfEmpty(h, kind, locks);
          }
        }
      }
    }
    if (dropped > 0) {
      counters.add("lock.expired", dropped);
    }
    return dropped;
  }

  /** How many owners hold a lock on {@code h}, of either kind (tests). */
  synchronized int holders(Handle h) {
    Map<Owner, Integer> locks = byFile.get(h);
    Map<Owner, List<Range>> ranges = records.get(h);
    return (locks == null ? 0 : locks.size()) + (ranges == null ? 0 : ranges.size());
  }

  private boolean none() {
    return byFile.isEmpty() && records.isEmpty();
  }

  private void dropIfEmpty(Handle h, Map<Handle, ?> kind, Map<Owner, ?> locks) {
    if (locks.isEmpty()) {
      kind.remove(h);
      if (none()) {
        mark(false);
      }
    }
  }

  private void mark(boolean held) {
    if (marker == null) {
      return;
    }
    try {
      if (held) {
        Files.write(marker, new byte[0]);
      } else {
        Files.deleteIfExists(marker);
      }
    } catch (IOException e) {
      // the locks work all the same; a restart may then not wait for their holders
      LOG.warn("cannot {} {}: {}", held ? "write" : "remove", marker, e.toString());
    }
  }
}
