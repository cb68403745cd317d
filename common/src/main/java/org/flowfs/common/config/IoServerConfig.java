package org.flowfs.common.config;

import java.net.InetSocketAddress;
import java.nio.file.Path;

/** One I/O server ({@code io.N.*}): its address and, for the server itself, its storage directory. */
public record IoServerConfig(int id, InetSocketAddress address, Path dir) {
  static IoServerConfig from(ConfigSource s, int id) {
    return new IoServerConfig(
        id, s.address("io." + id + ".address", null), s.path("io." + id + ".dir", null, false));
  }

  public Path requireDir() {
    if (dir == null) {
      throw new ConfigException("key 'io." + id + ".dir' is required to run I/O server " + id);
    }
    return dir;
  }
}
