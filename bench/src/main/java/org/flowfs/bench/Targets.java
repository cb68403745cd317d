package org.flowfs.bench;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.flowfs.cli.EmbeddedCluster;
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
    List<String> cmd = new ArrayList<>(RoleProcess.command("512m", List.of()));
    cmd.set(cmd.size() - 1, NullFuse.class.getName());
    cmd.add(mnt.toString());
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

  /** A running FlowFS: its config file, its mount, its processes. */
  static final class FlowFsTarget implements Target {
    final Path conf;
    private final Path mnt;
    private final Map<String, Process> procs = new LinkedHashMap<>();

    FlowFsTarget(Path dir, int ioServers, List<String> settings) throws Exception {
      Path data = Files.createDirectories(dir.resolve("data"));
      mnt = Files.createDirectories(dir.resolve("mnt"));
      conf = data.resolve("flowfs.conf");
      StringBuilder text = new StringBuilder();
      for (String line : EmbeddedCluster.configText(data, ioServers, 0).split("\n")) {
        if (line.endsWith(":0")) {
          line = line.substring(0, line.length() - 1) + freePort();
        }
        text.append(line).append('\n');
      }
      for (String kv : settings) {
        int eq = kv.indexOf('=');
        if (eq <= 0) {
          throw new IllegalArgumentException("--flowfs-config wants KEY=VALUE, got: " + kv);
        }
        text.append(kv, 0, eq).append(" = ").append(kv.substring(eq + 1)).append('\n');
      }
      Files.writeString(conf, text);
      Path logs = Files.createDirectories(data.resolve("logs"));
      try {
        for (int i = 0; i < ioServers; i++) {
          start("ioserver" + i, logs, List.of("ioserver", "--config", conf.toString(), "--id", String.valueOf(i)), "512m");
        }
        for (int i = 0; i < ioServers; i++) {
          awaitPort(port(text, "io." + i + ".address"), "ioserver" + i);
        }
        start("metaserver", logs, List.of("metaserver", "--config", conf.toString()), "512m");
        awaitPort(port(text, "meta.address"), "metaserver");
        Process m = Mounts.start(RoleProcess.command("1g", List.of("mount", "--config", conf.toString(), mnt.toString())),
            mnt, logs.resolve("mount.log"));
        procs.put("mount", m);
      } catch (Exception e) {
        close();
        throw e;
      }
    }

    private static int freePort() throws IOException {
      try (ServerSocket s = new ServerSocket(0)) {
        return s.getLocalPort();
      }
    }

    private static int port(CharSequence text, String key) {
      for (String line : text.toString().split("\n")) {
        if (line.startsWith(key + " = ")) {
          return Integer.parseInt(line.substring(line.lastIndexOf(':') + 1).strip());
        }
      }
      throw new IllegalStateException(key);
    }

    private void start(String role, Path logs, List<String> args, String heap) throws IOException {
      Process p = new ProcessBuilder(RoleProcess.command(heap, args)).redirectErrorStream(true)
          .redirectOutput(logs.resolve(role + ".log").toFile()).start();
      procs.put(role, p);
    }

    private void awaitPort(int port, String role) throws Exception {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (System.nanoTime() < deadline) {
        try (Socket s = new Socket()) {
          s.connect(new InetSocketAddress("127.0.0.1", port), 200);
          return;
        } catch (IOException e) {
          if (!procs.get(role).isAlive()) {
            throw new IOException(role + " exited");
          }
          Thread.sleep(50);
        }
      }
      throw new IOException(role + " did not listen on " + port);
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
      Map<String, Long> m = new LinkedHashMap<>();
      procs.forEach((k, v) -> m.put(k, v.pid()));
      return m;
    }

    @Override
    public void close() {
      Mounts.stop(procs.remove("mount"), mnt);
      List<String> roles = new ArrayList<>(procs.keySet());
      for (int i = roles.size() - 1; i >= 0; i--) {
        Mounts.stop(procs.get(roles.get(i)), Path.of("/nonexistent"));
      }
      procs.clear();
    }
  }
}
