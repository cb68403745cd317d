package org.flowfs.meta;

import java.util.Collections;
import java.util.EnumMap;
import java.util.NavigableMap;
import org.mapdb.Atomic;
import org.mapdb.BTreeMap;
import org.mapdb.DB;
import org.mapdb.Serializer;

/**
 * {@link Tables} as MapDB B-trees and atomic longs in one DB: {@code objects}, {@code doomed}
 * and {@code heads} (long keys), {@code entries} and {@code xattrs} ({@link Serializer#BYTE_ARRAY}
 * keys, which MapDB compares as unsigned bytes), and {@code counter.*}. A {@code format} record
 * names the layout of the tables and records; a file of another format is refused. A table a
 * later version added ({@code heads}) is created empty when an older store opens: that adds to
 * the format, it does not change it.
 *
 * <p>Heads keep their values outside the B-tree nodes: a node holds up to 32 entries, and values
 * of up to a MiB inside it would be rewritten, all of them, whenever one entry of the node
 * changes. Heads do not go through the record cache.
 *
 * <p>Object records go through a {@link RecordCache}, since every MapDB read of committed data is
 * a file read plus a B-tree node decode. The counters live in memory and reach the DB once per
 * commit ({@link #flushCounters()}), not three times per create. After a rollback call
 * {@link #rolledBack()}.
 *
 * <p>Thread safety as {@link Tables}.
 */
final class MapDbTables implements Tables {
  /** The layout of tables and records this class writes. */
  static final long FORMAT = 1;
  /** Records per cache generation: up to about twice as many are cached. */
  static final int CACHE_GENERATION = 50_000;

  private final BTreeMap<Long, byte[]> objects;
  private final NavigableMap<byte[], byte[]> entries;
  private final NavigableMap<byte[], byte[]> xattrs;
  private final NavigableMap<Long, byte[]> doomed;
  private final NavigableMap<Long, byte[]> heads;
  private final EnumMap<Counter, Atomic.Long> counters = new EnumMap<>(Counter.class);
  private final long[] counterValues = new long[Counter.values().length];
  private boolean countersDirty; // the mirror is ahead of the DB
  private final RecordCache cache = new RecordCache(CACHE_GENERATION);

  MapDbTables(DB db) {
    if (db.exists("format")) {
      long format = db.atomicLong("format").open().get();
      if (format != FORMAT) {
        throw new IllegalStateException("metadata store format " + format + ", this version reads " + FORMAT);
      }
    } else {
      db.atomicLong("format", FORMAT).create();
    }
    objects = db.treeMap("objects", Serializer.LONG, Serializer.BYTE_ARRAY).createOrOpen();
    entries = db.treeMap("entries", Serializer.BYTE_ARRAY, Serializer.BYTE_ARRAY).createOrOpen();
    xattrs = db.treeMap("xattrs", Serializer.BYTE_ARRAY, Serializer.BYTE_ARRAY).createOrOpen();
    doomed = db.treeMap("doomed", Serializer.LONG, Serializer.BYTE_ARRAY).createOrOpen();
    heads = db.treeMap("heads", Serializer.LONG, Serializer.BYTE_ARRAY).valuesOutsideNodesEnable().createOrOpen();
    for (Counter c : Counter.values()) {
      counters.put(c, db.atomicLong("counter." + c.name().toLowerCase()).createOrOpen());
    }
    reloadCounters();
  }

  /**
   * Writes the counters into the DB if they changed: call just before every commit (the writer
   * does, with no mutation running), so a commit holds the counters of exactly its mutations.
   */
  void flushCounters() {
    if (countersDirty) {
      for (Counter c : Counter.values()) {
        counters.get(c).set(counterValues[c.ordinal()]);
      }
      countersDirty = false;
    }
  }

  /** The DB went back to its last commit: forget what the cache and the mirror hold. */
  void rolledBack() {
    cache.clear();
    reloadCounters();
  }

  private void reloadCounters() {
    for (Counter c : Counter.values()) {
      counterValues[c.ordinal()] = counters.get(c).get();
    }
    countersDirty = false;
  }

  @Override
  public byte[] object(long handle) {
    byte[] v = cache.get(handle);
    if (v == null) {
      v = objects.get(handle);
      if (v != null) {
        cache.fill(handle, v);
      }
    }
    return v;
  }

  @Override
  public void putObject(long handle, byte[] record) {
    objects.put(handle, record);
    cache.put(handle, record);
  }

  @Override
  public void removeObject(long handle) {
    objects.remove(handle);
    cache.remove(handle);
  }

  @Override
  public NavigableMap<Long, byte[]> objects() {
    return Collections.unmodifiableNavigableMap(objects);
  }

  @Override
  public NavigableMap<byte[], byte[]> entries() {
    return entries;
  }

  @Override
  public NavigableMap<byte[], byte[]> xattrs() {
    return xattrs;
  }

  @Override
  public NavigableMap<Long, byte[]> doomed() {
    return doomed;
  }

  @Override
  public NavigableMap<Long, byte[]> heads() {
    return heads;
  }

  @Override
  public long get(Counter c) {
    return counterValues[c.ordinal()];
  }

  @Override
  public void set(Counter c, long value) {
    counterValues[c.ordinal()] = value;
    countersDirty = true;
  }
}
