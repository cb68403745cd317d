package org.flowfs.client;

import com.github.benmanes.caffeine.cache.Cache;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.flowfs.common.Attr;
import org.flowfs.common.Handle;

/**
 * Attributes by handle, trusted for {@code client.attr-timeout} after they were fetched. This
 * client's own changes replace entries at once; other clients' changes show within the timeout
 * (and at open, which revalidates: close-to-open consistency). Attributes nobody else can change
 * while a lease of this client lives ({@link #hold}) are trusted until it ends. Thread safe.
 */
final class AttrCache {
  private final Cache<Handle, Attr> cache;
  /** Attributes {@link #hold held} past the timeout, kept up to date as the cached ones are. */
  private final ConcurrentHashMap<Handle, Attr> held = new ConcurrentHashMap<>();

  AttrCache(Duration ttl, int maxEntries) {
    this.cache = Caches.expiring(ttl, maxEntries);
  }

  Attr get(Handle h) {
    Attr a = cache.getIfPresent(h);
    return a != null || held.isEmpty() ? a : held.get(h);
  }

  void put(Attr a) {
    cache.put(a.handle(), a);
    held.computeIfPresent(a.handle(), (h, old) -> a);
  }

  /** Caches {@code a} when nothing is cached for its object; true when it did. */
  boolean putIfAbsent(Attr a) {
    if (held.containsKey(a.handle())) {
      return false;
    }
    return cache.asMap().putIfAbsent(a.handle(), a) == null;
  }

  /**
   * Caches {@code a} and trusts it past the timeout until {@code until} completes: the object is
   * one only this client can reach while a lease of its own lives (a directory it made under its
   * lease on the parent, see {@link DirLeases#madeUntil}), so its attributes change only with
   * this client's own changes, which replace or drop them here. The caller bounds how many.
   */
  void hold(Attr a, CompletableFuture<?> until) {
    put(a);
    held.put(a.handle(), a);
    until.whenComplete((v, e) -> held.remove(a.handle()));
  }

  void invalidate(Handle h) {
    cache.invalidate(h);
    held.remove(h);
  }

  /**
   * Directory {@code dir} gained or lost an entry, stamped {@code timeNs} by the server (and
   * {@code nlinkDelta} links, for a subdirectory): updates its cached attributes, if any, rather
   * than dropping them, so nobody has to ask for them again.
   */
  void entriesChanged(Handle dir, long timeNs, int nlinkDelta) {
    cache.asMap().computeIfPresent(dir, (h, a) -> a.withEntriesChanged(timeNs, nlinkDelta));
    held.computeIfPresent(dir, (h, a) -> a.withEntriesChanged(timeNs, nlinkDelta));
  }
}
