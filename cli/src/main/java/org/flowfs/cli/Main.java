package org.flowfs.cli;

import java.util.Map;
import java.util.stream.Collectors;
import org.flowfs.client.FileSystemClient;
import org.flowfs.common.FsException;
import org.flowfs.common.ServiceCpus;
import org.flowfs.common.Version;
import org.flowfs.common.config.ConfigException;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.fuse.FuseMount;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code flowfs}: the one entry point for operators, systemd units and tools. */
@Command(name = "flowfs", mixinStandardHelpOptions = true, versionProvider = Main.VersionProvider.class,
    description = "FlowFS, a parallel file system: servers, mounts and tools.",
    subcommands = {UpCommand.class, MetaserverCommand.class, IoserverCommand.class, MountCommand.class,
        PingCommand.class, DfCommand.class, StatCommand.class, SetstripeCommand.class, StatsCommand.class,
        FsckCommand.class})
public final class Main implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(Main.class);

  public static void main(String[] args) {
    System.exit(run(args));
  }

  /** Runs a command line; returns the exit code (0 ok, 1 failure, 2 usage or config error). */
  public static int run(String... args) {
    return run(null, null, args);
  }

  /** {@link #run(String...)} printing to {@code out} and {@code err} (null: stdout and stderr). */
  public static int run(java.io.PrintWriter out, java.io.PrintWriter err, String... args) {
    CommandLine cl = new CommandLine(new Main());
    if (out != null) {
      cl.setOut(out);
    }
    if (err != null) {
      cl.setErr(err);
    }
    cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
      if (e instanceof ConfigException ce) {
        ce.problems().forEach(p -> cmd.getErr().println("flowfs: " + p));
        return 2;
      }
      if (e instanceof FuseMount.MountException || e instanceof FsException || e instanceof java.io.IOException) {
        cmd.getErr().println("flowfs " + cmd.getCommandName() + ": " + e.getMessage());
        cmd.getErr().flush();
        return 1;
      }
      if (e instanceof IllegalArgumentException) { // a bad option value the command found
        cmd.getErr().println("flowfs " + cmd.getCommandName() + ": " + e.getMessage());
        cmd.getErr().flush();
        return 2;
      }
      LOG.error("flowfs {} failed", cmd.getCommandName(), e);
      return 1;
    });
    return cl.execute(args);
  }

  @Override
  public void run() {
    new CommandLine(this).usage(System.out);
  }

  /** Logs the effective settings of a process of {@code role} and puts its threads on node.service-cpus. */
  static void begin(String role, FlowFsConfig cfg) {
    Map<String, String> eff = cfg.effective();
    LOG.info("{}: {} with {}", role, Version.describe(),
        eff.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(" ")));
    ServiceCpus.install(cfg.node().serviceCpus());
  }

  /** Fails early, with the address, when the metadata server does not answer. */
  static void checkServers(FileSystemClient client) {
    client.ping();
  }

  static final class VersionProvider implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      return new String[] {Version.describe()};
    }
  }
}
