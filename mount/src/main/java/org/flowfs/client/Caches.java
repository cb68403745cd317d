package org.flowfs.client;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.time.Duration;

/**
 * The client's Caffeine caches: bounded, entries trusted for a time after they were written, and
 * maintained (expiry, eviction) on the thread that uses them. Caffeine's default runs that
 * maintenance on {@code ForkJoinPool.commonPool()}, waking a pool thread after writes: on a mount
 * creating small files those threads took 7% of its CPU, and the wake-ups more. The maintenance
 * itself is a few amortized steps per call.
 */
final class Caches {
  private Caches() {}

  static <K, V> Cache<K, V> expiring(Duration ttl, long maxEntries) {
    return Caffeine.newBuilder().expireAfterWrite(ttl).maximumSize(maxEntries).executor(Runnable::run).build();
  }
}
