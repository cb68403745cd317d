package org.flowfs.bench;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import java.nio.file.Path;
import java.util.function.Consumer;
import org.flowfs.client.Caller;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.rpc.NetRuntime;

/** FlowFS through its client library, no FUSE: what the kernel round trips cost the mount. */
final class ApiWorkload {
  private ApiWorkload() {}

  static void run(Path conf, int mib, Consumer<Workloads.Result> out) throws Exception {
    FlowFsConfig cfg = FlowFsConfig.load(conf);
    try (NetRuntime net = NetRuntime.create("bench-client", 2); FileSystemClient fs = new FileSystemClient(cfg, net)) {
      ByteBuf chunk = PooledByteBufAllocator.DEFAULT.directBuffer(1 << 20);
      try {
        chunk.writeZero(1 << 20);
        String path = "/api-" + System.nanoTime() + ".bin";
        long t = Workloads.timed(() -> {
          OpenFile f = fs.create(path, 0644, 0, Caller.ROOT);
          for (long i = 0; i < mib; i++) {
            fs.write(f, i << 20, chunk.duplicate());
          }
          fs.fsync(f, false);
          fs.release(f);
        });
        out.accept(new Workloads.Result("api-write", mib * 1048576.0 / 1e6 / (t / 1e9)));
        Workloads.dropCaches();
        t = Workloads.timed(() -> {
          OpenFile f = fs.open(path, 0);
          for (long i = 0; i < mib; i++) {
            chunk.clear();
            fs.read(f, i << 20, 1 << 20, chunk);
          }
          fs.release(f);
        });
        out.accept(new Workloads.Result("api-read", mib * 1048576.0 / 1e6 / (t / 1e9)));
        fs.unlink(path);
      } finally {
        chunk.release();
      }
    }
  }
}
