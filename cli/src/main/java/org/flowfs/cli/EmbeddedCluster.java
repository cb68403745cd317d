package org.flowfs.cli;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.flowfs.common.config.ConfigException;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.io.IoServer;
import org.flowfs.meta.MetaServer;

/**
 * One metadata server and N I/O servers in this JVM, each on its own loopback port and storage
 * directory: what {@code flowfs up} runs, and the fixture of in-process tests. Closing stops
 * every server, in reverse order of start.
 */
public final class EmbeddedCluster implements AutoCloseable {
  private final FlowFsConfig fileConfig;
  private final NetRuntime net;
  private final List<IoServer> io = new ArrayList<>();
  private final List<InetSocketAddress> ioAddresses = new ArrayList<>();
  private MetaServer meta;
  private FlowFsConfig bound;

  private EmbeddedCluster(FlowFsConfig fileConfig) {
    this.fileConfig = fileConfig;
    this.net = NetRuntime.create("server-net", 2);
  }

  /** Starts every server of {@code config}; ports 0 become free ports. */
  public static EmbeddedCluster start(FlowFsConfig config) throws IOException {
    EmbeddedCluster c = new EmbeddedCluster(config);
    try {
      for (int i = 0; i < config.ioServers().size(); i++) {
        IoServer s = IoServer.open(config, i, c.net);
        c.io.add(s);
        c.ioAddresses.add(s.start());
      }
      // the metadata server reaches the I/O servers where they really listen
      FlowFsConfig withIo = config.withAddresses(config.meta().address(), c.ioAddresses);
      c.meta = MetaServer.open(withIo, c.net);
      InetSocketAddress m = c.meta.start();
      c.bound = withIo.withAddresses(m, c.ioAddresses);
      return c;
    } catch (IOException | RuntimeException e) {
      c.close();
      throw e;
    }
  }

  /** Writes a new embedded config into {@code dataDir}/flowfs.conf and starts it. */
  public static EmbeddedCluster create(Path dataDir, int ioServers, int port) throws IOException {
    Path conf = dataDir.resolve("flowfs.conf");
    Files.createDirectories(dataDir);
    writeConfig(conf, dataDir, ioServers, port);
    return start(FlowFsConfig.load(conf));
  }

  /** The config with the addresses the servers really listen on. */
  public FlowFsConfig config() {
    return bound;
  }

  public MetaServer meta() {
    return meta;
  }

  public IoServer io(int i) {
    return io.get(i);
  }

  /** The text of an embedded config: loopback ports from {@code port} on (0: free ports). */
  public static String configText(Path dataDir, int ioServers, int port) {
    if (ioServers < 1 || ioServers > 256) {
      throw new ConfigException("the number of I/O servers must be 1..256, not " + ioServers);
    }
    byte[] secret = new byte[24];
    new SecureRandom().nextBytes(secret);
    StringBuilder sb = new StringBuilder();
    sb.append("# FlowFS embedded file system, written by 'flowfs up'.\n");
    sb.append("fs.name = flowfs\n");
    sb.append("fs.secret = ").append(HexFormat.of().formatHex(secret)).append('\n');
    sb.append("meta.address = 127.0.0.1:").append(port).append('\n');
    sb.append("meta.dir = ").append(dataDir.resolve("meta")).append('\n');
    for (int i = 0; i < ioServers; i++) {
      sb.append("io.").append(i).append(".address = 127.0.0.1:").append(port == 0 ? 0 : port + 1 + i).append('\n');
      sb.append("io.").append(i).append(".dir = ").append(dataDir.resolve("io" + i)).append('\n');
    }
    return sb.toString();
  }

  static void writeConfig(Path conf, Path dataDir, int ioServers, int port) throws IOException {
    Files.writeString(conf, configText(dataDir, ioServers, port), StandardCharsets.UTF_8);
    try {
      Files.setPosixFilePermissions(conf, PosixFilePermissions.fromString("rw-------"));
    } catch (UnsupportedOperationException e) {
      // not a POSIX file system: the secret is as safe as the directory
    }
  }

  @Override
  public void close() {
    if (meta != null) {
      meta.close();
    }
    for (int i = io.size() - 1; i >= 0; i--) {
      io.get(i).close();
    }
    net.close();
  }
}
