package org.flowfs.it;

import java.nio.file.Files;
import java.nio.file.Path;
import org.flowfs.cli.EmbeddedCluster;
import org.flowfs.client.FileSystemClient;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.fuse.FuseMount;

/** Every server and the mount in this JVM: the shape of {@code flowfs up}. */
final class EmbeddedDeployment implements Deployment {
  private final Path data;
  private final Path mnt;
  private final int ioServers;
  private EmbeddedCluster cluster;
  private NetRuntime net;
  private FileSystemClient client;
  private FuseMount mount;

  EmbeddedDeployment(Path root, int ioServers) throws Exception {
    this(root, ioServers, "");
  }

  /** With {@code extraConfig} lines appended to the generated config. */
  EmbeddedDeployment(Path root, int ioServers, String extraConfig) throws Exception {
    this.data = root.resolve("data");
    this.mnt = root.resolve("mnt");
    this.ioServers = ioServers;
    Files.createDirectories(mnt);
    Files.createDirectories(data);
    Files.writeString(data.resolve("flowfs.conf"), EmbeddedCluster.configText(data, ioServers, 0) + extraConfig);
    Reaper.track(this);
    start();
  }

  @Override
  public void start() throws Exception {
    cluster = EmbeddedCluster.start(FlowFsConfig.load(data.resolve("flowfs.conf")));
    net = NetRuntime.create("it-client", 2);
    client = new FileSystemClient(cluster.config(), net);
    mount = FuseMount.mount(client, mnt, "flowfs-it");
  }

  @Override
  public void stop() {
    if (mount != null) {
      mount.close();
      mount = null;
    }
    if (client != null) {
      client.close();
      client = null;
    }
    if (net != null) {
      net.close();
      net = null;
    }
    if (cluster != null) {
      cluster.close();
      cluster = null;
    }
  }

  FileSystemClient client() {
    return client;
  }

  /** A counter of the mount's client ({@code flowfs stats}). */
  long counter(String name) {
    return client.counters().get(name);
  }

  /** The mount's counters whose names start with {@code prefix} (for a failing test's message). */
  String counters(String prefix) {
    return new java.util.TreeMap<>(client.counters().snapshot()).entrySet().stream()
        .filter(e -> e.getKey().startsWith(prefix)).map(e -> e.getKey() + "=" + e.getValue())
        .collect(java.util.stream.Collectors.joining(" "));
  }

  EmbeddedCluster cluster() {
    return cluster;
  }

  @Override
  public Path mountPoint() {
    return mnt;
  }

  @Override
  public Path dataDir() {
    return data;
  }

  @Override
  public int ioServers() {
    return ioServers;
  }

  @Override
  public void close() {
    stop();
    Reaper.untrack(this);
  }
}
