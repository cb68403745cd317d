package org.flowfs.bench;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.flowfs.cli.EmbeddedCluster;
import org.flowfs.cli.LoopbackPorts;
import org.flowfs.cli.RoleProcess;

/**
 * A metadata server and I/O servers, each its own process of the launcher as systemd runs them
 * (with the launcher's heap sizes), from one config file in {@code dataDir}. I/O server {@code i}
 * listens on {@code ioHost(i)} and may run under a wrapper command (e.g. {@code ip netns exec
 * NAME}).
 */
final class ServerProcesses implements AutoCloseable {
  /** Where I/O server {@code i} listens and what its command is prefixed with. */
  interface Placement {
    String host(int i);

    List<String> wrapper(int i);

    Placement LOOPBACK = new Placement() {
      public String host(int i) {
        return "127.0.0.1";
      }

      public List<String> wrapper(int i) {
        return List.of();
      }
    };
  }

  /** Every instance not yet closed: stopped by a shutdown hook if the benchmark is killed (SIGTERM, Ctrl-C). */
  private static final Set<ServerProcesses> LIVE = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(() -> List.copyOf(LIVE).forEach(ServerProcesses::close), "servers-cleanup"));
  }

  final Path conf;
  final Path logs;
  private final Map<String, Process> procs = new LinkedHashMap<>();

  ServerProcesses(Path dataDir, int ioServers, List<String> settings, Placement placement) throws Exception {
    Files.createDirectories(dataDir);
    conf = dataDir.resolve("flowfs.conf");
    logs = Files.createDirectories(dataDir.resolve("logs"));
    StringBuilder text = new StringBuilder();
    Map<String, InetSocketAddress> listen = new LinkedHashMap<>();
    int base = LoopbackPorts.block(ioServers + 1);
    for (String line : EmbeddedCluster.configText(dataDir, ioServers, base).split("\n")) {
      if (line.startsWith("meta.address = ")) {
        listen.put("metaserver", new InetSocketAddress("127.0.0.1", base));
      } else if (line.startsWith("io.") && line.contains(".address = ")) {
        int i = Integer.parseInt(line.substring(3, line.indexOf('.', 3)));
        String host = placement.host(i);
        int port = host.equals("127.0.0.1") ? base + 1 + i : 7100; // a namespace of its own has every port free
        listen.put("ioserver" + i, new InetSocketAddress(host, port));
        line = "io." + i + ".address = " + host + ":" + port;
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
    LIVE.add(this);
    try {
      for (int i = 0; i < ioServers; i++) {
        List<String> cmd = new ArrayList<>(placement.wrapper(i));
        cmd.addAll(RoleProcess.command(List.of("ioserver", "--config", conf.toString(), "--id", String.valueOf(i))));
        start("ioserver" + i, cmd);
      }
      for (int i = 0; i < ioServers; i++) {
        awaitPort(listen.get("ioserver" + i), "ioserver" + i);
      }
      start("metaserver", RoleProcess.command(List.of("metaserver", "--config", conf.toString())));
      awaitPort(listen.get("metaserver"), "metaserver");
    } catch (Exception e) {
      close();
      throw e;
    }
  }

  private synchronized void start(String role, List<String> cmd) throws IOException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(logs.resolve(role + ".log").toFile()).start();
    procs.put(role, p);
  }

  private void awaitPort(InetSocketAddress a, String role) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      try (Socket s = new Socket()) {
        s.connect(a, 200);
        return;
      } catch (IOException e) {
        if (!procs.get(role).isAlive()) {
          throw new IOException(role + " exited; see " + logs.resolve(role + ".log"));
        }
        Thread.sleep(50);
      }
    }
    throw new IOException(role + " did not listen on " + a);
  }

  /** The pids by role. */
  synchronized Map<String, Long> pids() {
    Map<String, Long> m = new LinkedHashMap<>();
    procs.forEach((k, v) -> m.put(k, v.pid()));
    return m;
  }

  /** Stops the servers, metadata server first. */
  @Override
  public synchronized void close() {
    LIVE.remove(this);
    List<String> roles = new ArrayList<>(procs.keySet());
    for (int i = roles.size() - 1; i >= 0; i--) {
      Mounts.stop(procs.get(roles.get(i)), Path.of("/nonexistent"));
    }
    procs.clear();
  }
}
