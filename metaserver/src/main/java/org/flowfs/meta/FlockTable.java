package org.flowfs.meta;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.wire.MetaOp.FlockReq;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code flock(2)} locks of every client, so that a lock taken through one mount holds
 * against the others (a job script's {@code flock FILE cmd} on many nodes, HDF5's file locks):
 * per file, which owners (a client's id and the kernel's id of an open file description) hold it
 * shared or exclusive.
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
final class FlockTable {
  private static final Logger LOG = LoggerFactory.getLogger(FlockTable.class);
  static final String MARKER = "locks-held";

  private record Owner(long client, long id) {}

  private static final class Client {
    long seenNanos;
    final Set<Handle> files = new HashSet<>();
  }

  private final Map<Handle, Map<Owner, Integer>> byFile = new HashMap<>();
  private final Map<Long, Client> clients = new HashMap<>();
  private final long termNanos;
  private final Path marker;
  private final Counters counters;
  /** Until when ({@code System.nanoTime()}) only claims are granted; 0: from the start. */
  private final long graceUntil;

  /** With {@code marker} null, no file says that locks are held (tests). */
  FlockTable(long termNanos, Path marker, Counters counters, long nowNanos) {
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
        if (locks.keySet().stream().noneMatch(x -> x.client == q.client())) {
          c.files.remove(q.handle());
        }
        dropIfEmpty(q.handle(), locks);
      }
      return;
    }
    if (!q.reclaim() && inGrace(nowNanos)) {
      counters.increment("lock.refused");
      throw new FsException(Errno.EAGAIN, "the metadata server restarted: the holders of its locks claim them first");
    }
    if (locks != null) {
      for (Map.Entry<Owner, Integer> e : locks.entrySet()) {
        if (!e.getKey().equals(o) && (q.op() == FlockReq.EXCLUSIVE || e.getValue() == FlockReq.EXCLUSIVE)) {
          counters.increment("lock.refused");
          throw new FsException(Errno.EAGAIN, "locked by another");
        }
      }
    }
    if (byFile.isEmpty()) {
      mark(true);
    }
    byFile.computeIfAbsent(q.handle(), k -> new HashMap<>()).put(o, q.op());
    c.files.add(q.handle());
    counters.increment("lock.granted");
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
        Map<Owner, Integer> locks = byFile.get(h);
        if (locks != null && locks.keySet().removeIf(o -> o.client == e.getKey())) {
          dropped++;
          dropIfEmpty(h, locks);
        }
      }
    }
    if (dropped > 0) {
      counters.add("lock.expired", dropped);
    }
    return dropped;
  }

  /** How many owners hold a lock on {@code h} (tests). */
  synchronized int holders(Handle h) {
    Map<Owner, Integer> locks = byFile.get(h);
    return locks == null ? 0 : locks.size();
  }

  private void dropIfEmpty(Handle h, Map<Owner, Integer> locks) {
    if (locks.isEmpty()) {
      byFile.remove(h);
      if (byFile.isEmpty()) {
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
