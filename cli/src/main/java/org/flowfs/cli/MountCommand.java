package org.flowfs.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.concurrent.TimeUnit;
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
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(MountCommand.class);

  @Mixin
  ConfigOption config;

  @Parameters(index = "0", paramLabel = "DIR", description = "The mount point (an existing directory).")
  Path dir;

  @Override
  public Integer call() throws Exception {
    FlowFsConfig cfg = config.load();
    Main.begin("mount", cfg);
    return serve(cfg, dir, null);
  }

  /** Mounts and blocks until unmounted; {@code life} may already hold servers (embedded mode). */
  static int serve(FlowFsConfig cfg, Path dir, Lifecycle outer) throws Exception {
    Lifecycle life = outer != null ? outer : new Lifecycle();
    try {
      NetRuntime net = life.add(NetRuntime.create("client-net", 2));
      FileSystemClient client = life.add(new FileSystemClient(cfg, net));
      Main.checkServers(client);
      clearStale(dir);
      FuseMount mount = life.add(FuseMount.mount(client, dir, cfg.fs().name()));
      answers(mount.mountPoint());
      Readiness.ready("mount " + mount.mountPoint());
      System.out.println("FlowFS '" + cfg.fs().name() + "' is mounted at " + mount.mountPoint()
          + " (Ctrl-C or SIGTERM unmounts)");
      mount.awaitUnmount();
    } finally {
      life.close();
    }
    return 0;
  }

  /**
   * Detaches a FlowFS mount left at {@code dir} by a client that died (its mount point answers
   * ENOTCONN), so that a restarted client (systemd's Restart=on-failure) can mount again. A live
   * mount is left alone: mounting then fails with "already a mount point".
   */
  static void clearStale(Path dir) {
    Path mp = dir.toAbsolutePath().normalize();
    if (!FuseMount.TYPE.equals(org.flowfs.fuse.MountTable.typeAt(mp))) {
      return;
    }
    try {
      Files.readAttributes(mp, BasicFileAttributes.class);
    } catch (IOException e) {
      if (String.valueOf(e.getMessage()).contains("not connected")) {
        LOG.warn("{} is a dead FlowFS mount (its client is gone): detaching it", mp);
        try {
          Process p = new ProcessBuilder("fusermount", "-u", "-z", mp.toString()).inheritIO().start();
          p.waitFor(10, TimeUnit.SECONDS);
        } catch (IOException x) {
          LOG.warn("cannot run fusermount -u -z {}: {}", mp, x.getMessage());
        } catch (InterruptedException x) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  /** Returns once the mounted file system answers a stat through the kernel (FUSE, client, server). */
  static void answers(Path mp) throws IOException {
    Files.readAttributes(mp, BasicFileAttributes.class);
  }
}
