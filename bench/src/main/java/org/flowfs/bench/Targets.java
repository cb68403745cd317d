package org.flowfs.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.flowfs.cli.RoleProcess;

/** The four systems the benchmark compares. */
final class Targets {
  private Targets() {}

  /** The local ext4 directory itself. */
  static Target local(Path work) throws IOException {
    Path root = Files.createDirectories(work.resolve("local"));
    return new Target() {
      public String name() {
        return "local";
      }

      public Path root() {
        return root;
      }

      public Map<String, Long> pids() {
        return Map.of();
      }

      public void close() {}
    };
  }

  /** Debian's bindfs, a C FUSE passthrough (libfuse 2), of a local directory; multithreaded, 128 KiB writes. */
  static Target bindfs(Path work) throws Exception {
    Path src = Files.createDirectories(work.resolve("bindfs-src"));
    Path mnt = Files.createDirectories(work.resolve("bindfs-mnt"));
    Process p = Mounts.start(List.of("bindfs", "-f", "--multithreaded", "-o", "big_writes,max_write=131072,allow_other",
        src.toString(), mnt.toString()), mnt, work.resolve("bindfs.log"));
    return process("bindfs", mnt, p, Map.of("bindfs", p.pid()));
  }

  /** A Java (jnr-fuse) file system that stores nothing: the ceiling of Java FUSE here. */
  static Target nullFuse(Path work) throws Exception {
    Path mnt = Files.createDirectories(work.resolve("null-mnt"));
    List<String> cmd = RoleProcess.java(RoleProcess.defaultHeap("mount"), NullFuse.class.getName(), List.of(mnt.toString()));
    Process p = Mounts.start(cmd, mnt, work.resolve("nullfuse.log"));
    return process("nullfuse", mnt, p, Map.of("nullfuse", p.pid()));
  }

  private static Target process(String name, Path mnt, Process p, Map<String, Long> pids) {
    return new Target() {
      public String name() {
        return name;
      }

      public Path root() {
        return mnt;
      }

      public Map<String, Long> pids() {
        return pids;
      }

      public void close() {
        Mounts.stop(p, mnt);
      }
    };
  }

  /** FlowFS as systemd runs it: a metadata server, {@code ioServers} I/O servers and the mount, each its own process. */
  static FlowFsTarget flowfs(Path work, int ioServers, List<String> settings) throws Exception {
    return new FlowFsTarget(work.resolve("flowfs"), ioServers, settings);
  }

  /** A running FlowFS: its server processes, its config file, its mount. */
  static final class FlowFsTarget implements Target {
    final Path conf;
    private final Path mnt;
    private final ServerProcesses servers;
    private final Process mount;

    FlowFsTarget(Path dir, int ioServers, List<String> settings) throws Exception {
      mnt = Files.createDirectories(dir.resolve("mnt"));
      servers = new ServerProcesses(dir.resolve("data"), ioServers, settings, ServerProcesses.Placement.LOOPBACK);
      conf = servers.conf;
      try {
        mount = Mounts.start(RoleProcess.command(List.of("mount", "--config", conf.toString(), mnt.toString())),
            mnt, servers.logs.resolve("mount.log"));
      } catch (Exception e) {
        servers.close();
        throw e;
      }
    }

    @Override
    public String name() {
      return "flowfs";
    }

    @Override
    public Path root() {
      return mnt;
    }

    @Override
    public Map<String, Long> pids() {
      Map<String, Long> m = new LinkedHashMap<>(servers.pids());
      m.put("mount", mount.pid());
      return m;
    }

    @Override
    public void close() {
      Mounts.stop(mount, mnt);
      servers.close();
    }
  }
}
