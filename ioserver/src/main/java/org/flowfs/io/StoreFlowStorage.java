package org.flowfs.io;

import io.netty.buffer.ByteBuf;
import io.netty.util.ReferenceCounted;
import java.util.List;
import java.util.concurrent.Executor;
import org.flowfs.common.Counters;
import org.flowfs.common.Handle;
import org.flowfs.common.flow.FlowStorage;
import org.flowfs.common.flow.Pieces;

/** The bstream store as flows see it: blocking reads and writes on the storage pool. */
final class StoreFlowStorage implements FlowStorage {
  private final BStreamStore store;
  private final Executor pool;
  private final Executor readPool;
  private final Counters counters;
  private final boolean sendfile;

  /**
   * With {@code sendfile}, flows that read send from the page cache ({@link #regions}); their
   * bulk reads otherwise run on {@code readPool}.
   */
  StoreFlowStorage(BStreamStore store, Executor pool, Executor readPool, Counters counters, boolean sendfile) {
    this.store = store;
    this.pool = pool;
    this.readPool = readPool;
    this.counters = counters;
    this.sendfile = sendfile;
  }

  @Override
  public Executor executor() {
    return pool;
  }

  @Override
  public Executor readExecutor() {
    return readPool;
  }

  @Override
  public int read(Handle h, long offset, int length, ByteBuf dst) {
    int n = store.read(h, offset, length, dst);
    counters.add("bytes.read", n);
    return n;
  }

  @Override
  public boolean readDirect(Handle h, Pieces pieces, ByteBuf dst) {
    if (pieces.count() != 1 || !store.readDirect(h, pieces.offset(0), pieces.length(0), dst)) {
      return false;
    }
    counters.add("bytes.read", pieces.bytes());
    return true;
  }

  @Override
  public List<ReferenceCounted> regions(Handle h, Pieces pieces) {
    List<ReferenceCounted> parts = sendfile ? store.regions(h, pieces) : null;
    if (parts != null) {
      counters.add("bytes.read", pieces.bytes());
      counters.add("bytes.sendfile", pieces.bytes());
    }
    return parts;
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
