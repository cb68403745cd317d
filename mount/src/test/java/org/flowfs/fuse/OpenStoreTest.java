package org.flowfs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.ArrayList;
import java.util.List;
import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import org.flowfs.common.Counters;
import org.junit.jupiter.api.Test;

/**
 * Which opens store their file's pages: the first OPEN of a node the kernel has no page of, not
 * one it opened, read or wrote before, until it forgets the node (FORGET or BATCH_FORGET).
 */
class OpenStoreTest {
  private final List<long[]> stored = new ArrayList<>();
  private boolean refuse;
  private final Counters counters = new Counters();
  private final OpenStore store = new OpenStore(() -> (node, offset, data) -> {
    stored.add(new long[] {node, offset, data.readableBytes()});
    return !refuse;
  }, counters);
  private final Runtime rt = Runtime.getSystemRuntime();

  private Pointer request(int opcode, long node) {
    Pointer p = Memory.allocateDirect(rt, 256, true);
    p.putInt(0, FuseWire.IN_HEADER + 16);
    p.putInt(FuseWire.IN_OPCODE, opcode);
    p.putLong(FuseWire.IN_NODEID, node);
    return p;
  }

  private Pointer batchForget(long... nodes) {
    Pointer p = Memory.allocateDirect(rt, FuseWire.IN_HEADER + 8 + 16 * nodes.length, true);
    p.putInt(0, FuseWire.IN_HEADER + 8 + 16 * nodes.length);
    p.putInt(FuseWire.IN_OPCODE, OpenStore.FUSE_BATCH_FORGET);
    p.putInt(FuseWire.IN_HEADER, nodes.length);
    for (int i = 0; i < nodes.length; i++) {
      p.putLong(FuseWire.IN_HEADER + 8 + 16L * i, nodes[i]);
      p.putLong(FuseWire.IN_HEADER + 16 + 16L * i, 1);
    }
    return p;
  }

  /** The OPEN of {@code node} processed on this thread with {@code size} bytes at hand: whether its answer keeps the pages. */
  private boolean open(long node, int size) {
    store.seen(request(FuseWire.FUSE_OPEN, node));
    ByteBuf whole = Unpooled.buffer(size).writerIndex(size);
    store.opened(whole);
    assertEquals(0, whole.refCnt(), "the bytes are released, stored or not");
    return OpenStore.keepsPages();
  }

  @Test
  void theFirstOpenOfANode_storesTheWholeFileAtZero_andKeepsItsPages() {
    assertTrue(open(7, 4096));
    assertEquals(1, stored.size());
    assertEquals(7, stored.get(0)[0]);
    assertEquals(0, stored.get(0)[1]);
    assertEquals(4096, stored.get(0)[2]);
    assertFalse(OpenStore.keepsPages(), "once: the next answer on this thread keeps nothing");
    assertEquals(1, counters.get("open-store.stores"));
    assertEquals(4096, counters.get("open-store.bytes"));
  }

  @Test
  void aNodeOpenedReadOrWrittenBefore_storesNothing_untilTheKernelForgetsIt() {
    assertTrue(open(1, 100));
    assertFalse(open(1, 100), "opened before: the kernel may hold its pages");
    store.seen(request(FuseWire.FUSE_READ, 2));
    assertFalse(open(2, 100), "read before");
    store.seen(request(FuseWire.FUSE_WRITE, 3));
    assertFalse(open(3, 100), "written before (a create's writes)");
    assertEquals(1, stored.size());

    store.seen(request(OpenStore.FUSE_FORGET, 1));
    store.seen(batchForget(2, 3));
    assertEquals(0, store.pagedNodes());
    assertTrue(open(1, 100));
    assertTrue(open(2, 100));
    assertTrue(open(3, 100));
    assertEquals(4, stored.size());
  }

  @Test
  void otherRequests_leaveTheNodesAlone() {
    store.seen(request(FuseWire.FUSE_GETATTR, 5));
    store.seen(request(FuseWire.FUSE_SETATTR, 5));
    assertEquals(0, store.pagedNodes());
    assertTrue(open(5, 10));
  }

  @Test
  void aStoreTheKernelRefuses_keepsNothing() {
    refuse = true;
    assertFalse(open(9, 4096));
    assertEquals(1, counters.get("open-store.failed"));
    assertEquals(0, counters.get("open-store.stores"));
  }

  @Test
  void aRequestAfterAnOpenThatStored_startsWithNothingToKeep() {
    store.seen(request(FuseWire.FUSE_OPEN, 12));
    store.opened(Unpooled.buffer(10).writerIndex(10)); // stored, and the answer never came (interrupted)
    store.seen(request(FuseWire.FUSE_GETATTR, 13));
    assertFalse(OpenStore.keepsPages(), "another request's answer keeps nothing");
  }
}
