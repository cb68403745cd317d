package org.flowfs.client;

import com.github.benmanes.caffeine.cache.Cache;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.flowfs.common.Handle;

/**
 * Decides when a directory is being walked name by name ({@code ls -l}, {@code stat *}, {@code
 * find}, a build tree) so the client lists it whole, with attributes, in a few pages instead of
 * one lookup per name: after {@link #HOT} names of one directory were looked up on the server
 * within an entry timeout, the directory is listed once per timeout (up to {@link #MAX_ENTRIES}
 * entries). Only lookups that found a name count: creating files, whose lookups find nothing,
 * does not make a directory hot.
 *
 * <p>What a listing caches is what the lookups would have cached, attributes and names trusted
 * for the same timeouts, so consistency is unchanged. Thread safe.
 */
final class StatAhead {
  /** Lookups that found a name, within a timeout, that make its directory worth listing. */
  static final int HOT = 8;
  /** The most entries one listing caches (pages of a larger directory are left to lookups). */
  static final int MAX_ENTRIES = 65536;

  private final Cache<Handle, AtomicInteger> found;
  private final Cache<Handle, Boolean> listed;

  StatAhead(Duration entryTimeout, int maxDirs) {
    this.found = Caches.expiring(entryTimeout, maxDirs);
    this.listed = Caches.expiring(entryTimeout, maxDirs);
  }

  /**
   * A lookup in {@code dir} found a name the caches did not have. True (for one caller) when the
   * directory should now be listed: it is hot and was not listed within the timeout.
   */
  boolean foundOnServer(Handle dir) {
    if (found.get(dir, d -> new AtomicInteger()).incrementAndGet() < HOT) {
      return false;
    }
    found.invalidate(dir);
    return listed.asMap().putIfAbsent(dir, Boolean.TRUE) == null;
  }

  /** Forgets that {@code dir} was listed (the listing failed). */
  void listingFailed(Handle dir) {
    listed.invalidate(dir);
  }
}
