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
 */
public record MetaConfig(
    InetSocketAddress address, Path dir, int threads, int commitBatch, int precreateBatch, int precreateLowWater) {
  static MetaConfig from(ConfigSource s) {
    return new MetaConfig(
        s.address("meta.address", null),
        s.path("meta.dir", null, false),
        s.integer("meta.threads", 2, 1, 256),
        s.integer("meta.commit-batch", 512, 1, 65536),
        s.integer("meta.precreate-batch", 256, 1, 65536),
        s.integer("meta.precreate-low-water", 64, 0, 65536));
  }

  /** The storage directory, or a config error when this process needs it and it is missing. */
  public Path requireDir() {
    if (dir == null) {
      throw new ConfigException("key 'meta.dir' is required to run the metadata server");
    }
    return dir;
  }
}
