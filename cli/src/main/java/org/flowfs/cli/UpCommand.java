package org.flowfs.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.flowfs.common.config.ConfigException;
import org.flowfs.common.config.FlowFsConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * The embedded file system: one metadata server and N I/O servers in this JVM, each on its own
 * loopback port with its own storage directory under one data directory, mounted at a directory.
 * The first run writes {@code DATA/flowfs.conf}; later runs reuse it and find the same files.
 */
@Command(name = "up", mixinStandardHelpOptions = true,
    description = "Start a whole FlowFS in one process (1 metadata server, N I/O servers) and mount it "
        + "in the foreground. Ctrl-C or SIGTERM unmounts and stops it; run again to find the same files.")
final class UpCommand implements Callable<Integer> {
  static final String DEFAULT_MOUNT = "/mnt/flowfs";
  static final String DEFAULT_DATA = "/var/lib/flowfs/embedded";

  @Parameters(index = "0", arity = "0..1", paramLabel = "MOUNTPOINT",
      description = "Where to mount (created if missing; default: " + DEFAULT_MOUNT + ").")
  Path mountPoint;

  @Option(names = "--data", paramLabel = "DIR", description = "Data directory holding the config and every server's storage "
      + "(default: " + DEFAULT_DATA + ").")
  Path data;

  @Option(names = "--ioservers", paramLabel = "N", description = "I/O servers on a first run (default: 4).")
  Integer ioServers;

  @Option(names = "--port", paramLabel = "PORT", defaultValue = "7100",
      description = "First loopback port: the metadata server's; I/O server i listens on PORT+1+i (default: 7100; 0 picks free ports).")
  int port;

  @Override
  public Integer call() throws Exception {
    Path dataDir = (data != null ? data : Path.of(DEFAULT_DATA)).toAbsolutePath();
    Path mp = (mountPoint != null ? mountPoint : Path.of(DEFAULT_MOUNT)).toAbsolutePath();
    Files.createDirectories(dataDir);
    Files.createDirectories(mp);
    Path conf = dataDir.resolve("flowfs.conf");
    if (!Files.exists(conf)) {
      EmbeddedCluster.writeConfig(conf, dataDir, ioServers == null ? 4 : ioServers, port);
    }
    FlowFsConfig cfg = FlowFsConfig.load(conf);
    if (ioServers != null && ioServers != cfg.ioServers().size()) {
      throw new ConfigException(conf + " has " + cfg.ioServers().size() + " I/O servers; --ioservers "
          + ioServers + " applies only to a new data directory");
    }
    Main.begin("up", cfg);
    Lifecycle life = new Lifecycle();
    try {
      EmbeddedCluster cluster = life.add(EmbeddedCluster.start(cfg));
      System.out.println("FlowFS data in " + dataDir + " (config " + conf + ")");
      return MountCommand.serve(cluster.config(), mp, life);
    } finally {
      life.close();
    }
  }
}
