package org.flowfs.meta;

import java.util.concurrent.ConcurrentHashMap;

/**
 * A bounded cache of object records in front of the MapDB objects table, whose reads go to the
 * file and deserialize a B-tree node per level. Two generations approximate LRU at no cost per
 * hit: lookups fill the young generation; when it is full it becomes the old one (the previous
 * old one is dropped), and a hit in the old generation moves the record back to the young.
 *
 * <p>Thread safe for its own state. Coherence is the caller's: {@link #put}, {@link #remove} and
 * {@link #clear} run under the store's write lock, so a reader filling the cache with what it
 * read under the read lock can never put back a record a mutation has replaced.
 */
final class RecordCache {
  private final int generation;
  private volatile ConcurrentHashMap<Long, byte[]> young = new ConcurrentHashMap<>();
  private volatile ConcurrentHashMap<Long, byte[]> old = new ConcurrentHashMap<>();

  /** Holds at most about {@code 2 * generation} records. */
  RecordCache(int generation) {
    this.generation = generation;
  }

  byte[] get(long handle) {
    byte[] v = young.get(handle);
    if (v == null) {
      v = old.get(handle);
      if (v != null) {
        fill(handle, v);
      }
    }
    return v;
  }

  /** A record read from the table (under the read lock or the write lock). */
  void fill(long handle, byte[] record) {
    ConcurrentHashMap<Long, byte[]> y = young;
    if (y.size() >= generation) {
      synchronized (this) {
        if (young == y) {
          old = y;
          young = new ConcurrentHashMap<>();
        }
      }
    }
    young.put(handle, record);
  }

  /** A record written by a mutation (write lock held). */
  void put(long handle, byte[] record) {
    old.remove(handle);
    fill(handle, record);
  }

  /** A record deleted by a mutation (write lock held). */
  void remove(long handle) {
    young.remove(handle);
    old.remove(handle);
  }

  /** Forgets everything, after a rollback (write lock held). */
  synchronized void clear() {
    young = new ConcurrentHashMap<>();
    old = new ConcurrentHashMap<>();
  }
}
