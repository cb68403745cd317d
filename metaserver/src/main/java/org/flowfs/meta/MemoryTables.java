package org.flowfs.meta;

import java.util.Arrays;
import java.util.EnumMap;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * {@link Tables} in tree maps, byte-array keys compared as unsigned bytes. Concurrent reads are
 * safe (tree maps do not change on reads); a mutation needs the store's exclusive lock.
 */
final class MemoryTables implements Tables {
  private final NavigableMap<Long, byte[]> objects = new TreeMap<>();
  private final NavigableMap<byte[], byte[]> entries = new TreeMap<>(Arrays::compareUnsigned);
  private final NavigableMap<byte[], byte[]> xattrs = new TreeMap<>(Arrays::compareUnsigned);
  private final NavigableMap<Long, byte[]> doomed = new TreeMap<>();
  private final NavigableMap<Long, byte[]> heads = new TreeMap<>();
  private final EnumMap<Counter, Long> counters = new EnumMap<>(Counter.class);

  @Override
  public byte[] object(long handle) {
    return objects.get(handle);
  }

  @Override
  public void putObject(long handle, byte[] record) {
    objects.put(handle, record);
  }

  @Override
  public void removeObject(long handle) {
    objects.remove(handle);
  }

  @Override
  public NavigableMap<Long, byte[]> objects() {
    return objects;
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
    return counters.getOrDefault(c, 0L);
  }

  @Override
  public void set(Counter c, long value) {
    counters.put(c, value);
  }
}
