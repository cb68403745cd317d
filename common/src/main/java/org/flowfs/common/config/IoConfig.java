package org.flowfs.common.config;

/**
 * Settings every I/O server shares.
 *
 * @param threads size of the storage pool ({@code io-store-N}) that does disk work off the event loops
 * @param openFiles most datafiles an I/O server keeps open at once
 */
public record IoConfig(int threads, int openFiles) {
  static IoConfig from(ConfigSource s) {
    return new IoConfig(s.integer("io.threads", 4, 1, 256), s.integer("io.open-files", 1024, 16, 1 << 20));
  }
}
