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
 * @param loopbackCongestion the TCP congestion control of connections between processes on the
 *     same host; empty: the kernel's default
 */
public record RpcConfig(Duration timeout, Duration connectTimeout, long maxFrame, int connections, Duration authTimeout,
    Secret secret, String loopbackCongestion) {
  /** Connections between processes on one host use this congestion control unless configured. */
  public static final String LOOPBACK_CONGESTION = "cubic";

  public RpcConfig {
    if (secret == null) {
      throw new IllegalArgumentException("messaging needs the file system's secret");
    }
    if (loopbackCongestion == null) {
      throw new IllegalArgumentException("a loopback congestion control, or empty for the kernel's default");
    }
  }

  /** With the default loopback congestion control. */
  public RpcConfig(Duration timeout, Duration connectTimeout, long maxFrame, int connections, Duration authTimeout,
      Secret secret) {
    this(timeout, connectTimeout, maxFrame, connections, authTimeout, secret, LOOPBACK_CONGESTION);
  }

  static RpcConfig from(ConfigSource s, String secret) {
    return new RpcConfig(
        s.duration("rpc.timeout", Duration.ofSeconds(30), Duration.ofMillis(100), Duration.ofHours(1)),
        s.duration("rpc.connect-timeout", Duration.ofSeconds(5), Duration.ofMillis(100), Duration.ofMinutes(5)),
        s.size("rpc.max-frame", 16L << 20, 1L << 20, 1L << 30),
        s.integer("rpc.connections", 2, 1, 64),
        s.duration("rpc.auth-timeout", Duration.ofSeconds(10), Duration.ofMillis(100), Duration.ofMinutes(5)),
        // a missing secret is reported by FsConfig; this stand-in never leaves a refused config
        Secret.of(secret == null ? "missing" : secret),
        loopbackCongestion(s.string("rpc.loopback-congestion", LOOPBACK_CONGESTION, NAME,
            "a congestion control's name (as in net.ipv4.tcp_available_congestion_control) or 'default'")));
  }

  private static final java.util.regex.Pattern NAME = java.util.regex.Pattern.compile("[a-z0-9_]{1,15}");

  private static String loopbackCongestion(String name) {
    return name.equals("default") ? "" : name;
  }
}
