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
 * @param dirLeaseTerm how long a client's lease on a directory lasts without a batch from it
 *     (other clients' requests there wait at most that long for a holder that went away)
 * @param dirLeaseGrace how long the files an expired lease reserved and did not use wait for
 *     their holder to make them after all (its batch was lost) before their datafiles are removed
 * @param lockTerm how long the {@code flock} locks a client holds last without word from it (it
 *     renews them every third of this while it holds any): a client that went away loses its
 *     locks after this long; also how long a restarted metadata server that had locks granted
 *     waits for their holders to claim them again before it grants new ones
 */
public record MetaConfig(
    InetSocketAddress address, Path dir, int threads, int commitBatch, int precreateBatch, int precreateLowWater,
    java.time.Duration syncInterval, java.time.Duration dirLeaseTerm, java.time.Duration dirLeaseGrace,
    java.time.Duration lockTerm) {
  static MetaConfig from(ConfigSource s) {
    return new MetaConfig(
        s.address("meta.address", null),
        s.path("meta.dir", null, false),
        s.integer("meta.threads", 2, 1, 256),
        s.integer("meta.commit-batch", 512, 1, 65536),
        s.integer("meta.precreate-batch", 256, 1, 65536),
        s.integer("meta.precreate-low-water", 64, 0, 65536),
        s.duration("meta.sync-interval", java.time.Duration.ofSeconds(1), java.time.Duration.ZERO, java.time.Duration.ofMinutes(5)),
        s.duration("meta.dir-lease-term", java.time.Duration.ofSeconds(3), java.time.Duration.ofMillis(100),
            java.time.Duration.ofMinutes(5)),
        s.duration("meta.dir-lease-grace", java.time.Duration.ofMinutes(2), java.time.Duration.ofSeconds(1),
            java.time.Duration.ofHours(1)),
        s.duration("meta.lock-term", java.time.Duration.ofSeconds(15), java.time.Duration.ofSeconds(1),
            java.time.Duration.ofMinutes(10)));
  }

  /** The storage directory, or a config error when this process needs it and it is missing. */
  public Path requireDir() {
    if (dir == null) {
      throw new ConfigException("key 'meta.dir' is required to run the metadata server");
    }
    return dir;
  }
}
