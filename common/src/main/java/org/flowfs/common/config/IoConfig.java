package org.flowfs.common.config;

/**
 * Settings every I/O server shares.
 *
 * @param threads size of the storage pool ({@code io-store-N}) that does disk work off the event loops
 * @param openFiles most datafiles an I/O server keeps open at once
 * @param writeback bytes written to a datafile after which the I/O server starts putting them on
 *     disk in the background, so that a writer's fsync finds little left to write (0: only when
 *     asked, at fsync)
 * @param sendfile whether flows that read send datafile bytes from the page cache to the socket
 *     ({@code sendfile}) rather than reading them into a buffer on the storage pool first: no copy
 *     through user space, but the network thread then waits for pages not yet in memory
 * @param directWrite pieces of a write at least this large go to the datafile past the page cache
 *     ({@code O_DIRECT}, their block-aligned part); 0: every write through the page cache
 * @param directRead a flow's read of at least this many bytes for a client that shares memory with
 *     the server goes from the device straight into that memory ({@code O_DIRECT}), when aligned;
 *     0: every read through the page cache; {@link #DIRECT_READ_AUTO} (the default, {@code auto}):
 *     reads of at least {@link #DIRECT_READ_AUTO_MIN} bytes, and only into shared memory in huge
 *     pages ({@code node.shm-dir} on a hugetlbfs), where they measured faster than the page cache;
 *     into memory of 4 KiB pages they measured slower
 * @param readsAnywhere whether a read flow's bulk reads (a buffer's worth from the datafiles,
 *     copied into the client's memory) run on a pool of their own ({@code io-read-N}) on every
 *     CPU, rather than on the storage pool, which stays on {@code node.service-cpus}
 */
public record IoConfig(int threads, int openFiles, long writeback, boolean sendfile, long directWrite, long directRead,
    boolean readsAnywhere) {
  /** {@code io.direct-read = auto}: large reads straight into shared memory in huge pages only. */
  public static final long DIRECT_READ_AUTO = ConfigSource.AUTO;
  /** The smallest read that {@code auto} sends past the page cache. */
  public static final long DIRECT_READ_AUTO_MIN = 128L << 10;

  static IoConfig from(ConfigSource s) {
    return new IoConfig(s.integer("io.threads", 4, 1, 256), s.integer("io.open-files", 1024, 16, 1 << 20),
        s.size("io.writeback", 8L << 20, 0, 1L << 40), s.bool("io.sendfile", true),
        s.size("io.direct-write", 128L << 10, 0, 1L << 30), s.sizeOrAuto("io.direct-read", DIRECT_READ_AUTO, 0, 1L << 30),
        s.bool("io.reads-anywhere", true));
  }
}
