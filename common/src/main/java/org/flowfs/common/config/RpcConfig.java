package org.flowfs.common.config;

import java.time.Duration;

/**
 * Messaging between processes.
 *
 * @param timeout how long a caller waits for any answer before the operation fails with EIO
 * @param connectTimeout how long a connection attempt may take
 * @param maxFrame the largest frame a peer may send; larger ones close the connection
 * @param connections connections a client keeps to each server
 */
public record RpcConfig(Duration timeout, Duration connectTimeout, long maxFrame, int connections) {
  static RpcConfig from(ConfigSource s) {
    return new RpcConfig(
        s.duration("rpc.timeout", Duration.ofSeconds(30), Duration.ofMillis(100), Duration.ofHours(1)),
        s.duration("rpc.connect-timeout", Duration.ofSeconds(5), Duration.ofMillis(100), Duration.ofMinutes(5)),
        s.size("rpc.max-frame", 16L << 20, 1L << 20, 1L << 30),
        s.integer("rpc.connections", 2, 1, 64));
  }
}
