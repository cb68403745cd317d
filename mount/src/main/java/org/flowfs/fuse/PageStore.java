package org.flowfs.fuse;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicLong;
import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import org.flowfs.client.PageSink;
import org.flowfs.common.Counters;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Puts the pages FlowFS read around a random read into the kernel's page cache of the file, with
 * FUSE_NOTIFY_STORE written to the FUSE device, on one thread of its own ({@code fuse-store}):
 * the kernel locks each page before it copies our bytes into it, and a page may be locked by a
 * request that only a FUSE thread can answer, so no FUSE thread may wait for a store.
 * {@code FileState} decides what may be stored and when it must no longer be; this class only
 * carries it out. Counters {@code read-around.{stores,bytes,failed,dropped}}.
 */
final class PageStore {
  private static final Logger LOG = LoggerFactory.getLogger(PageStore.class);
  /** The notification header + fuse_notify_store_out (nodeid, offset, size, padding). */
  private static final int HEADER = FuseWire.OUT_HEADER + 24;
  /**
   * Bytes of stores waiting at most; past that new ones are dropped. In bytes, not stores: a file
   * that fits in the page cache is read around in blocks of up to a MiB, and 512 such stores (the
   * earlier bound) held up to 512 MiB while random reads ran.
   */
  static final long MAX_QUEUED_BYTES = 32L << 20;

  private record Job(long node, PageSink.Pages store) {}

  /** Hands one store to the kernel; false if it refused it. */
  @FunctionalInterface
  interface Kernel {
    boolean store(long node, long offset, ByteBuf data);
  }

  private final Kernel kernel;
  /** For {@link #storeNow}: a kernel of its own (a device's buffers are one thread's). */
  private final Kernel now;
  private final Counters counters;
  private final LinkedBlockingQueue<Job> queue = new LinkedBlockingQueue<>();
  /** Bytes of the stores in {@link #queue}. */
  private final AtomicLong queuedBytes = new AtomicLong();
  private final Thread thread;
  private volatile boolean stopped;

  /** Stores with FUSE_NOTIFY_STORE written to the FUSE device {@code fd}. */
  PageStore(InitChannel.LibC libc, Runtime rt, int fd, Counters counters) {
    this(new Device(libc, rt, fd), new Device(libc, rt, fd), counters);
  }

  /** Stores through {@code kernel} (tests hand one of their own). */
  PageStore(Kernel kernel, Counters counters) {
    this(kernel, kernel, counters);
  }

  private PageStore(Kernel kernel, Kernel now, Counters counters) {
    this.kernel = kernel;
    this.now = now;
    this.counters = counters;
    this.thread = new Thread(org.flowfs.common.NamedThreads.confined(this::run), "fuse-store");
    thread.setDaemon(true);
    thread.start();
  }

  /** A sink for the file of the READ the calling FUSE thread is processing; null if it is not processing one. */
  PageSink forThisRead() {
    return forNode(KernelRequest.current().nodeIf(FuseWire.FUSE_READ));
  }

  /** A sink for the file of kernel node {@code node}; null for node 0 or once stopped. */
  PageSink forNode(long node) {
    if (node == 0 || stopped) {
      return null;
    }
    return s -> {
      int n = s.data().readableBytes();
      if (queuedBytes.addAndGet(n) > MAX_QUEUED_BYTES) { // the store thread is behind: these pages are not worth waiting for
        queuedBytes.addAndGet(-n);
        s.data().release();
        counters.increment("read-around.dropped");
        return;
      }
      queue.add(new Job(node, s));
      if (stopped) { // the store thread may have drained the queue already
        drain();
      }
    };
  }

  /**
   * Stores {@code data} at {@code offset} of node {@code node} at once, on the calling thread:
   * for a FUSE thread that must have the kernel take the bytes (and the size they end at) before
   * it answers; only where no page of the range can be locked waiting for this thread. False if
   * the kernel refused it.
   */
  synchronized boolean storeNow(long node, long offset, ByteBuf data) {
    return now.store(node, offset, data);
  }

  /** Stops storing; what is queued is dropped (its files' states cancel it at their next open or close). */
  void stop() {
    stopped = true;
    thread.interrupt();
  }

  private void run() {
    try {
      while (!stopped) {
        Job j = queue.take();
        queuedBytes.addAndGet(-j.store.data().readableBytes());
        try {
          if (j.store.begin()) {
            try {
              write(j.node, j.store.offset(), j.store.data());
            } finally {
              j.store.end();
            }
          }
        } finally {
          j.store.data().release();
        }
      }
    } catch (InterruptedException e) {
      // stopped
    }
    drain();
  }

  /** Releases the stores waiting, unstored. */
  private void drain() {
    for (Job j; (j = queue.poll()) != null; ) {
      queuedBytes.addAndGet(-j.store.data().readableBytes());
      j.store.data().release();
    }
  }

  /** Bytes of the stores waiting (not the one being written). */
  long queuedBytes() {
    return queuedBytes.get();
  }

  private void write(long node, long offset, ByteBuf data) {
    int n = data.readableBytes();
    if (!kernel.store(node, offset, data)) {
      counters.increment("read-around.failed"); // the kernel forgot the node (ENOENT), say: a later read asks again
      return;
    }
    counters.increment("read-around.stores");
    counters.add("read-around.bytes", n);
  }

  /**
   * The FUSE device: FUSE_NOTIFY_STORE, header and bytes in one {@code writev}, the bytes from
   * where they are (a block read around, or the read-ahead window's frames); gathered into one
   * buffer first only when their pieces do not fit the iovecs. (Copying every block into one
   * buffer for a plain write cost the store thread about a fifth of its CPU per byte stored.)
   */
  static final class Device implements Kernel {
    private final InitChannel.LibC libc;
    private final Runtime rt;
    private final int fd;
    // one thread's only
    private final Pointer header;
    private final Pointer iov;
    private Pointer gathered;

    Device(InitChannel.LibC libc, Runtime rt, int fd) {
      this.libc = libc;
      this.rt = rt;
      this.fd = fd;
      this.header = Memory.allocateDirect(rt, HEADER, true);
      this.iov = Memory.allocateDirect(rt, (DirectRead.MAX_PIECES + 1) * 16L, true);
    }

    @Override
    public boolean store(long node, long offset, ByteBuf data) {
      int n = data.readableBytes();
      FuseWire.notifyHeader(header, HEADER + n, FuseWire.NOTIFY_STORE);
      header.putLong(16, node);
      header.putLong(24, offset);
      header.putInt(32, n);
      header.putInt(36, 0);
      DirectRead.setIovec(iov, 0, header.address(), HEADER);
      int pieces = DirectRead.gather(data, iov);
      if (pieces < 0) {
        if (gathered == null || gathered.size() < n) {
          gathered = Memory.allocateDirect(rt, Math.max(n, 1 << 20));
        }
        data.getBytes(data.readerIndex(), Unpooled.wrappedBuffer(gathered.address(), n, false).clear(), n);
        DirectRead.setIovec(iov, 1, gathered.address(), n);
        pieces = 1;
      }
      if (libc.writev(fd, iov, pieces + 1) < 0) {
        LOG.debug("storing {} bytes at {} of node {} failed: errno {}", n, offset, node, rt.getLastError());
        return false;
      }
      return true;
    }
  }
}
