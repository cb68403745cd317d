package org.flowfs.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.wire.LeakCheck;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * What every {@link BStreamStore} must do, whatever keeps the bytes (STYLE.md section 14): run by a
 * subclass per implementation, which says how to open a store on a directory.
 */
@ExtendWith(LeakCheck.class)
abstract class BStreamStoreContract {
  /** The server number the store under test owns (I/O server 2). */
  static final int SERVER = Handle.serverOfIo(2);

  @TempDir
  Path dir;
  BStreamStore store;

  /** A store of server number {@code server} keeping its datafiles under {@code dir}. */
  protected abstract BStreamStore open(Path dir, int server) throws Exception;

  @BeforeEach
  void openStore() throws Exception {
    store = open(dir, SERVER);
  }

  @AfterEach
  void closeStore() {
    if (store != null) {
      store.close();
    }
  }

  static Handle h(long local) {
    return Handle.of(SERVER, local);
  }

  /** A flow buffer's pieces land at their offsets, each with its own bytes; the buffer stays as it was. */
  @Test
  void writePieces_putsEachPieceAtItsOffset() {
    byte[] bytes = new byte[3 * 4096];
    new Random(11).nextBytes(bytes);
    org.flowfs.common.flow.Pieces pieces = new org.flowfs.common.flow.Pieces(4);
    pieces.add(40_960, 4096); // out of order, as a gathered random write is
    pieces.add(0, 4096);
    pieces.add(8192, 4096);
    ByteBuf src = ByteBufAllocator.DEFAULT.directBuffer(bytes.length).writeBytes(bytes);
    try {
      store.write(h(7), pieces, src);
      assertEquals(bytes.length, src.readableBytes(), "the caller's buffer is left as it was");
    } finally {
      src.release();
    }
    assertEquals(40_960 + 4096, store.size(h(7)));
    long[] at = {40_960, 0, 8192};
    for (int i = 0; i < at.length; i++) {
      ByteBuf back = ByteBufAllocator.DEFAULT.buffer(4096);
      try {
        assertEquals(4096, store.read(h(7), at[i], 4096, back));
        assertArrayEquals(java.util.Arrays.copyOfRange(bytes, i * 4096, (i + 1) * 4096), ByteBufUtil.getBytes(back), "piece " + i);
      } finally {
        back.release();
      }
    }
    ByteBuf hole = ByteBufAllocator.DEFAULT.buffer(4096);
    try {
      store.read(h(7), 4096, 4096, hole);
      assertArrayEquals(new byte[4096], ByteBufUtil.getBytes(hole), "between pieces: a hole");
    } finally {
      hole.release();
    }
  }

  @Test
  void read_neverWrittenDatafile_isEmpty() {
    ByteBuf dst = ByteBufAllocator.DEFAULT.heapBuffer();
    try {
      dst.writeByte(9);
      assertEquals(0, store.read(h(1), 0, 100, dst));
      assertEquals(0, store.read(h(1), 1L << 40, 100, dst));
      assertEquals(1, dst.readableBytes(), "nothing appended");
    } finally {
      dst.release();
    }
    assertEquals(0, store.size(h(1)));
    assertEquals(List.of(), store.list(0, 10), "reading creates nothing");
    assertEquals(0, store.count());
  }

  @Test
  void write_thenRead_atOffsets() {
    byte[] a = bytes(1, 1000);
    byte[] b = bytes(2, 300);
    assertEquals(1000, write(h(1), 0, a));
    assertEquals(1000, write(h(1), 200, b), "an overwrite inside does not grow");
    byte[] expect = a.clone();
    System.arraycopy(b, 0, expect, 200, b.length);
    assertArrayEquals(expect, read(h(1), 0, 1000));
    assertArrayEquals(slice(expect, 150, 400), read(h(1), 150, 400));
    assertArrayEquals(slice(expect, 999, 1), read(h(1), 999, 1));
    assertEquals(1000, store.size(h(1)));
    assertEquals(1, store.count());
  }

  @Test
  void read_acrossTheEnd_isShort() {
    write(h(1), 0, bytes(3, 100));
    assertArrayEquals(slice(bytes(3, 100), 60, 40), read(h(1), 60, 500));
    assertArrayEquals(new byte[0], read(h(1), 100, 10));
    assertArrayEquals(new byte[0], read(h(1), 5000, 10));
  }

  @Test
  void read_appendsAtTheWriterIndexAndReturnsTheCount() {
    write(h(1), 0, bytes(4, 64));
    ByteBuf dst = ByteBufAllocator.DEFAULT.directBuffer(4);
    try {
      dst.writeInt(0x01020304);
      assertEquals(64, store.read(h(1), 0, 64, dst));
      assertEquals(68, dst.readableBytes());
      assertEquals(0x01020304, dst.readInt());
      assertArrayEquals(bytes(4, 64), ByteBufUtil.getBytes(dst));
    } finally {
      dst.release();
    }
  }

  @Test
  void write_consumesTheSourceWithoutReleasingIt() {
    ByteBuf src = ByteBufAllocator.DEFAULT.directBuffer(16).writeLong(1).writeLong(2);
    try {
      src.readLong(); // only the readable bytes are written
      assertEquals(18, store.write(h(1), 10, src));
      assertEquals(0, src.readableBytes());
      assertEquals(1, src.refCnt());
    } finally {
      src.release();
    }
    byte[] got = read(h(1), 10, 8);
    assertArrayEquals(new byte[] {0, 0, 0, 0, 0, 0, 0, 2}, got);
  }

  @Test
  void write_pastTheEnd_leavesAHoleOfZeros() {
    write(h(1), 0, bytes(5, 10));
    long far = (1L << 20) + 3;
    assertEquals(far + 10, write(h(1), far, bytes(6, 10)));
    assertEquals(far + 10, store.size(h(1)));
    byte[] hole = read(h(1), 10, (int) (far - 10));
    assertEquals(far - 10, hole.length);
    for (byte x : hole) {
      assertEquals(0, x);
    }
    assertArrayEquals(bytes(6, 10), read(h(1), far, 10));
    // a first write far out: all zeros before it
    write(h(2), 4096, bytes(7, 1));
    assertArrayEquals(new byte[4096], read(h(2), 0, 4096));
  }

  @Test
  void write_empty_createsTheDatafile() {
    assertEquals(0, write(h(1), 0, new byte[0]));
    assertEquals(List.of(h(1)), store.list(0, 10));
    assertEquals(0, store.size(h(1)));
  }

  @Test
  void truncate_growsWithZerosAndShrinks() {
    write(h(1), 0, bytes(8, 100));
    store.truncate(h(1), 40);
    assertEquals(40, store.size(h(1)));
    assertArrayEquals(slice(bytes(8, 100), 0, 40), read(h(1), 0, 100));
    store.truncate(h(1), 5000);
    assertEquals(5000, store.size(h(1)));
    byte[] all = read(h(1), 0, 5000);
    assertArrayEquals(slice(bytes(8, 100), 0, 40), slice(all, 0, 40));
    assertArrayEquals(new byte[4960], slice(all, 40, 4960), "bytes cut off do not come back");
    store.truncate(h(1), 5000);
    assertEquals(5000, store.size(h(1)), "to the same size: unchanged");
    store.truncate(h(1), 0);
    assertEquals(0, store.size(h(1)));
    assertArrayEquals(new byte[0], read(h(1), 0, 10));
  }

  @Test
  void truncate_neverWrittenDatafile_createsIt() {
    store.truncate(h(3), 1234);
    assertEquals(1234, store.size(h(3)));
    assertArrayEquals(new byte[1234], read(h(3), 0, 2000));
    store.truncate(h(4), 0);
    assertEquals(List.of(h(3), h(4)), store.list(0, 10));
  }

  @Test
  void remove_thenTheDatafileIsGone() {
    write(h(1), 0, bytes(9, 100));
    write(h(2), 0, bytes(10, 100));
    assertEquals(2, store.count());
    store.remove(h(1));
    assertEquals(0, store.size(h(1)));
    assertArrayEquals(new byte[0], read(h(1), 0, 100));
    assertEquals(List.of(h(2)), store.list(0, 10));
    assertEquals(1, store.count());
    // written again: a new, empty datafile
    write(h(1), 10, bytes(11, 5));
    assertEquals(15, store.size(h(1)));
    assertArrayEquals(new byte[10], read(h(1), 0, 10));
    assertEquals(2, store.count());
  }

  @Test
  void remove_missingDatafile_isFine() {
    store.remove(h(77));
    store.remove(h(77));
    assertEquals(0, store.count());
    write(h(1), 0, bytes(1, 1));
    store.remove(h(1));
    store.remove(h(1));
    assertEquals(0, store.count());
  }

  @Test
  void list_inHandleOrderAfterACursor() {
    // locals that share a low byte, and locals on either side of it
    long[] locals = {1, 2, 255, 256, 257, 0x1_0000_0001L, 513, 3, 1L << 40, Handle.LOCAL_MASK};
    for (long l : locals) {
      write(h(l), 0, bytes((int) l, 1));
    }
    List<Handle> all = store.list(0, 100);
    List<Handle> sorted = new ArrayList<>(all);
    sorted.sort(null);
    assertEquals(sorted, all, "handle order");
    assertEquals(locals.length, all.size());
    // pages of 3, each starting after the last handle of the previous one
    List<Handle> paged = new ArrayList<>();
    long cursor = 0;
    for (;;) {
      List<Handle> page = store.list(cursor, 3);
      assertTrue(page.size() <= 3);
      if (page.isEmpty()) {
        break;
      }
      paged.addAll(page);
      cursor = page.get(page.size() - 1).id();
    }
    assertEquals(all, paged);
    assertEquals(List.of(), store.list(h(Handle.LOCAL_MASK).id(), 10));
    assertEquals(all.subList(1, 2), store.list(all.get(0).id(), 1));
  }

  @Test
  void sync_existingAndMissingDatafiles() {
    write(h(1), 0, bytes(1, 100));
    store.sync(h(1), true);
    store.sync(h(1), false);
    store.sync(h(2), false);
    assertEquals(List.of(h(1)), store.list(0, 10), "sync of a missing datafile creates nothing");
  }

  @Test
  void space_isConsistent() {
    org.flowfs.common.StorageSpace s = store.space();
    assertTrue(s.total() > 0);
    assertTrue(s.free() >= 0 && s.free() <= s.total());
    assertTrue(s.available() >= 0 && s.available() <= s.free());
    assertTrue(s.device() != 0, "a store on disk names its file system");
  }

  @Test
  void reopen_keepsDatafilesAndCount() throws Exception {
    write(h(1), 0, bytes(1, 100));
    write(h(2), 7, bytes(2, 10));
    store.close();
    store = open(dir, SERVER);
    assertEquals(2, store.count());
    assertArrayEquals(bytes(1, 100), read(h(1), 0, 100));
    assertEquals(17, store.size(h(2)));
  }

  @Test
  void handleOfAnotherServer_isRefused() {
    Handle other = Handle.of(SERVER + 1, 1);
    Handle meta = Handle.of(Handle.META_SERVER, 1);
    for (Handle x : new Handle[] {other, meta}) {
      ByteBuf b = ByteBufAllocator.DEFAULT.heapBuffer(8).writeLong(1);
      try {
        assertThrows(FsException.class, () -> store.write(x, 0, b));
        assertThrows(FsException.class, () -> store.read(x, 0, 1, b));
      } finally {
        b.release();
      }
      assertThrows(FsException.class, () -> store.truncate(x, 1));
      assertThrows(FsException.class, () -> store.size(x));
      assertThrows(FsException.class, () -> store.remove(x));
      assertThrows(FsException.class, () -> store.sync(x, true));
    }
    assertEquals(List.of(), store.list(0, 10));
  }

  @Test
  void write_concurrentWritersToDistinctRanges_allLand() throws Exception {
    int threads = 8;
    int chunks = 64;
    int chunk = 4096 + 3; // not aligned to pages
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int me = t;
        done.add(pool.submit((Callable<Void>) () -> {
          // writer t owns chunks t, t + threads, ... of two datafiles, interleaved with the others
          for (int i = 0; i < chunks; i++) {
            long at = (long) (i * threads + me) * chunk;
            write(h(1), at, bytes((int) at, chunk));
            write(h(2 + (i % 2)), at, bytes((int) at + 1, chunk));
          }
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    long total = (long) threads * chunks * chunk;
    assertEquals(total, store.size(h(1)));
    byte[] all = read(h(1), 0, (int) total);
    for (long at = 0; at < total; at += chunk) {
      assertArrayEquals(bytes((int) at, chunk), slice(all, (int) at, chunk), "chunk at " + at);
    }
  }

  // ---- helpers --------------------------------------------------------------------------------

  /** {@code n} bytes that depend on {@code seed}. */
  static byte[] bytes(int seed, int n) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  static byte[] slice(byte[] b, int from, int n) {
    byte[] s = new byte[n];
    System.arraycopy(b, from, s, 0, n);
    return s;
  }

  long write(Handle h, long offset, byte[] data) {
    ByteBuf src = ByteBufAllocator.DEFAULT.directBuffer(data.length).writeBytes(data);
    try {
      return store.write(h, offset, src);
    } finally {
      src.release();
    }
  }

  byte[] read(Handle h, long offset, int length) {
    ByteBuf dst = ByteBufAllocator.DEFAULT.directBuffer(length);
    try {
      int n = store.read(h, offset, length, dst);
      assertEquals(n, dst.readableBytes(), "the count is what was appended");
      return ByteBufUtil.getBytes(dst);
    } finally {
      dst.release();
    }
  }
}
