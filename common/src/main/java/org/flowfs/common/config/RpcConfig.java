package org.flowfs.common.config;

import java.time.Duration;

/**
 * Messaging between processes.
 *
 * @param timeout how long a caller waits for any answer before the operation fails with EIO
 * @param connectTimeout how long a connection attempt may take, the membership handshake included
 * @param maxFrame the largest frame a peer may send; larger ones close the connection
 * @param connections connections a client keeps to each server
 * @param authTimeout how long a server waits for a new connection to prove membership before it
 *     closes it
 * @param secret the file system's shared secret ({@code fs.secret}), proved by both ends of every
 *     connection before any request
 */
public record RpcConfig(Duration timeout, Duration connectTimeout, long maxFrame, int connections, Duration authTimeout,
    Secret secret) {
  public RpcConfig {
    if (secret == null) {
      throw new IllegalArgumentException("messaging needs the file system's secret");
    }
  }

  static RpcConfig from(ConfigSource s, String secret) {
    return new RpcConfig(
        s.duration("rpc.timeout", Duration.ofSeconds(30), Duration.ofMillis(100), Duration.ofHours(1)),
        s.duration("rpc.connect-timeout", Duration.ofSeconds(5), Duration.ofMillis(100), Duration.ofMinutes(5)),
        s.size("rpc.max-frame", 16L << 20, 1L << 20, 1L << 30),
        s.integer("rpc.connections", 2, 1, 64),
        s.duration("rpc.auth-timeout", Duration.ofSeconds(10), Duration.ofMillis(100), Duration.ofMinutes(5)),
        // a missing secret is reported by FsConfig; this stand-in never leaves a refused config
        Secret.of(secret == null ? "missing" : secret));
  }
}
