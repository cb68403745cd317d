package org.flowfs.client;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import org.flowfs.common.Handle;

/**
 * Directories whose every name this client knows, so that a lookup of a name one of them does not
 * hold is ENOENT without a round trip (creating a file or a directory starts with such a lookup:
 * the kernel asks whether the name exists before it asks to create it).
 *
 * <p>A directory becomes known when this client makes it (it is empty then), or when a lease's
 * grant lists its names ({@link #listed}), and stays known
 * through this client's own changes of its entries, each of which the metadata server answers
 * with the directory's ctime before the change ({@code parentWasNs}, NFS's weak cache consistency
 * data): when that is the ctime this client last saw, no other change came between, and the
 * known names are still all the names. Any other answer (another client changed the directory,
 * two of this client's changes answered out of order, a change that failed, a rename, an
 * attribute change of the directory) forgets it.
 *
 * <p>What another client does to a known directory shows here within {@code client.entry-timeout}
 * of this client's last confirmed change there, as a name another client removed does for the
 * names every lookup caches: the names are trusted for that long after the last answer that
 * confirmed them. They are kept after that, untrusted, until an answer shows whether the
 * directory's ctime is still the one they are at: this client's next change there (its {@code
 * parentWasNs}), or the grant of a lease on it ({@link #confirm}).
 *
 * <p>Bounded: at most {@value #MAX_NAMES} names over all known directories (each weighs its
 * names), and {@value #MAX_DIR_NAMES} in one. Thread safe.
 */
final class DirContents {
  static final long MAX_NAMES = 262_144;
  static final int MAX_DIR_NAMES = 65_536;
  /** A directory's weight is brought up to date after this many names more. */
  private static final int REWEIGH = 256;

  /** The names of a directory, its ctime after the last change they include, and when that change was asked for. */
  private static final class Known {
    final Set<String> names = new HashSet<>();
    long ctimeNs;
    long confirmedNanos;
    volatile int weighed;

    Known(long ctimeNs, long confirmedNanos) {
      this.ctimeNs = ctimeNs;
      this.confirmedNanos = confirmedNanos;
    }
  }

  private final long ttlNanos;
  private final Cache<Handle, Known> dirs;

  DirContents(Duration ttl) {
    this.ttlNanos = ttl.toNanos();
    this.dirs = Caffeine.newBuilder()
        .maximumWeight(MAX_NAMES)
        .<Handle, Known>weigher((h, k) -> 1 + k.weighed)
        .executor(Runnable::run)
        .build();
  }

  /**
   * This client made directory {@code dir}, stamped {@code ctimeNs}, with a request sent at
   * {@code askedNanos} ({@link System#nanoTime}): it is empty.
   */
  void made(Handle dir, long ctimeNs, long askedNanos) {
    if (ttlNanos > 0) {
      dirs.put(dir, new Known(ctimeNs, askedNanos));
    }
  }

  /**
   * Every name of {@code dir} at ctime {@code ctimeNs}, as the metadata server listed them for a
   * request asked for at {@code askedNanos} (a lease's grant): known from now on.
   */
  void listed(Handle dir, java.util.Collection<String> names, long ctimeNs, long askedNanos) {
    if (ttlNanos <= 0 || names.size() >= MAX_DIR_NAMES) {
      return;
    }
    Known k = new Known(ctimeNs, askedNanos);
    k.names.addAll(names);
    k.weighed = names.size();
    dirs.put(dir, k);
  }

  /** True when {@code dir} is known and does not hold {@code name}: a lookup of it is ENOENT. */
  boolean absent(Handle dir, String name) {
    // past the timeout: ask the server, but keep the names: a change of this client's own
    // ({@link #changed}) or a lease's grant ({@link #confirm}) that follows the ctime they are at
    // shows that they are still all the names
    return trusted(dir, k -> !k.names.contains(name));
  }

  /** {@code test} of {@code dir}'s names, under their lock, when they are known and trusted; else false. */
  private boolean trusted(Handle dir, java.util.function.Predicate<Known> test) {
    return known(dir, k -> System.nanoTime() - k.confirmedNanos < ttlNanos && test.test(k));
  }

  /** {@code test} of {@code dir}'s names, under their lock, when they are known, trusted or not; else false. */
  private boolean known(Handle dir, java.util.function.Predicate<Known> test) {
    Known k = dirs.getIfPresent(dir);
    if (k == null) {
      return false;
    }
    synchronized (k) {
      return test.test(k);
    }
  }

  /**
   * This client's change of {@code dir}'s entries, asked for at {@code askedNanos}, was answered:
   * the directory's ctime was {@code wasNs} before it and is {@code nowNs} after; {@code name}
   * was added ({@code added}) or removed.
   */
  void changed(Handle dir, String name, boolean added, long wasNs, long nowNs, long askedNanos) {
    Known k = dirs.getIfPresent(dir);
    if (k == null) {
      return;
    }
    boolean drop;
    boolean reweigh = false;
    synchronized (k) {
      drop = wasNs == 0 || wasNs != k.ctimeNs || (added && k.names.size() >= MAX_DIR_NAMES);
      if (!drop) {
        if (added) {
          k.names.add(name);
        } else {
          k.names.remove(name);
        }
        k.ctimeNs = nowNs;
        k.confirmedNanos = askedNanos;
        if (k.names.size() >= k.weighed + REWEIGH) {
          k.weighed = k.names.size();
          reweigh = true;
        }
      }
    }
    if (drop) {
      dirs.asMap().remove(dir, k);
    } else if (reweigh) {
      dirs.asMap().replace(dir, k, k); // Caffeine weighs an entry when it is written
    }
  }

  /**
   * Adds {@code name} to {@code dir} when it is known and does not hold it: a create this client
   * made locally under a lease on the directory (see {@link DirLeases}), which the metadata server
   * confirms later with the directory's ctimes ({@link #changed}). False if the directory is not
   * known (or no longer trusted) or holds the name already.
   */
  boolean addPending(Handle dir, String name) {
    return trusted(dir, k -> k.names.size() < MAX_DIR_NAMES && k.names.add(name));
  }

  /**
   * Takes {@code name} out of {@code dir} when it is known, trusted and holds it: an unlink this
   * client made locally under a lease on the directory, which the metadata server confirms later
   * ({@link #changed}). False if the directory is not known (or no longer trusted) or does not
   * hold the name.
   */
  boolean removePending(Handle dir, String name) {
    return trusted(dir, k -> k.names.remove(name));
  }

  /**
   * The metadata server read {@code dir}'s ctime as {@code ctimeNs} in answer to a request asked
   * for at {@code askedNanos} (a lease's grant): when that is the ctime after the last change
   * known here, the names known are all the names still, however long ago they were last
   * confirmed, and are trusted from then on; true. Otherwise they are forgotten (another client
   * changed the directory); false.
   */
  boolean confirm(Handle dir, long ctimeNs, long askedNanos) {
    Known k = dirs.getIfPresent(dir);
    if (k == null) {
      return false;
    }
    synchronized (k) {
      if (k.ctimeNs == ctimeNs) {
        k.confirmedNanos = Math.max(k.confirmedNanos, askedNanos);
        return true;
      }
    }
    dirs.asMap().remove(dir, k);
    return false;
  }

  /** Whether {@code dir} is known, trusted, and holds no name. */
  boolean empty(Handle dir) {
    return trusted(dir, k -> k.names.isEmpty());
  }

  /**
   * Whether {@code dir} is known and holds no name, however long ago its names were last
   * confirmed: for a directory a lease of this client keeps other clients out of (its own, or
   * its parent's since it was made), whose names therefore change only with this client's own
   * changes, which keep them or forget them.
   */
  boolean emptyAsKnown(Handle dir) {
    return known(dir, k -> k.names.isEmpty());
  }

  /** The ctime at which every name of {@code dir} is known here; 0 when it is not known. */
  long ctimeOf(Handle dir) {
    Known k = dirs.getIfPresent(dir);
    if (k == null) {
      return 0;
    }
    synchronized (k) {
      return k.ctimeNs;
    }
  }

  /** Whatever this client knew of {@code dir}'s names may be wrong now. */
  void forget(Handle dir) {
    dirs.invalidate(dir);
  }

  /** Whether {@code dir} is known (its names may be too old to trust by now, until {@link #confirm}ed: see {@link #absent}). */
  boolean known(Handle dir) {
    return dirs.getIfPresent(dir) != null;
  }
}
