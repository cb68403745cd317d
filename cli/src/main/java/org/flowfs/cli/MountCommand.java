package org.flowfs.cli;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.flowfs.client.FileSystemClient;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.fuse.FuseMount;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

@Command(name = "mount", mixinStandardHelpOptions = true,
    description = "Mount the file system at DIR with FUSE and serve it in the foreground; "
        + "SIGTERM or Ctrl-C unmounts.")
final class MountCommand implements Callable<Integer> {
  @Mixin
  ConfigOption config;

  @Parameters(index = "0", paramLabel = "DIR", description = "The mount point (an existing directory).")
  Path dir;

  @Override
  public Integer call() throws Exception {
    FlowFsConfig cfg = config.load();
    Main.logEffective("mount", cfg);
    return serve(cfg, dir, null);
  }

  /** Mounts and blocks until unmounted; {@code life} may already hold servers (embedded mode). */
  static int serve(FlowFsConfig cfg, Path dir, Lifecycle outer) throws Exception {
    Lifecycle life = outer != null ? outer : new Lifecycle();
    try {
      NetRuntime net = life.add(NetRuntime.create("client-net", 2));
      FileSystemClient client = life.add(new FileSystemClient(cfg, net));
      Main.checkServers(client);
      FuseMount mount = life.add(FuseMount.mount(client, dir, cfg.fs().name()));
      Readiness.ready("mount " + mount.mountPoint());
      System.out.println("FlowFS '" + cfg.fs().name() + "' is mounted at " + mount.mountPoint()
          + " (Ctrl-C or SIGTERM unmounts)");
      mount.awaitUnmount();
    } finally {
      life.close();
    }
    return 0;
  }
}
