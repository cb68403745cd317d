package org.flowfs.bench;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;
import org.flowfs.client.Caller;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.flow.BufferedFlowProtocol;
import org.flowfs.common.rpc.NetRuntime;

/** FlowFS through its client library, no FUSE: what the kernel round trips cost the mount. */
final class ApiWorkload {
  private ApiWorkload() {}

  /** Write and read throughput in MB/s. */
  record Throughput(double write, double read) {}

  static void run(Path conf, int mib, Consumer<Workloads.Result> out) throws Exception {
    Throughput t = measure(conf, mib, 1);
    out.accept(new Workloads.Result("api-write", t.write()));
    out.accept(new Workloads.Result("api-read", t.read()));
  }

  /**
   * The client API once per flow protocol, each over its own FlowFS (a metadata server and {@code
   * ioServers} I/O servers as processes, the protocol set for servers and client alike): rows
   * {@code api-write-PROTOCOL} and {@code api-read-PROTOCOL}.
   */
  static void protocols(Path work, int ioServers, int mib, MemorySampler mem, Consumer<Workloads.Result> out) throws Exception {
    for (String protocol : PROTOCOLS) {
      Path dir = work.resolve("protocol-" + protocol);
      Workloads.sh(Path.of("/"), "rm -rf '" + dir + "'");
      try (ServerProcesses servers = new ServerProcesses(dir, ioServers, List.of("flow.protocol=" + protocol),
          ServerProcesses.Placement.LOOPBACK)) {
        mem.watch("protocols", servers.pids());
        measure(servers.conf, Math.min(mib, 128), 1); // warm-up: new JVMs, like the mount's warm servers
        Throughput t = measure(servers.conf, mib, 1);
        out.accept(new Workloads.Result("api-write-" + protocol, t.write()));
        out.accept(new Workloads.Result("api-read-" + protocol, t.read()));
      } finally {
        mem.unwatch("protocols");
      }
      Workloads.sh(Path.of("/"), "rm -rf '" + dir + "'");
    }
  }

  /** The flow protocols FlowFS registers. */
  static final List<String> PROTOCOLS = List.of(BufferedFlowProtocol.DOUBLE_BUFFER, BufferedFlowProtocol.SINGLE_BUFFER);

  /**
   * Writes a new file of {@code mib} MiB in calls of {@code chunkMib} MiB, fsyncs it, drops the
   * page cache and reads it back in calls of the same size; removes it.
   */
  static Throughput measure(Path conf, int mib, int chunkMib) throws Exception {
    FlowFsConfig cfg = FlowFsConfig.load(conf);
    int chunk = chunkMib << 20;
    int calls = (mib + chunkMib - 1) / chunkMib;
    try (NetRuntime net = NetRuntime.create("bench-client", 2); FileSystemClient fs = new FileSystemClient(cfg, net)) {
      ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(chunk);
      try {
        buf.writeZero(chunk);
        String path = "/api-" + System.nanoTime() + ".bin";
        long tw = Workloads.timed(() -> {
          OpenFile f = fs.create(path, 0644, 0, Caller.ROOT);
          for (long i = 0; i < calls; i++) {
            fs.write(f, i * chunk, buf.duplicate());
          }
          fs.fsync(f, false);
          fs.release(f);
        });
        Workloads.dropCaches();
        long tr = Workloads.timed(() -> {
          OpenFile f = fs.open(path, 0);
          for (long i = 0; i < calls; i++) {
            buf.clear();
            fs.read(f, i * chunk, chunk, buf);
          }
          fs.release(f);
        });
        fs.unlink(path);
        double bytes = (double) calls * chunk;
        return new Throughput(bytes / 1e6 / (tw / 1e9), bytes / 1e6 / (tr / 1e9));
      } finally {
        buf.release();
      }
    }
  }
}
