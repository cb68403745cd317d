package org.flowfs.it.api;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.flowfs.client.api.AccessMode;
import org.flowfs.client.api.FlowFile;
import org.flowfs.client.api.Hints;
import org.flowfs.client.api.Memory;
import org.flowfs.client.api.View;
import org.flowfs.client.api.Whence;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Layout;
import org.flowfs.common.datarep.NativeOrder;
import org.flowfs.common.datarep.Typemap;
import org.flowfs.common.request.Request;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The file handle of the typed API: modes, hints, positions, atomic seek-and-read, async, size. */
class FlowFileTest {
  static ApiCluster c;
  static final AtomicInteger files = new AtomicInteger();
  static final EnumSet<AccessMode> NEW = EnumSet.of(AccessMode.CREATE, AccessMode.READ_WRITE);

  @BeforeAll
  static void up(@TempDir Path dir) throws Exception {
    c = new ApiCluster(dir);
  }

  @AfterAll
  static void down() {
    if (c != null) {
      c.close();
    }
  }

  static String path() {
    return "/file-" + files.incrementAndGet();
  }

  /** {@code n} native ints {@code first, first+1, ...}. */
  static ByteBuf ints(int first, int n) {
    ByteBuf b = Unpooled.buffer(4 * n, 4 * n).writeZero(4 * n);
    for (int i = 0; i < n; i++) {
      NativeOrder.setInt(b, 4 * i, first + i);
    }
    return b;
  }

  static FsException fails(Errno errno, org.junit.jupiter.api.function.Executable e) {
    FsException x = assertThrows(FsException.class, e);
    assertEquals(errno, x.errno(), x.getMessage());
    return x;
  }

  @Test
  void defaultView_isBytesFromOffsetZero_andThePointerCountsBytes() {
    try (FlowFile f = c.io.open(path(), NEW, Hints.NONE)) {
      assertEquals(View.BYTES, f.view());
      assertEquals(0, f.position());
      f.write(Memory.of("hello".getBytes(), 5, Request.BYTE));
      f.write(Memory.of(" world".getBytes(), 6, Request.BYTE));
      assertEquals(11, f.position());
      assertEquals(11, f.size());
      byte[] back = new byte[11];
      assertEquals(11, f.readAt(0, Memory.of(back, 11, Request.BYTE)));
      assertEquals("hello world", new String(back));
      assertEquals(7, f.byteOffset(7));
    }
  }

  @Test
  void pointer_seek_andByteOffset_countEtypesOfTheView() {
    // filetype: ints at 0 and 12 of every 16 bytes; the view starts at byte 8
    View v = View.of(8, Request.INT32, Request.resized(0, 16, Request.vector(2, 1, 3, Request.INT32)));
    try (FlowFile f = c.io.open(path(), NEW, Hints.NONE)) {
      f.setView(v);
      assertEquals(6 * 4, f.write(Memory.of(ints(0, 6), 6, Request.INT32)));
      assertEquals(6, f.position());
      assertEquals(8 + 16 * 2 + 12 + 4, f.size());
      assertEquals(8, f.byteOffset(0));
      assertEquals(20, f.byteOffset(1));
      assertEquals(24, f.byteOffset(2));
      assertEquals(36, f.byteOffset(3));
      assertEquals(4, f.seek(-2, Whence.CUR));
      assertEquals(6, f.seek(0, Whence.END));
      assertEquals(1, f.seek(1, Whence.SET));
      ByteBuf two = Unpooled.buffer(8, 8).writeZero(8);
      f.read(Memory.of(two, 2, Request.INT32));
      assertEquals(1, NativeOrder.getInt(two, 0));
      assertEquals(2, NativeOrder.getInt(two, 4));
      assertEquals(3, f.position());
      assertThrows(IllegalArgumentException.class, () -> f.seek(-4, Whence.SET));

      // the end of a file that ends inside the view's pattern
      f.setSize(22); // bytes 8-11 and 20-21 of the view lie before the end: 6 bytes, 1.5 ints
      assertEquals(3, f.position(), "setSize does not move the pointer");
      assertEquals(2, f.seek(0, Whence.END), "the partial int counts");
      assertThrows(IllegalArgumentException.class, () -> f.setView(View.of(0, Request.INT32, Request.INT16)));
    }
  }

  @Test
  void seekRead_isOneOperation_underConcurrentSeeks() throws Exception {
    int n = 4096;
    try (FlowFile f = c.io.open(path(), NEW, Hints.NONE)) {
      f.setView(View.of(0, Request.INT32, Request.INT32));
      f.writeAt(0, Memory.of(ints(0, n), n, Request.INT32));
      ExecutorService pool = Executors.newFixedThreadPool(8);
      try {
        List<Future<Integer>> results = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
          int seed = t;
          results.add(pool.submit(() -> {
            Random rnd = new Random(seed);
            ByteBuf one = Unpooled.buffer(4, 4).writeZero(4);
            int wrong = 0;
            for (int i = 0; i < 150; i++) {
              int at = rnd.nextInt(n);
              if (seed % 2 == 0) {
                f.seekRead(at, Whence.SET, Memory.of(one, 1, Request.INT32));
                wrong += NativeOrder.getInt(one, 0) == at ? 0 : 1;
              } else {
                f.seek(rnd.nextInt(n), Whence.SET); // others move the pointer all the time
              }
            }
            return wrong;
          }));
        }
        for (Future<Integer> r : results) {
          assertEquals(0, r.get(60, TimeUnit.SECONDS), "reads that got another seek's position");
        }
      } finally {
        pool.shutdownNow();
      }
      // with a new view in the same operation (seed 004's layout + seek + read)
      ByteBuf two = Unpooled.buffer(8, 8).writeZero(8);
      View everyTenth = View.of(0, Request.INT32, Request.resized(0, 40, Request.INT32));
      f.seekRead(everyTenth, 3, Whence.SET, Memory.of(two, 2, Request.INT32));
      assertEquals(30, NativeOrder.getInt(two, 0));
      assertEquals(40, NativeOrder.getInt(two, 4));
      assertEquals(everyTenth, f.view());
      assertEquals(5, f.position());
    }
  }

  @Test
  void asyncOperations_manyInFlight_completeInAnyOrder() throws Exception {
    String p = path();
    CountDownLatch gate = new CountDownLatch(1);
    // a datarep whose write conversion waits at a gate: the operation using it cannot complete
    c.io.datareps().register("gated", null, (user, type, count, file, pos, state) -> {
      try {
        state.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      Typemap.forEach(type, pos, count, (off, e) -> {
        file.writeBytes(user, (int) off, e.size());
        return true;
      });
    }, (t, s) -> (long) t.size(), gate);
    try (FlowFile slow = c.io.open(p, NEW, Hints.NONE); FlowFile f = c.io.open(p, AccessMode.READ_WRITE)) {
      slow.setView(View.of(1 << 20, Request.INT32, Request.INT32, "gated"));
      CompletableFuture<Long> first = slow.writeAtAsync(0, Memory.of(ints(-100, 100), 100, Request.INT32));

      f.setView(View.of(0, Request.INT32, Request.resized(0, 16, Request.INT32))); // every 4th int
      int ops = 32;
      int per = 1000;
      List<CompletableFuture<Long>> writes = new ArrayList<>();
      for (int k = 0; k < ops; k++) {
        writes.add(f.writeAtAsync((long) k * per, Memory.of(ints(k * per, per), per, Request.INT32)));
      }
      CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
      List<CompletableFuture<Long>> reads = new ArrayList<>();
      List<ByteBuf> bufs = new ArrayList<>();
      for (int k = ops - 1; k >= 0; k--) {
        ByteBuf b = Unpooled.buffer(4 * per, 4 * per).writeZero(4 * per);
        bufs.add(b);
        reads.add(f.readAtAsync((long) k * per, Memory.of(b, per, Request.INT32)));
      }
      CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
      for (int j = 0; j < ops; j++) {
        int k = ops - 1 - j;
        assertEquals(4L * per, reads.get(j).get());
        for (int i = 0; i < per; i += 97) {
          assertEquals(k * per + i, NativeOrder.getInt(bufs.get(j), 4 * i));
        }
      }
      assertFalse(first.isDone(), "the first operation is still converting: the later ones did not wait for it");
      gate.countDown();
      assertEquals(400L, first.get(30, TimeUnit.SECONDS));
    }
  }

  @Test
  void asyncPointerOperations_reserveTheirPlaceAtOnce() throws Exception {
    try (FlowFile f = c.io.open(path(), NEW, Hints.NONE)) {
      f.setView(View.of(0, Request.INT32, Request.INT32));
      List<CompletableFuture<Long>> w = new ArrayList<>();
      for (int k = 0; k < 16; k++) {
        w.add(f.writeAsync(Memory.of(ints(100 * k, 100), 100, Request.INT32)));
      }
      assertEquals(1600, f.position());
      CompletableFuture.allOf(w.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
      ByteBuf all = Unpooled.buffer(6400, 6400).writeZero(6400);
      assertEquals(6400, f.readAt(0, Memory.of(all, 1600, Request.INT32)));
      for (int i = 0; i < 1600; i++) {
        assertEquals(i, NativeOrder.getInt(all, 4 * i));
      }
    }
  }

  @Test
  void accessModes_areEnforced() {
    String p = path();
    c.io.open(p, NEW, Hints.NONE).close();
    fails(Errno.EEXIST, () -> c.io.open(p, EnumSet.of(AccessMode.CREATE, AccessMode.EXCLUSIVE, AccessMode.WRITE_ONLY), Hints.NONE));
    fails(Errno.ENOENT, () -> c.io.open(p + "-missing", AccessMode.READ_WRITE));
    assertThrows(IllegalArgumentException.class, () -> c.io.open(p, AccessMode.READ_ONLY, AccessMode.CREATE));
    assertThrows(IllegalArgumentException.class, () -> c.io.open(p, AccessMode.READ_ONLY, AccessMode.WRITE_ONLY));
    try (FlowFile r = c.io.open(p, AccessMode.READ_ONLY)) {
      fails(Errno.EBADF, () -> r.writeAt(0, Memory.of(new byte[4], 4, Request.BYTE)));
      fails(Errno.EBADF, () -> r.setSize(0));
    }
    try (FlowFile w = c.io.open(p, AccessMode.WRITE_ONLY)) {
      w.writeAt(0, Memory.of(new byte[100], 100, Request.BYTE));
      fails(Errno.EBADF, () -> w.readAt(0, Memory.of(new byte[4], 4, Request.BYTE)));
      w.close();
      fails(Errno.EBADF, () -> w.writeAt(0, Memory.of(new byte[4], 4, Request.BYTE)));
    }
    try (FlowFile a = c.io.open(p, AccessMode.WRITE_ONLY, AccessMode.APPEND)) {
      assertEquals(100, a.position());
      a.write(Memory.of(new byte[10], 10, Request.BYTE));
      assertEquals(110, a.size());
      a.setView(View.of(0, Request.INT32, Request.INT32));
      assertEquals(28, a.position(), "append: a new view starts at its end of file");
    }
    try (FlowFile d = c.io.open(p, AccessMode.READ_WRITE, AccessMode.DELETE_ON_CLOSE)) {
      assertEquals(110, d.size());
    }
    fails(Errno.ENOENT, () -> c.client.getattr(p));
  }

  @Test
  void hints_unknownAreIgnoredAndReported_knownSetTheLayout() {
    String p = path();
    Hints h = Hints.of(Hints.STRIPING_FACTOR, "2", Hints.STRIPING_UNIT, "4096", "access_style", "read_once",
        Hints.CB_BUFFER_SIZE, "lots", Hints.DATAREP_BUFFER_SIZE, "1024");
    try (FlowFile f = c.io.open(p, NEW, h)) {
      assertEquals("unknown hint", f.ignoredHints().get("access_style"));
      assertTrue(f.ignoredHints().containsKey(Hints.CB_BUFFER_SIZE), f.ignoredHints().toString());
      assertEquals(2, f.ignoredHints().size());
      assertEquals("2", f.hints().get(Hints.STRIPING_FACTOR).orElseThrow());
      assertEquals("4096", f.hints().get(Hints.STRIPING_UNIT).orElseThrow());
      assertEquals("1024", f.hints().get(Hints.DATAREP_BUFFER_SIZE).orElseThrow());
      assertEquals(Long.toString(16 << 20), f.hints().get(Hints.CB_BUFFER_SIZE).orElseThrow());
      Layout layout = c.client.getattr(p).layout();
      assertEquals(2, layout.serverCount());
      assertEquals(List.of(4096L), layout.dist().params());
      assertEquals("unknown hint", f.setHints(Hints.of("nonsense", "1", Hints.CB_NODES, "3")).get("nonsense"));
      assertEquals("1", f.hints().get(Hints.CB_NODES).orElseThrow(), "at most the group size");
    }
    try (FlowFile f = c.io.open(p, NEW, Hints.of(Hints.STRIPING_FACTOR, "99"))) {
      assertTrue(f.ignoredHints().get(Hints.STRIPING_FACTOR).contains("layout was fixed"));
      assertEquals("2", f.hints().get(Hints.STRIPING_FACTOR).orElseThrow());
    }
    try (FlowFile f = c.io.open(path(), NEW, Hints.of(Hints.STRIPING_FACTOR, "99"))) {
      assertEquals("4", f.hints().get(Hints.STRIPING_FACTOR).orElseThrow(), "no more servers than there are");
      assertTrue(f.ignoredHints().containsKey(Hints.STRIPING_FACTOR));
    }
  }

  @Test
  void setSize_preallocate_andSync() {
    try (FlowFile f = c.io.open(path(), NEW, Hints.NONE)) {
      f.writeAt(0, Memory.of(new byte[] {1, 2, 3}, 3, Request.BYTE));
      f.setSize(1000);
      assertEquals(1000, f.size());
      f.preallocate(300_000);
      assertEquals(300_000, f.size());
      f.preallocate(10);
      assertEquals(300_000, f.size(), "preallocate never shrinks");
      byte[] back = new byte[300_000];
      f.readAt(0, Memory.of(back, back.length, Request.BYTE));
      byte[] want = new byte[300_000];
      want[0] = 1;
      want[1] = 2;
      want[2] = 3;
      assertArrayEquals(want, back);
      f.sync();
      f.setSize(2);
      assertEquals(2, f.size());
      assertEquals(2, f.readAt(0, Memory.of(back, 10, Request.BYTE)), "a read stops at the end of the file");
    }
  }

  @Test
  void buffers_nioHeapDirectReadOnly_andTheirOrigins() {
    try (FlowFile f = c.io.open(path(), NEW, Hints.NONE)) {
      ByteBuffer src = ByteBuffer.allocate(20);
      for (int i = 0; i < 20; i++) {
        src.put((byte) i);
      }
      src.position(5);
      f.writeAt(0, Memory.bytes(src.asReadOnlyBuffer())); // bytes 5..19, origin at the position
      assertEquals(5, src.position(), "indices do not move");
      ByteBuffer dst = ByteBuffer.allocateDirect(32);
      dst.position(2);
      assertEquals(15, f.readAt(0, Memory.of(dst, 15, Request.BYTE)));
      for (int i = 0; i < 15; i++) {
        assertEquals(5 + i, dst.get(2 + i));
      }
      assertThrows(IllegalArgumentException.class, () -> f.readAt(0, Memory.bytes(src.asReadOnlyBuffer())));
      assertThrows(IllegalArgumentException.class, () -> Memory.of(dst, 9, Request.INT32), "past the limit");
      ByteBuf withReader = Unpooled.buffer(16).writeZero(16).readerIndex(4);
      f.readAt(1, Memory.of(withReader, 3, Request.BYTE));
      assertEquals(6, withReader.getByte(4));
      assertSame(4, withReader.readerIndex());
    }
  }
}
