package org.flowfs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.flowfs.client.PageSink;
import org.flowfs.common.Counters;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The store thread's queue: bounded by bytes, every buffer released whatever becomes of it. */
class PageStoreTest {
  private static final int MIB = 1 << 20;

  /** A kernel that holds its first store until {@link #open} and records every store it takes. */
  private static final class HeldKernel implements PageStore.Kernel {
    final CountDownLatch entered = new CountDownLatch(1);
    final CountDownLatch open = new CountDownLatch(1);
    final List<long[]> stored = java.util.Collections.synchronizedList(new ArrayList<>());
    volatile boolean refuse;

    @Override
    public boolean store(long node, long offset, ByteBuf data) {
      entered.countDown();
      try {
        open.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
      assertTrue(data.refCnt() > 0, "a store's bytes are still held while the kernel takes them");
      stored.add(new long[] {node, offset, data.readableBytes()});
      return !refuse;
    }
  }

  /** Pages of {@code length} bytes at {@code offset}; {@code allowed} answers begin(). */
  private static final class Pages implements PageSink.Pages {
    final long offset;
    final ByteBuf data;
    final boolean allowed;
    final AtomicInteger ended = new AtomicInteger();

    Pages(long offset, int length, boolean allowed) {
      this.offset = offset;
      this.data = Unpooled.buffer(length).writerIndex(length);
      this.allowed = allowed;
    }

    @Override
    public long offset() {
      return offset;
    }

    @Override
    public ByteBuf data() {
      return data;
    }

    @Override
    public boolean begin() {
      return allowed;
    }

    @Override
    public void end() {
      ended.incrementAndGet();
    }
  }

  private final Counters counters = new Counters();
  private final HeldKernel kernel = new HeldKernel();
  private final PageStore store = new PageStore(kernel, counters);

  @AfterEach
  void stop() {
    kernel.open.countDown();
    store.stop();
  }

  private static void await(BooleanSupplier what, String detail) throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!what.getAsBoolean()) {
      assertTrue(System.nanoTime() < until, detail);
      Thread.sleep(1);
    }
  }

  @Test
  void storesWaitingAreBoundedByBytes_theRestAreDroppedAndReleased() throws Exception {
    PageSink sink = store.forNode(7);
    assertNotNull(sink);
    Pages first = new Pages(0, MIB, true);
    sink.store(first); // taken by the store thread, which waits in the kernel
    assertTrue(kernel.entered.await(10, TimeUnit.SECONDS));
    assertEquals(0, store.queuedBytes());

    int fit = (int) (PageStore.MAX_QUEUED_BYTES / MIB);
    List<Pages> more = new ArrayList<>();
    for (int i = 0; i < fit + 8; i++) {
      Pages p = new Pages((long) (i + 1) * MIB, MIB, true);
      more.add(p);
      sink.store(p);
    }
    assertEquals(PageStore.MAX_QUEUED_BYTES, store.queuedBytes());
    assertEquals(8, counters.get("read-around.dropped"));
    for (Pages p : more.subList(fit, more.size())) {
      assertEquals(0, p.data.refCnt(), "a dropped store's bytes are released at once");
    }

    kernel.open.countDown();
    await(() -> kernel.stored.size() == fit + 1, "stored " + kernel.stored.size() + " of " + (fit + 1));
    await(() -> more.get(fit - 1).data.refCnt() == 0, "the last store's bytes are released");
    assertEquals(0, store.queuedBytes());
    assertEquals(fit + 1, counters.get("read-around.stores"));
    assertEquals((long) (fit + 1) * MIB, counters.get("read-around.bytes"));
    assertEquals(0, first.data.refCnt());
    for (int i = 0; i < fit; i++) {
      assertEquals(0, more.get(i).data.refCnt());
      assertEquals(1, more.get(i).ended.get());
      assertEquals((long) (i + 1) * MIB, kernel.stored.get(i + 1)[1], "stores keep their order");
      assertEquals(7, kernel.stored.get(i + 1)[0]);
    }
  }

  @Test
  void aStoreItsFileNoLongerAllows_isReleasedUnstored_andARefusedOneIsCounted() throws Exception {
    kernel.open.countDown();
    PageSink sink = store.forNode(3);
    Pages cancelled = new Pages(0, 4096, false);
    sink.store(cancelled);
    await(() -> cancelled.data.refCnt() == 0, "a cancelled store's bytes are released");
    assertEquals(0, cancelled.ended.get(), "no end() without begin()");
    assertEquals(0, kernel.stored.size());

    kernel.refuse = true;
    Pages refused = new Pages(4096, 4096, true);
    sink.store(refused);
    await(() -> refused.data.refCnt() == 0, "a refused store's bytes are released");
    assertEquals(1, refused.ended.get());
    assertEquals(1, counters.get("read-around.failed"));
    assertEquals(0, counters.get("read-around.stores"));
  }

  @Test
  void stoppingReleasesWhatWaits_andLaterStoresToo() throws Exception {
    PageSink sink = store.forNode(5);
    sink.store(new Pages(0, MIB, true));
    assertTrue(kernel.entered.await(10, TimeUnit.SECONDS));
    List<Pages> waiting = new ArrayList<>();
    for (int i = 1; i <= 3; i++) {
      Pages p = new Pages((long) i * MIB, MIB, true);
      waiting.add(p);
      sink.store(p);
    }
    store.stop();
    assertNull(store.forNode(5), "no new sinks once stopped");
    Pages late = new Pages(9L * MIB, MIB, true);
    sink.store(late); // a sink handed out before the stop
    kernel.open.countDown();
    for (Pages p : waiting) {
      await(() -> p.data.refCnt() == 0, "a waiting store's bytes are released after the stop");
    }
    await(() -> late.data.refCnt() == 0, "a store after the stop is released");
    assertEquals(0, store.queuedBytes());
    assertNull(store.forNode(0));
  }
}
