package org.flowfs.it;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.util.ArrayList;
import java.util.List;
import org.flowfs.cli.EmbeddedCluster;
import org.flowfs.cli.LoopbackPorts;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.fuse.FuseMount;
import org.flowfs.fuse.MountTable;

/**
 * The shape systemd runs: {@code flowfs metaserver}, one {@code flowfs ioserver --id N} per I/O
 * server and {@code flowfs mount}, each its own process, sharing one config file.
 */
final class ProcessDeployment implements Deployment {
  private final Path data;
  private final Path mnt;
  private final Path conf;
  private final int ioServers;
  private final FlowFsConfig config;
  /** The user the I/O servers run as (null: this process's), and the classpath they may read. */
  private final String ioUser;
  private final String ioClasspath;
  private ServerProcess meta;
  private final List<ServerProcess> io = new ArrayList<>();
  private ServerProcess mount;
  /** Further mounts of the file system ({@link #mountAt}), each its own process, by mount point. */
  private final java.util.Map<Path, ServerProcess> others = new java.util.LinkedHashMap<>();

  ProcessDeployment(Path root, int ioServers) throws Exception {
    this(root, ioServers, "");
  }

  /** With {@code extraConfig} lines appended to the generated config. */
  ProcessDeployment(Path root, int ioServers, String extraConfig) throws Exception {
    this(root, ioServers, extraConfig, null);
  }

  /**
   * With the I/O servers run as {@code ioUser} (this process must be root), as the shipped units
   * run them as their own user while the mount runs as root: their directories are that user's.
   */
  ProcessDeployment(Path root, int ioServers, String extraConfig, String ioUser) throws Exception {
    this.ioUser = ioUser;
    this.data = root.resolve("data");
    this.mnt = root.resolve("mnt");
    this.ioServers = ioServers;
    Files.createDirectories(mnt);
    Files.createDirectories(data);
    this.conf = data.resolve("flowfs.conf");
    // fixed ports, so every process of the file system finds the others from the file
    String text = EmbeddedCluster.configText(data, ioServers, LoopbackPorts.block(ioServers + 1));
    Files.writeString(conf, text + extraConfig);
    this.config = FlowFsConfig.load(conf);
    if (ioUser != null) {
      ioClasspath = ServerProcess.readableClasspath(root.resolve("classpath"));
      UserPrincipalLookupService users = root.getFileSystem().getUserPrincipalLookupService();
      for (Path p : List.of(root, data)) {
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
      }
      for (int i = 0; i < ioServers; i++) {
        Path dir = Files.createDirectories(config.ioServer(i).dir());
        Files.setOwner(dir, users.lookupPrincipalByName(ioUser));
      }
    } else {
      ioClasspath = null;
    }
    Reaper.track(this);
    start();
  }

  Path config() {
    return conf;
  }

  /**
   * Starts every process as systemd's units do: the servers at once, none waiting for another
   * (the metadata server finds the I/O servers when they listen), the mount once the metadata
   * server listens; returns when the mount is up and every I/O server listens.
   */
  @Override
  public void start() throws Exception {
    Path logs = data.resolve("logs");
    for (int i = 0; i < ioServers; i++) {
      io.add(startIo(i));
    }
    startMeta();
    mount = ServerProcess.start("mount", logs, List.of("mount", "--config", conf.toString(), mnt.toString()));
    for (int i = 0; i < ioServers; i++) {
      awaitIo(i);
    }
    mount.awaitReady(() -> FuseMount.TYPE.equals(MountTable.typeAt(mnt)), 60);
  }

  void startMeta() throws IOException {
    meta = ServerProcess.start("metaserver", data.resolve("logs"), List.of("metaserver", "--config", conf.toString()));
    meta.awaitReady(() -> ServerProcess.listening(config.meta().address()), 60);
  }

  ServerProcess meta() {
    return meta;
  }

  ServerProcess io(int i) {
    return io.get(i);
  }

  /** Starts I/O server {@code i} again (after it stopped or was killed). */
  void restartIo(int i) throws IOException {
    io.set(i, startIo(i));
    awaitIo(i);
  }

  /** Waits until I/O server {@code i} listens. */
  private void awaitIo(int i) throws IOException {
    InetSocketAddress a = config.ioServer(i).address();
    io.get(i).awaitReady(() -> ServerProcess.listening(a), 60);
  }

  private ServerProcess startIo(int i) throws IOException {
    List<String> args = List.of("ioserver", "--config", conf.toString(), "--id", String.valueOf(i));
    Path logs = data.resolve("logs");
    return ioUser == null ? ServerProcess.start("ioserver " + i, logs, args)
        : ServerProcess.startAs(ioUser, ioClasspath, "ioserver " + i, logs, args);
  }

  ServerProcess mount() {
    return mount;
  }

  /**
   * Mounts the file system once more at {@code dir} (created if missing), by a {@code flowfs
   * mount} process of its own, as another node would; {@link #stop} unmounts it too.
   */
  ServerProcess mountAt(Path dir) throws IOException {
    Files.createDirectories(dir);
    ServerProcess p = ServerProcess.start("mount " + dir.getFileName(), data.resolve("logs"),
        List.of("mount", "--config", conf.toString(), dir.toString()));
    others.put(dir, p);
    p.awaitReady(() -> FuseMount.TYPE.equals(MountTable.typeAt(dir)), 60);
    return p;
  }

  /** The metadata server's process, then the I/O servers'. */
  List<ServerProcess> servers() {
    List<ServerProcess> all = new ArrayList<>();
    all.add(meta);
    all.addAll(io);
    return all;
  }

  @Override
  public void stop() {
    if (mount != null) {
      mount.stop(30);
      mount = null;
    }
    others.forEach((dir, p) -> p.stop(30));
    for (Path m : concat(mnt, others.keySet())) {
      if (FuseMount.TYPE.equals(MountTable.typeAt(m))) {
        Sh.run(data, "fusermount -u -z '" + m + "' || umount -l '" + m + "'");
      }
    }
    others.clear();
    if (meta != null) {
      meta.stop(20);
      meta = null;
    }
    for (ServerProcess p : io) {
      p.stop(20);
    }
    io.clear();
  }

  private static List<Path> concat(Path first, java.util.Collection<Path> rest) {
    List<Path> all = new ArrayList<>(rest);
    all.add(0, first);
    return all;
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
