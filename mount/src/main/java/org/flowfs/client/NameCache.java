package org.flowfs.client;

import com.github.benmanes.caffeine.cache.Cache;
import java.time.Duration;
import org.flowfs.common.Handle;

/**
 * Directory entries, (parent handle, name) to handle, trusted for {@code client.entry-timeout}.
 * A rename or remove by this client drops the entries it changes at once. Thread safe.
 */
final class NameCache {
  private record Key(Handle parent, String name) {}

  private final Cache<Key, Handle> cache;

  NameCache(Duration ttl, int maxEntries) {
    this.cache = Caches.expiring(ttl, maxEntries);
  }

  Handle get(Handle parent, String name) {
    return cache.getIfPresent(new Key(parent, name));
  }

  void put(Handle parent, String name, Handle child) {
    cache.put(new Key(parent, name), child);
  }

  void invalidate(Handle parent, String name) {
    cache.invalidate(new Key(parent, name));
  }
}
