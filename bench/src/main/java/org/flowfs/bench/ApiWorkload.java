package org.flowfs.bench;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.flowfs.client.Caller;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.client.api.AccessMode;
import org.flowfs.client.api.FlowFile;
import org.flowfs.client.api.FlowIo;
import org.flowfs.client.api.Hints;
import org.flowfs.client.api.Memory;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.flow.BufferedFlowProtocol;
import org.flowfs.common.request.Request;
import org.flowfs.common.rpc.NetRuntime;

/** FlowFS through its client library, no FUSE: what the kernel round trips cost the mount. */
final class ApiWorkload {
  private ApiWorkload() {}

  /** A typed access's block (the application's buffer per call) and how many are in flight. */
  static final int TYPED_BLOCK_MIB = 32;
  static final int TYPED_IN_FLIGHT = 2;

  /** Write and read throughput in MB/s. */
  record Throughput(double write, double read) {}

  /**
   * The typed API as a parallel application uses it for bulk data (rows {@code api-write},
   * {@code api-read}: large accesses, two in flight), and the POSIX-like calls of {@link
   * FileSystemClient} in pieces of 1 MiB as the mount makes them ({@code api-posix-write},
   * {@code api-posix-read}).
   */
  static void run(Path conf, int mib, Consumer<Workloads.Result> out) throws Exception {
    Throughput t = typed(conf, mib, Math.min(TYPED_BLOCK_MIB, mib), TYPED_IN_FLIGHT);
    out.accept(new Workloads.Result("api-write", t.write()));
    out.accept(new Workloads.Result("api-read", t.read()));
    Throughput p = measure(conf, mib, 1);
    out.accept(new Workloads.Result("api-posix-write", p.write()));
    out.accept(new Workloads.Result("api-posix-read", p.read()));
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

  /**
   * Writes a new file of {@code mib} MiB through the typed API ({@link FlowIo}, {@link FlowFile}):
   * blocks of {@code blockMib} MiB, {@code inFlight} of them started at once (async, as an MPI-IO
   * application overlaps its accesses), synced; drops the page cache and reads it back the same
   * way; removes it. Each access moves straight between the caller's memory and the servers.
   */
  static Throughput typed(Path conf, int mib, int blockMib, int inFlight) throws Exception {
    FlowFsConfig cfg = FlowFsConfig.load(conf);
    int block = blockMib << 20;
    int blocks = (mib + blockMib - 1) / blockMib;
    try (FlowIo io = FlowIo.connect(cfg)) {
      ByteBuf[] bufs = new ByteBuf[inFlight];
      for (int i = 0; i < inFlight; i++) {
        bufs[i] = PooledByteBufAllocator.DEFAULT.directBuffer(block);
        bufs[i].writeZero(block);
      }
      try {
        String path = "/api-" + System.nanoTime() + ".bin";
        long tw = Workloads.timed(() -> {
          try (FlowFile f = io.open(path, EnumSet.of(AccessMode.CREATE, AccessMode.WRITE_ONLY), Hints.of())) {
            pipeline(blocks, inFlight, (i, slot) -> f.writeAtAsync((long) i * block, Memory.bytes(bufs[slot].duplicate())));
            f.sync();
          }
        });
        Workloads.dropCaches();
        long tr = Workloads.timed(() -> {
          try (FlowFile f = io.open(path, EnumSet.of(AccessMode.READ_ONLY), Hints.of())) {
            pipeline(blocks, inFlight, (i, slot) -> f.readAtAsync((long) i * block, Memory.of(bufs[slot], block, Request.BYTE)));
          }
        });
        io.delete(path);
        double bytes = (double) blocks * block;
        return new Throughput(bytes / 1e6 / (tw / 1e9), bytes / 1e6 / (tr / 1e9));
      } finally {
        for (ByteBuf b : bufs) {
          b.release();
        }
      }
    }
  }

  /** Starts access {@code i} into buffer {@code slot}. */
  private interface Access {
    CompletableFuture<Long> start(int i, int slot);
  }

  /** Runs accesses 0..n-1 with at most {@code depth} in flight, each in its own buffer. */
  private static void pipeline(int n, int depth, Access access) {
    List<CompletableFuture<Long>> slots = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      int slot = i % depth;
      if (slots.size() > slot) {
        slots.get(slot).join();
        slots.set(slot, access.start(i, slot));
      } else {
        slots.add(access.start(i, slot));
      }
    }
    slots.forEach(CompletableFuture::join);
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
