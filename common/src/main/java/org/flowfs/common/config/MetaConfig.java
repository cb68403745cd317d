package org.flowfs.common.config;

import java.net.InetSocketAddress;
import java.nio.file.Path;

/**
 * The metadata server.
 *
 * @param dir where the MapDB file lives; needed only by the metadata server itself
 * @param threads size of the pool that runs read-only operations
 * @param commitBatch most operations one group commit holds
 * @param precreateBatch datafile handles fetched from an I/O server per refill of its pool
 * @param precreateLowWater refill a pool when it holds fewer handles than this
 * @param syncInterval zero: every metadata change is on disk before it is acknowledged; otherwise
 *     it is acknowledged once committed to the operating system (a crash of the metadata server
 *     loses nothing) and reaches the disk within this interval, or at a client's fsync
 */
public record MetaConfig(
    InetSocketAddress address, Path dir, int threads, int commitBatch, int precreateBatch, int precreateLowWater,
    java.time.Duration syncInterval) {
  static MetaConfig from(ConfigSource s) {
    return new MetaConfig(
        s.address("meta.address", null),
        s.path("meta.dir", null, false),
        s.integer("meta.threads", 2, 1, 256),
        s.integer("meta.commit-batch", 512, 1, 65536),
        s.integer("meta.precreate-batch", 256, 1, 65536),
        s.integer("meta.precreate-low-water", 64, 0, 65536),
        s.duration("meta.sync-interval", java.time.Duration.ofSeconds(1), java.time.Duration.ZERO, java.time.Duration.ofMinutes(5)));
  }

  /** The storage directory, or a config error when this process needs it and it is missing. */
  public Path requireDir() {
    if (dir == null) {
      throw new ConfigException("key 'meta.dir' is required to run the metadata server");
    }
    return dir;
  }
}
