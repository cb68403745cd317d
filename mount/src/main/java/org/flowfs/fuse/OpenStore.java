package org.flowfs.fuse;

import io.netty.buffer.ByteBuf;
import jnr.ffi.Pointer;
import org.flowfs.common.Counters;

/**
 * Puts a small file's bytes, which its open brought with the fresh attributes (one call to the
 * metadata server: an eager open), into the kernel's page cache before the OPEN is answered, and
 * has the answer keep them ({@code FOPEN_KEEP_CACHE}, added by {@link NoFlushChannel}): the
 * reader's {@code read} is then served by the kernel, and the file costs the mount an OPEN and a
 * RELEASE, not a READ as well.
 *
 * <p>Only a node the kernel holds no page of takes this path. Otherwise a stale page past the
 * file's end (the file shrank elsewhere while the kernel's size of it is the old one) would be
 * kept by the answer, and a page locked by a read in flight would make the FUSE thread that stores
 * wait for another FUSE thread to answer that read. The kernel caches pages only of the nodes it
 * opens, reads or writes, so those nodes are noted from the requests the loop processes ({@link
 * #seen}), and forgotten when the kernel forgets them (FORGET, BATCH_FORGET: it evicted the
 * inode, and its pages with it). A node's first OPEN is the open that may store; a second open of
 * the file, here or by the same client through another node, finds the file's state shared
 * ({@code FileSystemClient.wholeFile} is null then) and is answered as before.
 *
 * <p>One window is left: two workers may read a FORGET and, after it, a request of the same node
 * (the kernel looked the name up again while it evicted the inode), and note the latter first;
 * the node then counts as without pages until its next open, read or write is noted. The
 * kernel sends FORGETs ahead of other requests, and a worker notes a request right after reading
 * it, so only a worker preempted between the two could open it.
 *
 * <p>The pages stored are the file's bytes as the open read them, after the open began: what the
 * kernel's own read of them after the open would cache (close-to-open). Counters {@code
 * open-store.{stores,bytes,failed}}.
 */
final class OpenStore {
  /** fuse_kernel.h: keep the pages cached at this open. */
  static final int FOPEN_KEEP_CACHE = 1 << 1;
  static final int FUSE_FORGET = 2;
  static final int FUSE_BATCH_FORGET = 42;
  /** fuse_batch_forget_in: uint32 count, uint32 dummy; then count x fuse_forget_one (nodeid, nlookup). */
  private static final int BATCH_COUNT = FuseWire.IN_HEADER;
  private static final int BATCH_FIRST = FuseWire.IN_HEADER + 8;
  private static final int FORGET_ONE = 16;

  /** Per FUSE thread: the node of the OPEN it processes if that node had no pages (else 0), and whether to keep. */
  private static final ThreadLocal<long[]> OPENING = ThreadLocal.withInitial(() -> new long[2]);

  private final NodeSet paged = new NodeSet();
  private final ThreadLocal<PageStore.Kernel> kernel;
  private final Counters counters;

  /** Stores through the kernel that {@code device} makes, one per FUSE thread. */
  OpenStore(java.util.function.Supplier<PageStore.Kernel> device, Counters counters) {
    this.kernel = ThreadLocal.withInitial(device);
    this.counters = counters;
  }

  /** Before the calling FUSE thread processes the request at {@code mem}: notes the nodes that may have pages. */
  void seen(Pointer mem) {
    long[] o = OPENING.get();
    o[0] = 0;
    o[1] = 0;
    int opcode = FuseWire.opcode(mem);
    switch (opcode) {
      case FuseWire.FUSE_OPEN -> {
        long node = mem.getLong(FuseWire.IN_NODEID);
        if (paged.add(node)) {
          o[0] = node;
        }
      }
      case FuseWire.FUSE_READ, FuseWire.FUSE_WRITE -> paged.add(mem.getLong(FuseWire.IN_NODEID));
      case FUSE_FORGET -> paged.remove(mem.getLong(FuseWire.IN_NODEID));
      case FUSE_BATCH_FORGET -> {
        int n = mem.getInt(BATCH_COUNT);
        int length = mem.getInt(0);
        for (int i = 0; i < n && BATCH_FIRST + (long) (i + 1) * FORGET_ONE <= length; i++) {
          paged.remove(mem.getLong(BATCH_FIRST + (long) i * FORGET_ONE));
        }
      }
      default -> {}
    }
  }

  /** Whether the OPEN the calling FUSE thread processes may store (its node had no pages): else no {@link #opened}. */
  static boolean mayStore() {
    return OPENING.get()[0] != 0;
  }

  /**
   * The file the calling FUSE thread opens is {@code whole} (released here): stored into the
   * kernel's page cache when the node has no pages, and then kept by the OPEN's answer.
   */
  void opened(ByteBuf whole) {
    try {
      long[] o = OPENING.get();
      if (o[0] == 0) {
        return;
      }
      if (!kernel.get().store(o[0], 0, whole)) {
        counters.increment("open-store.failed");
        return;
      }
      o[1] = 1;
      counters.increment("open-store.stores");
      counters.add("open-store.bytes", whole.readableBytes());
    } finally {
      whole.release();
    }
  }

  /** Whether the OPEN the calling thread answers keeps the kernel's pages (the store landed); once. */
  static boolean keepsPages() {
    long[] o = OPENING.get();
    boolean keep = o[1] != 0;
    o[1] = 0;
    return keep;
  }

  /** Nodes noted as having pages (for tests). */
  int pagedNodes() {
    return paged.size();
  }
}
