package org.flowfs.io;

import io.netty.buffer.ByteBuf;
import java.util.concurrent.Executor;
import org.flowfs.common.Counters;
import org.flowfs.common.Handle;
import org.flowfs.common.flow.FlowStorage;
import org.flowfs.common.flow.Pieces;

/** The bstream store as flows see it: blocking reads and writes on the storage pool. */
final class StoreFlowStorage implements FlowStorage {
  private final BStreamStore store;
  private final Executor pool;
  private final Counters counters;

  StoreFlowStorage(BStreamStore store, Executor pool, Counters counters) {
    this.store = store;
    this.pool = pool;
    this.counters = counters;
  }

  @Override
  public Executor executor() {
    return pool;
  }

  @Override
  public int read(Handle h, long offset, int length, ByteBuf dst) {
    int n = store.read(h, offset, length, dst);
    counters.add("bytes.read", n);
    return n;
  }

  @Override
  public void write(Handle h, long offset, ByteBuf src) {
    int n = src.readableBytes();
    store.write(h, offset, src);
    counters.add("bytes.written", n);
  }

  @Override
  public void write(Handle h, Pieces pieces, ByteBuf src) {
    store.write(h, pieces, src);
    counters.add("bytes.written", pieces.bytes());
  }
}
