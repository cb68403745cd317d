package org.flowfs.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.flowfs.common.Attr;
import org.flowfs.common.DistSpec;
import org.flowfs.common.FileType;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.wire.MetaOp.SetattrReq;
import org.flowfs.common.wire.LeakCheck;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** {@link FileState}: one client's view of an open file, over a {@link MemoryDataPath}. */
@ExtendWith(LeakCheck.class)
class FileStateTest {
  private static final Layout LAYOUT = StripeMapTest.layout(DistSpec.of("simple_stripe", 4096), 2);

  private final MemoryDataPath path = new MemoryDataPath();
  private FileState st;

  private FileState open(long size) {
    Attr a = attr(size, 1000);
    st = new FileState(a, path, 64 * 1024, 128 * 1024, 0, Duration.ofSeconds(5), ByteBufAllocator.DEFAULT, Runnable::run);
    st.opened(a);
    return st;
  }

  /** A file of 300 bytes 'a' on the servers, opened for reading with its first 4 KiB read since the open began. */
  private FileState openWithFirstBytes() {
    path.store(LAYOUT, 0, WriteBehindTest.fill('a', 300));
    Attr a = attr(300, 1000);
    st = new FileState(a, path, 64 * 1024, 128 * 1024, 0, Duration.ofSeconds(5), ByteBufAllocator.DEFAULT, Runnable::run);
    st.opened(a, ReadAhead.first(path, LAYOUT, 4096, ByteBufAllocator.DEFAULT));
    return st;
  }

  @AfterEach
  void cleanUp() {
    // close every open, which releases what the file state holds
    for (int i = 0; st != null && i < 10 && !st.closed(); i++) {
      // not the last open yet
    }
    path.close();
  }

  @Test
  void read_seesThisClientsBufferedWrites() {
    FileState f = open(0);
    write(f, 100, WriteBehindTest.fill('A', 50), 2000);
    assertEquals(150, f.size());
    byte[] got = read(f, 0, 1000);
    byte[] expect = new byte[150];
    Arrays.fill(expect, 100, 150, (byte) 'A');
    assertArrayEquals(expect, got, "a read flushes first and stops at the size");
  }

  @Test
  void read_atOrPastTheEnd_isEmpty() {
    FileState f = open(10);
    path.store(LAYOUT, 0, WriteBehindTest.fill('x', 10));
    assertArrayEquals(new byte[0], read(f, 10, 5));
    assertArrayEquals(new byte[0], read(f, 1 << 20, 5));
    assertArrayEquals(WriteBehindTest.fill('x', 4), read(f, 6, 100));
  }

  @Test
  void write_invalidatesReadAhead() {
    FileState f = open(1000);
    path.store(LAYOUT, 0, WriteBehindTest.fill('a', 1000));
    assertArrayEquals(WriteBehindTest.fill('a', 10), read(f, 0, 10)); // window now cached
    write(f, 5, WriteBehindTest.fill('b', 2), 3000);
    byte[] expect = WriteBehindTest.fill('a', 10);
    expect[5] = 'b';
    expect[6] = 'b';
    assertArrayEquals(expect, read(f, 0, 10));
  }

  @Test
  void opened_again_seesWhatAnotherClientWrote() {
    FileState f = open(100);
    path.store(LAYOUT, 0, WriteBehindTest.fill('a', 100));
    assertArrayEquals(WriteBehindTest.fill('a', 100), read(f, 0, 100));
    path.store(LAYOUT, 0, WriteBehindTest.fill('c', 200)); // another client wrote and closed
    f.opened(attr(200, 5000)); // close-to-open
    assertEquals(200, f.size());
    assertArrayEquals(WriteBehindTest.fill('c', 200), read(f, 0, 200));
    assertFalse(f.closed(), "one open is left");
  }

  @Test
  void opened_withTheFirstBytes_servesTheReadWithoutAnotherCall() {
    openWithFirstBytes();
    assertEquals(1, path.reads().size());
    assertArrayEquals(WriteBehindTest.fill('a', 300), read(st, 0, 4096));
    assertArrayEquals(WriteBehindTest.fill('a', 100), read(st, 200, 4096));
    assertEquals(1, path.reads().size(), "both reads served by the bytes read at open");
  }

  /** The whole file, for the kernel's page cache at the open: while the open that brought it is the only one. */
  @Test
  void whole_isTheFirstBytes_whileTheyAreTheFileAndItsOnlyOpenHasThem() {
    openWithFirstBytes();
    ByteBuf whole = st.whole();
    try {
      assertEquals(300, whole.readableBytes(), "the file's bytes, not the window's 4 KiB");
      assertArrayEquals(WriteBehindTest.fill('a', 300), ByteBufUtil.getBytes(whole));
    } finally {
      whole.release();
    }
    st.opened(attr(300, 1000)); // a second open: the kernel may have the file's pages through it
    assertNull(st.whole());
    assertFalse(st.closed());
    assertNull(st.whole(), "the second open dropped the first bytes (close-to-open)");
  }

  @Test
  void whole_isNothing_onceWritten() {
    openWithFirstBytes();
    ByteBuf whole = st.whole();
    assertNotNull(whole);
    whole.release();
    write(st, 0, WriteBehindTest.fill('w', 10), 2000);
    assertNull(st.whole(), "written since");
  }

  @Test
  void whole_isNothing_withoutFirstBytesThatHoldTheFile() {
    FileState plain = open(300);
    assertNull(plain.whole(), "an open without first bytes");
    assertTrue(plain.closed());
    FileState f = open(300);
    ReadAhead.Window first = ReadAhead.first(path, LAYOUT, 4096, ByteBufAllocator.DEFAULT);
    f.opened(attr(9000, 2000), first); // the file grew past them meanwhile
    assertNull(f.whole());
    assertFalse(f.closed());
  }

  @Test
  void opened_withFirstBytesShorterThanTheFile_dropsThem() {
    path.store(LAYOUT, 0, WriteBehindTest.fill('a', 300));
    FileState f = open(300);
    ReadAhead.Window first = ReadAhead.first(path, LAYOUT, 4096, ByteBufAllocator.DEFAULT);
    path.store(LAYOUT, 0, WriteBehindTest.fill('b', 9000)); // another client wrote and closed since
    f.opened(attr(9000, 2000), first);
    assertArrayEquals(WriteBehindTest.fill('b', 9000), read(f, 0, 9000), "read from the servers, all of it");
    assertFalse(f.closed(), "one open is left");
  }

  @Test
  void opened_withFirstBytes_whileThisClientHasUnrecordedWrites_dropsThem() {
    FileState f = open(0);
    write(f, 0, WriteBehindTest.fill('w', 10), 2000); // buffered here, not on the servers yet
    ReadAhead.Window first = ReadAhead.first(path, LAYOUT, 4096, ByteBufAllocator.DEFAULT);
    f.opened(attr(0, 1000), first);
    assertArrayEquals(WriteBehindTest.fill('w', 10), read(f, 0, 100), "this client's writes, not what was read");
    assertFalse(f.closed(), "one open is left");
  }

  @Test
  void flushWrites_recordsSizeAndMtimeUntilRecorded() {
    FileState f = open(0);
    assertNull(f.flushWrites(), "nothing written: nothing to record");
    write(f, 0, new byte[300], 7000);
    FileState.Recording r = f.flushWrites();
    assertEquals(new FileState.Recording(300, 7000, false, null), r);
    Attr stale = attr(0, 1000);
    Attr shown = f.overlay(stale);
    assertEquals(300, shown.size());
    assertEquals(7000, shown.mtimeNs());
    f.recorded(r);
    assertNull(f.flushWrites());
    Attr recorded = attr(300, 7000);
    assertSame(recorded, f.overlay(recorded));
  }

  @Test
  void unprivilegedWrite_recordingClearsSetidBits_shownClearedUntilThen() {
    FileState f = open(0);
    Attr setid = new Attr(Handle.of(0, 42), FileType.REGULAR, 06775, 1, 1, 1, 0, 1000, 1000, 1000, 0, LAYOUT);
    write(f, 0, new byte[10], 2000); // root's write keeps them
    assertEquals(06775, f.overlay(setid).mode());
    FileState.Recording byRoot = f.flushWrites();
    assertFalse(byRoot.killSetid());
    ByteBuf src = ByteBufAllocator.DEFAULT.heapBuffer(10).writeZero(10);
    try {
      f.write(10, src, 3000, true);
    } finally {
      src.release();
    }
    assertEquals(0775, f.overlay(setid).mode(), "set-user-ID, and set-group-ID with group execute");
    FileState.Recording r = f.flushWrites();
    assertEquals(new FileState.Recording(20, 3000, true, null), r);
    f.recorded(byRoot);
    assertEquals(r, f.pendingRecording(), "an older recording leaves the clearing pending");
    f.recorded(r);
    assertNull(f.pendingRecording());
    Attr cleared = setid.withMode(0775).withSizeAndTimes(20, 3000, 3000);
    assertSame(cleared, f.overlay(cleared));
  }

  @Test
  void newFile_defersModeOwnerAndTimes_toTheRecordingOfItsSize() {
    FileState f = open(0);
    f.created();
    Attr base = attr(0, 1000);
    write(f, 0, new byte[100], 2000);
    assertTrue(f.defer(f.overlay(base), SetattrReq.MTIME, 0, 0, 0, 0, 500), "tar's futimens");
    assertTrue(f.defer(f.overlay(base), SetattrReq.UID | SetattrReq.GID | SetattrReq.KILL_SUID, 0, 7, 8, 0, 0));
    assertTrue(f.defer(f.overlay(base), SetattrReq.MODE, 0600, 0, 0, 0, 0));
    Attr shown = f.overlay(base);
    assertEquals(0600, shown.mode());
    assertEquals(7, shown.uid());
    assertEquals(8, shown.gid());
    assertEquals(500, shown.mtimeNs(), "the time set after the write");
    assertEquals(100, shown.size());
    FileState.Recording r = f.flushWrites();
    SetattrReq q = r.deferred().record(f.handle, r.size(), r.killSetid(), 0, 0, 0, r.mtimeNs());
    assertEquals(SetattrReq.SIZE_GROW | SetattrReq.MTIME | SetattrReq.MODE | SetattrReq.UID | SetattrReq.GID
        | SetattrReq.KILL_SUID, q.mask());
    assertEquals(0600, q.mode());
    assertEquals(7, q.uid());
    assertEquals(500, q.mtimeNs());
    assertEquals(100, q.size());
    f.recorded(r);
    assertNull(f.pendingRecording(), "all recorded in one change");
    assertFalse(f.defer(f.overlay(base), SetattrReq.MODE, 0644, 0, 0, 0, 0), "once recorded, changes go at once");
  }

  @Test
  void lastClose_endsDeferring_andKeepsAChangeDeferredBeforeIt() {
    // touch f; chmod 600 f: the kernel sends the release of touch's open after close returned, so
    // the chmod may come between the release's flush and the end of the open
    FileState f = open(0);
    f.created();
    assertNull(f.flushWrites(), "the release's flush: nothing to record");
    assertTrue(f.defer(attr(0, 1000), SetattrReq.MODE, 0600, 0, 0, 0, 0), "the chmod, while the open lasts");
    assertTrue(f.closed(true), "the last open");
    assertTrue(f.hasDeferred(), "still to record: the release flushes again");
    assertEquals(0600, f.pendingRecording().deferred().mode());
    assertFalse(f.defer(attr(0, 1000), SetattrReq.MODE, 0644, 0, 0, 0, 0), "no open left to record a change: it goes at once");
  }

  @Test
  void deferredMtime_aWriteAfterItMovesItAgain() {
    FileState f = open(0);
    f.created();
    write(f, 0, new byte[10], 2000);
    assertTrue(f.defer(attr(10, 2000), SetattrReq.MTIME | SetattrReq.ATIME, 0, 0, 0, 300, 500));
    write(f, 10, new byte[10], 3000);
    FileState.Recording r = f.flushWrites();
    SetattrReq q = r.deferred().record(f.handle, r.size(), false, 0, 0, 0, r.mtimeNs());
    assertEquals(3000, q.mtimeNs(), "the later write's");
    assertEquals(300, q.atimeNs(), "the atime set stays");
  }

  @Test
  void notDeferred_filesNotMadeHere_setIdBits_serverTimes_emptyOrRecorded() {
    FileState f = open(0);
    assertFalse(f.defer(attr(0, 1000), SetattrReq.MODE, 0600, 0, 0, 0, 0), "not made by this client");
    FileState g = open(0);
    g.created();
    assertFalse(g.defer(attr(0, 1000), SetattrReq.MODE, 04755, 0, 0, 0, 0), "a set-ID mode");
    assertFalse(g.defer(attr(0, 1000).withMode(02755), SetattrReq.UID, 0, 5, 0, 0, 0), "a chown of a set-ID file");
    assertFalse(g.defer(attr(0, 1000), SetattrReq.MTIME_NOW, 0, 0, 0, 0, 0), "the server's clock");
    assertFalse(g.defer(attr(0, 1000), SetattrReq.SIZE, 0, 0, 0, 0, 0), "a truncate");
    assertTrue(g.defer(attr(0, 1000), SetattrReq.MODE, 0640, 0, 0, 0, 0), "an empty new file too: its close records it");
    FileState.Recording r = g.pendingRecording();
    assertEquals(0640, r.deferred().mode());
    g.recorded(r);
    assertNull(g.pendingRecording());
  }

  @Test
  void append_writesAtTheEndThisClientKnows_orAtAnOffsetBeyondIt() {
    FileState f = open(0);
    path.store(LAYOUT, 0, WriteBehindTest.fill('x', 100));
    f.opened(attr(100, 1000));
    assertEquals(100, append(f, 40, WriteBehindTest.fill('a', 10)), "a stale offset: at the end");
    assertEquals(110, append(f, 0, WriteBehindTest.fill('b', 10)));
    assertEquals(200, append(f, 200, WriteBehindTest.fill('c', 10)), "an offset past the end stays");
    assertEquals(210, f.size());
    byte[] expect = new byte[210];
    Arrays.fill(expect, 0, 100, (byte) 'x');
    Arrays.fill(expect, 100, 110, (byte) 'a');
    Arrays.fill(expect, 110, 120, (byte) 'b');
    Arrays.fill(expect, 200, 210, (byte) 'c');
    assertArrayEquals(expect, read(f, 0, 1000));
    assertFalse(f.closed(), "one open is left");
  }

  @Test
  void truncated_shrinksWhatReadsSee() {
    FileState f = open(0);
    write(f, 0, WriteBehindTest.fill('a', 5000), 2000);
    assertEquals(5000, read(f, 0, 5000).length);
    f.truncated(10, 3000);
    assertEquals(10, f.size());
    assertArrayEquals(WriteBehindTest.fill('a', 10), read(f, 0, 5000));
  }

  @Test
  void closed_trueOnlyForTheLastOpen() {
    FileState f = open(0);
    f.opened(attr(0, 1000));
    assertFalse(f.closed());
    assertTrue(f.closed());
    st = null;
  }

  private static Attr attr(long size, long mtime) {
    return new Attr(Handle.of(0, 42), FileType.REGULAR, 0644, 1, 1, 1, size, mtime, mtime, mtime, 0, LAYOUT);
  }

  /** Writes through the file state; the caller's buffer stays the caller's. */
  private static void write(FileState f, long offset, byte[] b, long now) {
    ByteBuf src = ByteBufAllocator.DEFAULT.heapBuffer(b.length).writeBytes(b);
    try {
      f.write(offset, src, now, false);
    } finally {
      src.release();
    }
  }

  private static long append(FileState f, long offset, byte[] b) {
    ByteBuf src = ByteBufAllocator.DEFAULT.heapBuffer(b.length).writeBytes(b);
    try {
      return f.append(offset, src, 2000, false);
    } finally {
      src.release();
    }
  }

  private static byte[] read(FileState f, long offset, int length) {
    ByteBuf dst = ByteBufAllocator.DEFAULT.heapBuffer();
    try {
      int n = f.read(offset, length, dst);
      assertEquals(n, dst.readableBytes());
      return ByteBufUtil.getBytes(dst);
    } finally {
      dst.release();
    }
  }

  /** {@code n} random bytes written to the file by a writer of its own and flushed. */
  private byte[] written(int n, long seed) {
    byte[] data = new byte[n];
    new java.util.Random(seed).nextBytes(data);
    FileState w = open(0);
    write(w, 0, data, 2000);
    w.flushWrites();
    return data;
  }

  /** A read-only open of the file with attributes {@code a}: read-ahead windows of 128 KiB, read-around blocks of 64 KiB. */
  private FileState reader(Attr a) {
    FileState r = new FileState(a, path, 0, 128 * 1024, 64 * 1024, Duration.ofSeconds(5), ByteBufAllocator.DEFAULT, Runnable::run);
    r.opened(a, null, false);
    return r;
  }

  /** {@code p} offers the file's bytes {@code [from, to)}: it starts at {@code from} and holds {@code data}'s bytes there. */
  private static void assertPages(byte[] data, int from, int to, PageSink.Pages p) {
    assertEquals(from, p.offset());
    assertArrayEquals(Arrays.copyOfRange(data, from, to), ByteBufUtil.getBytes(p.data()));
  }

  @Test
  void readAround_offersTheBlockAroundAJump_notThePagesAskedFor_andNotWhileAnOpenMayWrite() {
    byte[] data = written(256 * 1024, 1);
    Attr a = attr(data.length, 2000);
    FileState r = reader(a);
    java.util.List<PageSink.Pages> offered = new java.util.ArrayList<>();
    try {
      ByteBuf dst = ByteBufAllocator.DEFAULT.heapBuffer();
      try {
        assertEquals(100, r.read(98_400, 100, dst, offered::add)); // in page 24 (98,304) of block 1 (65,536..131,071)
        assertArrayEquals(Arrays.copyOfRange(data, 98_400, 98_500), ByteBufUtil.getBytes(dst));
      } finally {
        dst.release();
      }
      assertEquals(2, offered.size(), "the block before and after the page asked for");
      assertPages(data, 65_536, 98_304, offered.get(0));
      assertPages(data, 102_400, 131_072, offered.get(1));
      assertTrue(offered.get(0).begin(), "a store not cancelled may begin");
      offered.get(0).end();
      r.quiesce(); // an open or close comes: what has not begun must not
      assertFalse(offered.get(1).begin());

      r.opened(a, null, true);
      ByteBuf d2 = ByteBufAllocator.DEFAULT.heapBuffer();
      try {
        assertEquals(4096, r.read(200_704, 4096, d2, offered::add));
        assertArrayEquals(Arrays.copyOfRange(data, 200_704, 204_800), ByteBufUtil.getBytes(d2));
      } finally {
        d2.release();
      }
      assertEquals(2, offered.size(), "nothing offered while an open may write");
      r.closed(true);
    } finally {
      offered.forEach(o -> o.data().release());
      r.closed(false);
    }
  }

  /**
   * Threads of one application reading a shared file at random: a read that jumps waits for the
   * servers without holding the file, so another reader of it is answered meanwhile.
   */
  @Test
  void readsThatJump_goToTheServersSideBySide() throws Exception {
    byte[] data = written(256 * 1024, 4);
    Attr a = attr(data.length, 2000);
    FileState r = reader(a);
    path.readDelay(n -> n == 0 ? 2000L : 0L);
    java.util.concurrent.ExecutorService other = java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      java.util.concurrent.Future<byte[]> slow = other.submit(() -> read(r, 50_000, 100));
      while (path.reads().isEmpty()) {
        Thread.sleep(1);
      }
      assertArrayEquals(Arrays.copyOfRange(data, 150_000, 150_100), read(r, 150_000, 100));
      assertFalse(slow.isDone(), "answered while the first read still waits for the servers");
      assertArrayEquals(Arrays.copyOfRange(data, 50_000, 50_100), slow.get(30, java.util.concurrent.TimeUnit.SECONDS));
    } finally {
      other.shutdownNow();
      r.closed(false);
    }
  }

  /**
   * A read holds its file's state locked while it fetches a block from the servers; the page
   * sink's thread must not wait for that to begin or end a store of the same file, or random
   * reads that keep missing starve it until its queue overflows and what it holds is dropped.
   */
  @Test
  void readAround_aStoreBeginsAndEnds_whileAReadHoldsTheFile() throws Exception {
    byte[] data = written(256 * 1024, 3);
    Attr a = attr(data.length, 2000);
    FileState r = reader(a);
    java.util.List<PageSink.Pages> offered = new java.util.ArrayList<>();
    ByteBuf dst = ByteBufAllocator.DEFAULT.heapBuffer();
    java.util.concurrent.ExecutorService sinkThread = java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      assertEquals(100, r.read(98_400, 100, dst, offered::add));
      PageSink.Pages p = offered.get(0);
      synchronized (r) { // as a read of the file from the servers does
        java.util.concurrent.Future<Boolean> stored = sinkThread.submit(() -> {
          boolean begun = p.begin();
          if (begun) {
            p.end();
          }
          return begun;
        });
        assertTrue(stored.get(30, java.util.concurrent.TimeUnit.SECONDS), "begun and ended while the file is held");
      }
      r.quiesce();
      assertFalse(offered.get(1).begin(), "a quiesce still cancels what has not begun");
    } finally {
      sinkThread.shutdownNow();
      dst.release();
      offered.forEach(o -> o.data().release());
      r.closed(false);
    }
  }

  /**
   * A random reader whose two reads happened to follow each other starts a read-ahead window;
   * its next jump within the window still reads around (from the window), or every page it
   * missed would be a FUSE read of its own from then on.
   */
  @Test
  void readAround_aJumpWithinAReadAheadWindow_offersTheBlockFromTheWindow() {
    byte[] data = written(256 * 1024, 2);
    Attr a = attr(data.length, 2000);
    FileState r = reader(a);
    java.util.List<PageSink.Pages> offered = new java.util.ArrayList<>();
    ByteBuf dst = ByteBufAllocator.DEFAULT.heapBuffer();
    try {
      assertEquals(4096, r.read(8192, 4096, dst, offered::add)); // a jump: read around, block 0
      assertEquals(4096, r.read(12_288, 4096, dst, offered::add)); // follows it: read ahead, windows 0 and 1
      int before = offered.size();
      dst.clear();
      assertEquals(4096, r.read(200_704, 4096, dst, offered::add)); // a jump into window 1 (131,072..262,143)
      assertArrayEquals(Arrays.copyOfRange(data, 200_704, 204_800), ByteBufUtil.getBytes(dst));
      List<PageSink.Pages> around = offered.subList(before, offered.size());
      assertEquals(2, around.size(), "the block around the page, from the window");
      assertPages(data, 196_608, 200_704, around.get(0));
      assertPages(data, 204_800, 262_144, around.get(1));
    } finally {
      dst.release();
      offered.forEach(o -> o.data().release());
      r.closed(false);
    }
  }

  @Test
  void readAround_growsWithAFileThatFitsInMemory_upToItsMaximum_notForALargerOne() {
    org.junit.jupiter.api.Assumptions.assumeTrue(FileState.CACHEABLE >= 64L << 20, "a machine of at least 1 GiB");
    // holes: every block reads as zeros, so the sizes alone matter
    assertEquals(64 * 1024, aroundBlock(1L << 20), "1 MiB: the configured 64 KiB");
    assertEquals(256 * 1024, aroundBlock(64L << 20), "64 MiB: a 256th of it");
    assertEquals(256 * 1024, aroundBlock((48L << 20) + 1), "just over 48 MiB: the power of two above its 256th");
    assertEquals(FileState.AROUND_MAX, aroundBlock(Math.min(FileState.CACHEABLE, 1L << 30)), "up to the maximum");
    assertEquals(64 * 1024, aroundBlock(FileState.CACHEABLE + 1), "too large to cache: the configured block");
  }

  /** The bytes a 100-byte read that jumps into the middle of a file of {@code size} reads around it. */
  private long aroundBlock(long size) {
    FileState r = reader(attr(size, 2000));
    java.util.List<PageSink.Pages> offered = new java.util.ArrayList<>();
    ByteBuf dst = ByteBufAllocator.DEFAULT.heapBuffer();
    try {
      assertEquals(100, r.read(size / 2 + 5000, 100, dst, offered::add));
      return 4096 + offered.stream().mapToLong(o -> o.data().readableBytes()).sum();
    } finally {
      dst.release();
      offered.forEach(o -> o.data().release());
      r.closed(false);
    }
  }
}
