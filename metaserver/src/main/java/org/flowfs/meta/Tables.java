package org.flowfs.meta;

import java.util.NavigableMap;

/**
 * The storage {@link Namespace} keeps its state in: objects, four ordered tables and three
 * counters. The MapDB store backs them with B-trees in one transactional file (and a cache of
 * object records), the memory store with tree maps.
 *
 * <ul>
 *   <li>objects: handle to an {@link InodeCodec} record, by {@link #object} and friends;
 *       {@link #objects()} is for visiting all in handle order.
 *   <li>{@link #entries()}: {@link Keys} key (parent handle, name) to {@link Keys#entry} value.
 *   <li>{@link #xattrs()}: {@link Keys} key (handle, attribute name) to the value.
 *   <li>{@link #doomed()}: the handle of a file whose last name went to its datafiles' handles
 *       (8 bytes each), until the I/O servers removed them: the durable removal queue.
 *   <li>{@link #heads()}: the handle of a regular file to its head, its first bytes up to the
 *       last one written there or where a truncate cut it, never past its layout's
 *       {@link org.flowfs.common.Layout#headBytes()}; absent when it has none.
 * </ul>
 *
 * <p>Byte-array keys compare as unsigned bytes. Values put are never changed afterwards, by
 * either side. Thread safety: the owning store runs mutations alone; reads may run concurrently
 * with each other, never with a mutation.
 */
interface Tables {
  /** The record of object {@code handle}, or null. */
  byte[] object(long handle);

  void putObject(long handle, byte[] record);

  void removeObject(long handle);

  /** Every object in handle order; read only. */
  NavigableMap<Long, byte[]> objects();

  NavigableMap<byte[], byte[]> entries();

  NavigableMap<byte[], byte[]> xattrs();

  NavigableMap<Long, byte[]> doomed();

  NavigableMap<Long, byte[]> heads();

  long get(Counter c);

  void set(Counter c, long value);

  /** The counters a namespace keeps beside its tables. */
  enum Counter {
    /** The local part of the next metadata handle to hand out. */
    NEXT_HANDLE,
    OBJECTS,
    DIRECTORIES
  }
}
