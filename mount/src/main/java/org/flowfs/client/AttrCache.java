package org.flowfs.client;

import com.github.benmanes.caffeine.cache.Cache;
import java.time.Duration;
import org.flowfs.common.Attr;
import org.flowfs.common.Handle;

/**
 * Attributes by handle, trusted for {@code client.attr-timeout} after they were fetched. This
 * client's own changes replace entries at once; other clients' changes show within the timeout
 * (and at open, which revalidates: close-to-open consistency). Thread safe.
 */
final class AttrCache {
  private final Cache<Handle, Attr> cache;

  AttrCache(Duration ttl, int maxEntries) {
    this.cache = Caches.expiring(ttl, maxEntries);
  }

  Attr get(Handle h) {
    return cache.getIfPresent(h);
  }

  void put(Attr a) {
    cache.put(a.handle(), a);
  }

  void invalidate(Handle h) {
    cache.invalidate(h);
  }

  /**
   * Directory {@code dir} gained or lost an entry, stamped {@code timeNs} by the server (and
   * {@code nlinkDelta} links, for a subdirectory): updates its cached attributes, if any, rather
   * than dropping them, so nobody has to ask for them again.
   */
  void entriesChanged(Handle dir, long timeNs, int nlinkDelta) {
    cache.asMap().computeIfPresent(dir, (h, a) -> a.withEntriesChanged(timeNs, nlinkDelta));
  }
}
