package org.flowfs.client;

import com.github.benmanes.caffeine.cache.Cache;
import java.time.Duration;
import org.flowfs.common.Handle;

/**
 * Directory entries, (parent handle, name) to handle, trusted for {@code client.entry-timeout};
 * and, for as long, the names a lookup found free (ENOENT). A rename or remove by this client
 * drops the entries it changes at once, and an entry made drops the name's being free. Thread
 * safe.
 */
final class NameCache {
  private record Key(Handle parent, String name) {}

  private final Cache<Key, Handle> cache;
  private final Cache<Key, Boolean> free;

  NameCache(Duration ttl, int maxEntries) {
    this.cache = Caches.expiring(ttl, maxEntries);
    this.free = Caches.expiring(ttl, maxEntries);
  }

  Handle get(Handle parent, String name) {
    return cache.getIfPresent(new Key(parent, name));
  }

  void put(Handle parent, String name, Handle child) {
    Key k = new Key(parent, name);
    free.invalidate(k);
    cache.put(k, child);
  }

  void invalidate(Handle parent, String name) {
    Key k = new Key(parent, name);
    cache.invalidate(k);
    free.invalidate(k);
  }

  /** A lookup of {@code name} in {@code parent} found nothing (ENOENT). */
  void putFree(Handle parent, String name) {
    free.put(new Key(parent, name), Boolean.TRUE);
  }

  /** Whether a lookup found {@code name} in {@code parent} free within the timeout, and nothing was made there here since. */
  boolean free(Handle parent, String name) {
    return free.getIfPresent(new Key(parent, name)) != null;
  }
}
