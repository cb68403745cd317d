package org.flowfs.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.Unpooled;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Layout;
import org.flowfs.common.wire.LeakCheck;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** {@link WriteBehind} over a {@link MemoryDataPath} whose sends the tests slow down or fail. */
@ExtendWith(LeakCheck.class)
class WriteBehindTest {
  private static final Layout LAYOUT = StripeMapTest.layout(DistSpec.of("simple_stripe", 4096), 3);
  private static final Duration TIMEOUT = Duration.ofSeconds(5);

  private final MemoryDataPath path = new MemoryDataPath();
  private WriteBehind wb;

  private WriteBehind writeBehind(int capacity, Duration timeout) {
    wb = new WriteBehind(path, LAYOUT, capacity, timeout, ByteBufAllocator.DEFAULT);
    return wb;
  }

  @AfterEach
  void cleanUp() {
    if (wb != null) {
      wb.discard();
    }
    path.close();
  }

  @Test
  void write_sequentialWrites_coalescedIntoBuffersOfCapacity() {
    WriteBehind w = writeBehind(65536, TIMEOUT);
    byte[] all = bytes(1, 40 * 8192);
    for (int i = 0; i < 40; i++) {
      write(w, 1000 + i * 8192L, Arrays.copyOfRange(all, i * 8192, (i + 1) * 8192));
    }
    assertEquals(5, path.writes().size(), "full buffers go out without waiting for a flush");
    w.flush();
    List<MemoryDataPath.Call> sends = path.writes();
    assertEquals(5, sends.size());
    for (int k = 0; k < 5; k++) {
      assertEquals(new MemoryDataPath.Call(k, 1000 + k * 65536L, 65536), sends.get(k));
    }
    assertArrayEquals(all, path.load(LAYOUT, 1000, all.length));
  }

  @Test
  void write_unalignedSequentialWrites_sendWholeWritesUpToCapacity() {
    WriteBehind w = writeBehind(65536, TIMEOUT);
    byte[] all = bytes(2, 20 * 10_000);
    for (int i = 0; i < 20; i++) {
      write(w, i * 10_000L, Arrays.copyOfRange(all, i * 10_000, (i + 1) * 10_000));
    }
    w.flush();
    List<MemoryDataPath.Call> sends = path.writes();
    long at = 0;
    for (MemoryDataPath.Call c : sends) {
      assertEquals(at, c.offset(), "sends follow each other");
      assertTrue(c.length() <= 65536 && c.length() % 10_000 == 0, "whole writes, at most capacity: " + c);
      at += c.length();
    }
    assertEquals(List.of(60_000, 60_000, 60_000, 20_000), sends.stream().map(MemoryDataPath.Call::length).toList());
    assertArrayEquals(all, path.load(LAYOUT, 0, all.length));
  }

  @Test
  void write_ofAtLeastCapacity_sentAtOnceAndWhole() {
    WriteBehind w = writeBehind(65536, TIMEOUT);
    write(w, 0, bytes(3, 100));
    byte[] big = bytes(4, 200_000);
    write(w, 100, big);
    assertEquals(List.of(new MemoryDataPath.Call(0, 0, 100), new MemoryDataPath.Call(1, 100, 200_000)), path.writes(),
        "the buffered bytes first, then the large write in one piece");
    w.flush();
    assertEquals(2, path.writes().size());
    assertArrayEquals(big, path.load(LAYOUT, 100, big.length));
  }

  @Test
  void write_notFollowingTheBuffer_gathers_andAnOverlappingWriteSendsTheGatheredFirst() {
    WriteBehind w = writeBehind(65536, TIMEOUT);
    write(w, 5000, fill('B', 100));
    write(w, 0, fill('A', 100));
    assertEquals(List.of(), path.writes(), "small writes that do not follow each other gather");
    write(w, 50, fill('C', 10)); // backwards, into a gathered region
    assertEquals(List.of(new MemoryDataPath.Call(0, 0, 200)), path.writes(), "the gathered regions went first, as one send");
    assertEquals(List.of(2), path.regionWrites());
    w.flush();
    assertEquals(2, path.writes().size());
    byte[] expect = fill('A', 100);
    Arrays.fill(expect, 50, 60, (byte) 'C');
    assertArrayEquals(expect, path.load(LAYOUT, 0, 100));
    assertArrayEquals(fill('B', 100), path.load(LAYOUT, 5000, 100));
  }

  @Test
  void write_followingARegion_intoAnotherGatheredOne_sendsTheGatheredFirst() {
    WriteBehind w = writeBehind(65536, TIMEOUT);
    write(w, 1000, fill('A', 100));
    write(w, 0, fill('B', 100));
    write(w, 100, fill('C', 1000)); // continues B, and reaches over A
    assertEquals(List.of(2), path.regionWrites(), "A and B went first");
    w.flush();
    byte[] expect = fill('C', 1100);
    Arrays.fill(expect, 0, 100, (byte) 'B');
    assertArrayEquals(expect, path.load(LAYOUT, 0, 1100), "the later write wins");
  }

  @Test
  void write_gathered_sentInFileOrderAtMaxRegions_andAWriteThatFollowsARegionGrowsIt() {
    WriteBehind w = writeBehind(1 << 22, TIMEOUT);
    int n = WriteBehind.MAX_REGIONS;
    byte[] expect = new byte[(n + 1) * 10_000];
    for (int i = n - 1; i >= 1; i--) { // backwards: the send must put them in file order
      byte[] b = bytes(i, 100);
      write(w, i * 10_000L, b);
      System.arraycopy(b, 0, expect, i * 10_000, 100);
    }
    byte[] more = bytes(77, 50);
    write(w, 10_100, more); // follows the last write (at 10,000): the same region
    System.arraycopy(more, 0, expect, 10_100, 50);
    assertEquals(List.of(), path.writes(), "63 regions: still gathering");
    byte[] last = bytes(99, 100);
    write(w, n * 10_000L, last);
    System.arraycopy(last, 0, expect, n * 10_000, 100);
    assertEquals(List.of(n), path.regionWrites(), "the 64th region sends them all, as one write");
    assertEquals(List.of(new MemoryDataPath.Call(0, 10_000, (n - 1) * 100 + 50 + 100)), path.writes());
    w.flush();
    assertArrayEquals(expect, path.load(LAYOUT, 0, expect.length));
  }

  @Test
  void write_gathered_sentOnceTheyHoldGatherBytes_andLargeWritesAreNotGathered() {
    WriteBehind w = writeBehind(1 << 22, TIMEOUT);
    int chunk = WriteBehind.GATHER_BYTES / 4;
    for (int i = 0; i < 4; i++) {
      write(w, (3 - i) * 2L * chunk, fill((char) ('a' + i), chunk));
    }
    assertEquals(List.of(4), path.regionWrites(), "four regions of a quarter of GATHER_BYTES: sent");
    write(w, 100L * chunk, fill('x', 100));
    write(w, 200L * chunk, fill('y', WriteBehind.GATHER_BYTES)); // too large to gather: sends the small one first
    assertEquals(2, path.writes().size());
    assertEquals(new MemoryDataPath.Call(1, 100L * chunk, 100), path.writes().get(1));
    w.flush();
    assertEquals(new MemoryDataPath.Call(2, 200L * chunk, WriteBehind.GATHER_BYTES), path.writes().get(2));
    assertEquals(List.of(4), path.regionWrites());
    assertArrayEquals(fill('a', chunk), path.load(LAYOUT, 6L * chunk, chunk));
    assertArrayEquals(fill('d', chunk), path.load(LAYOUT, 0, chunk));
    assertArrayEquals(fill('y', WriteBehind.GATHER_BYTES), path.load(LAYOUT, 200L * chunk, WriteBehind.GATHER_BYTES));
  }

  @Test
  void write_gatheredRegionsOverlappingASlowSend_waitForIt_othersDoNot() {
    path.writeDelay(n -> n == 0 ? 300L : 0L);
    WriteBehind w = writeBehind(1 << 20, TIMEOUT);
    write(w, 0, fill('A', 100));
    write(w, 50_000, fill('A', 100));
    w.send(); // slow
    write(w, 20_000, fill('B', 100));
    write(w, 30_000, fill('B', 100));
    long t0 = System.nanoTime();
    w.send(); // between the slow send's regions, overlapping none: does not wait
    assertTrue(System.nanoTime() - t0 < 250_000_000L, "a send between the regions of a slow one did not wait for it");
    write(w, 50_050, fill('C', 100));
    write(w, 90_000, fill('C', 100));
    w.flush(); // overlaps the slow send's second region: waits for it
    byte[] expect = fill('A', 150);
    Arrays.fill(expect, 50, 150, (byte) 'C');
    assertArrayEquals(expect, path.load(LAYOUT, 50_000, 150));
    assertArrayEquals(fill('B', 100), path.load(LAYOUT, 20_000, 100));
  }

  /** Direct buffers that record the capacity each was asked for. */
  private static final class Recording extends AbstractByteBufAllocator {
    final List<Integer> asked = new ArrayList<>();
    final List<ByteBuf> made = new ArrayList<>();

    Recording() {
      super(true);
    }

    @Override
    protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
      asked.add(initialCapacity);
      ByteBuf b = Unpooled.directBuffer(initialCapacity, maxCapacity);
      made.add(b);
      return b;
    }

    @Override
    protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
      return Unpooled.buffer(initialCapacity, maxCapacity);
    }

    @Override
    public boolean isDirectBufferPooled() {
      return false;
    }
  }

  @Test
  void write_smallFileTakesABufferOfItsSize_growingAsWritesFollow() {
    Recording alloc = new Recording();
    int capacity = 4 * WriteBehind.GROWS_TO;
    wb = new WriteBehind(path, LAYOUT, capacity, TIMEOUT, alloc);
    write(wb, 0, fill('s', 4096));
    wb.flush();
    assertEquals(List.of(4096), alloc.asked, "one write of a new file: a buffer of its size");

    alloc.asked.clear();
    int piece = 8192;
    int pieces = capacity / piece + 2; // past one buffer of the capacity
    byte[] all = bytes(9, pieces * piece);
    long at = 100_000;
    int i = 0;
    for (; i < 3; i++) {
      write(wb, at + (long) i * piece, Arrays.copyOfRange(all, i * piece, (i + 1) * piece));
    }
    assertEquals(List.of(piece), alloc.asked, "a file written in three calls: one buffer, grown");
    assertTrue(alloc.made.get(1).capacity() <= 4 * piece, "grown to about the file's size: " + alloc.made.get(1).capacity());
    for (; i < WriteBehind.GROWS_TO / piece; i++) {
      write(wb, at + (long) i * piece, Arrays.copyOfRange(all, i * piece, (i + 1) * piece));
    }
    assertEquals(List.of(piece), alloc.asked, "up to GROWS_TO bytes the buffer grows");
    assertEquals(WriteBehind.GROWS_TO, alloc.made.get(1).capacity(), "grown to GROWS_TO, no further");
    write(wb, at + (long) i * piece, Arrays.copyOfRange(all, i * piece, (i + 1) * piece));
    i++;
    int g = WriteBehind.GROWS_TO;
    assertEquals(List.of(piece, g), alloc.asked, "past GROWS_TO: a stream, on in a second piece (nothing copied again)");
    for (; i < pieces; i++) {
      write(wb, at + (long) i * piece, Arrays.copyOfRange(all, i * piece, (i + 1) * piece));
    }
    // the capacity's worth went out as one send of four pieces; the stream goes on in a new buffer
    assertEquals(List.of(piece, g, g, g, g), alloc.asked, "the stream goes on in pieces of GROWS_TO");
    assertTrue(path.writes().stream().anyMatch(c -> c.offset() == at && c.length() == capacity),
        "one send of the capacity: " + path.writes());
    wb.flush();
    assertArrayEquals(all, path.load(LAYOUT, at, all.length));
    for (ByteBuf b : alloc.made) {
      assertEquals(0, b.refCnt(), "every piece released once sent");
    }
  }

  @Test
  void write_ofAtLeastCapacity_copiedIntoPieces_releasedOnceSent() {
    Recording alloc = new Recording();
    int capacity = 2 * WriteBehind.GROWS_TO;
    wb = new WriteBehind(path, LAYOUT, capacity, TIMEOUT, alloc);
    byte[] big = bytes(12, 2 * WriteBehind.GROWS_TO + 1000);
    write(wb, 0, big);
    wb.flush();
    assertEquals(List.of(WriteBehind.GROWS_TO, WriteBehind.GROWS_TO, 1000), alloc.asked,
        "pieces the allocator keeps, not one buffer of the write's size");
    assertArrayEquals(big, path.load(LAYOUT, 0, big.length));
    for (ByteBuf b : alloc.made) {
      assertEquals(0, b.refCnt(), "every piece released once sent");
    }
  }

  @Test
  void write_fullBuffers_atMostBuffersInFlight() {
    path.writeDelay(n -> 30L);
    WriteBehind w = writeBehind(8192, TIMEOUT);
    byte[] all = bytes(5, 12 * 8192);
    for (int i = 0; i < 12; i++) {
      write(w, i * 8192L, Arrays.copyOfRange(all, i * 8192, (i + 1) * 8192));
      assertTrue(path.writesInFlight() <= WriteBehind.BUFFERS_IN_FLIGHT, "in flight: " + path.writesInFlight());
    }
    w.flush();
    assertEquals(0, path.writesInFlight(), "flush waits for every send");
    assertEquals(WriteBehind.BUFFERS_IN_FLIGHT, path.maxWritesInFlight(), "sends overlap, up to the limit in bytes");
    assertEquals(12, path.writes().size());
    assertArrayEquals(all, path.load(LAYOUT, 0, all.length));
  }

  @Test
  void write_randomSmallWrites_gatheredAndUpToMaxInFlightSends() {
    // the first sends stay out long enough for the writes to catch up with them, then sends are quick
    path.writeDelay(n -> n < WriteBehind.MAX_IN_FLIGHT ? 2000L : 0L);
    WriteBehind w = writeBehind(8 << 20, TIMEOUT);
    int sends = 3 * WriteBehind.MAX_IN_FLIGHT;
    int n = sends * WriteBehind.MAX_REGIONS;
    byte[] expect = new byte[n * 8192];
    for (int i = 0; i < n; i++) {
      long at = (i * 7L % n) * 8192; // every 8 KiB block once, none after the one before
      byte[] piece = fill((char) ('a' + i % 26), 4096);
      write(w, at, piece);
      System.arraycopy(piece, 0, expect, (int) at, piece.length);
      assertTrue(path.writesInFlight() <= WriteBehind.MAX_IN_FLIGHT, "in flight: " + path.writesInFlight());
    }
    w.flush();
    assertEquals(0, path.writesInFlight(), "flush waits for every send");
    assertEquals(WriteBehind.MAX_IN_FLIGHT, path.maxWritesInFlight(), "gathered sends overlap, up to the limit in count");
    assertEquals(sends, path.writes().size(), "one send per " + WriteBehind.MAX_REGIONS + " writes");
    assertTrue(path.regionWrites().stream().allMatch(r -> r == WriteBehind.MAX_REGIONS), "regions: " + path.regionWrites());
    assertArrayEquals(expect, path.load(LAYOUT, 0, expect.length));
  }

  @Test
  void write_laterWriteToTheSameRange_winsOverASlowEarlierSend() {
    path.writeDelay(n -> n == 0 ? 300L : 0L);
    WriteBehind w = writeBehind(4096, TIMEOUT);
    write(w, 0, fill('A', 4096)); // fills the buffer: sent, slowly
    write(w, 10, fill('B', 100)); // buffered
    w.flush(); // sends B, which must wait for A
    byte[] expect = fill('A', 4096);
    Arrays.fill(expect, 10, 110, (byte) 'B');
    assertArrayEquals(expect, path.load(LAYOUT, 0, 4096));
  }

  @Test
  void write_largeLaterWriteToTheSameRange_winsOverASlowEarlierSend() {
    path.writeDelay(n -> n == 0 ? 300L : 0L);
    WriteBehind w = writeBehind(4096, TIMEOUT);
    write(w, 0, fill('A', 4096));
    write(w, 2048, fill('C', 8192)); // at least capacity: dispatched directly, overlapping A
    w.flush();
    byte[] expect = fill('A', 2048 + 8192);
    Arrays.fill(expect, 2048, expect.length, (byte) 'C');
    assertArrayEquals(expect, path.load(LAYOUT, 0, expect.length));
  }

  @Test
  void write_nonOverlappingSend_doesNotWaitForASlowOne() {
    path.writeDelay(n -> n == 0 ? 500L : 0L);
    WriteBehind w = writeBehind(4096, TIMEOUT);
    long t0 = System.nanoTime();
    write(w, 0, fill('A', 4096));
    write(w, 100_000, fill('B', 4096));
    assertEquals(2, path.writes().size());
    assertTrue(System.nanoTime() - t0 < 400_000_000L, "the second send did not wait for the first");
    w.flush();
    assertArrayEquals(fill('B', 4096), path.load(LAYOUT, 100_000, 4096));
  }

  @Test
  void write_failedSend_reportedAtTheNextWriteOnce() throws InterruptedException {
    path.writeFailure(n -> n == 0 ? Errno.ENOSPC : null).writeDelay(n -> n == 0 ? 20L : 0L);
    WriteBehind w = writeBehind(4096, TIMEOUT);
    write(w, 0, fill('A', 4096)); // sent; fails a little later
    awaitNoWritesInFlight();
    FsException e = assertThrows(FsException.class, () -> write(w, 4096, fill('B', 10)));
    assertEquals(Errno.ENOSPC, e.errno());
    // the application writes the lost data again; that succeeds, and the failure is not reported twice
    write(w, 0, fill('A', 4096));
    write(w, 4096, fill('B', 10));
    w.flush();
    assertFalse(w.isDirty());
    byte[] expect = Arrays.copyOf(fill('A', 4096), 4106);
    Arrays.fill(expect, 4096, 4106, (byte) 'B');
    assertArrayEquals(expect, path.load(LAYOUT, 0, 4106));
  }

  @Test
  void flush_reportsAFailedSendOnce() {
    path.writeFailure(n -> n == 0 ? Errno.EIO : null).writeDelay(n -> 20L);
    WriteBehind w = writeBehind(4096, TIMEOUT);
    write(w, 0, fill('A', 100));
    assertEquals(Errno.EIO, assertThrows(FsException.class, w::flush).errno());
    assertFalse(w.isDirty());
    w.flush();
    write(w, 0, fill('A', 100));
    w.flush();
    assertArrayEquals(fill('A', 100), path.load(LAYOUT, 0, 100));
  }

  @Test
  void flush_sendThatNeverCompletes_failsWithEioAfterTheTimeout() {
    path.writeDelay(n -> -1L);
    WriteBehind w = writeBehind(4096, Duration.ofMillis(200));
    write(w, 0, fill('A', 100));
    long t0 = System.nanoTime();
    assertEquals(Errno.EIO, assertThrows(FsException.class, w::flush).errno());
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertTrue(ms >= 150 && ms < 3000, "flush gave up after " + ms + " ms");
  }

  @Test
  void discard_dropsBufferedBytes() {
    WriteBehind w = writeBehind(4096, TIMEOUT);
    write(w, 0, fill('A', 100));
    assertTrue(w.isDirty());
    w.discard();
    assertFalse(w.isDirty());
    w.flush();
    assertEquals(List.of(), path.writes());
  }

  @Test
  void write_copiesTheCallersBytesAndLeavesTheBuffer() {
    WriteBehind w = writeBehind(4096, TIMEOUT);
    ByteBuf src = ByteBufAllocator.DEFAULT.heapBuffer(16).writeLong(1).writeLong(2);
    try {
      src.readLong();
      w.write(0, src);
      assertEquals(8, src.readableBytes(), "the caller's reader index is unchanged");
      assertEquals(1, src.refCnt());
      src.setLong(8, 99); // the caller reuses its buffer
    } finally {
      src.release();
    }
    w.flush();
    assertArrayEquals(new byte[] {0, 0, 0, 0, 0, 0, 0, 2}, path.load(LAYOUT, 0, 8));
  }

  @Test
  void isDirty_whileBufferedOrInFlight() {
    path.writeDelay(n -> 100L);
    WriteBehind w = writeBehind(4096, TIMEOUT);
    assertFalse(w.isDirty());
    write(w, 0, fill('A', 4096)); // sent at once, still in flight
    assertTrue(w.isDirty());
    w.flush();
    assertFalse(w.isDirty());
  }

  // ---- sends set up by the sender --------------------------------------------------------------

  /** An executor that runs what it was given when the test says. */
  private static final class Held implements java.util.concurrent.Executor {
    final java.util.ArrayDeque<Runnable> tasks = new java.util.ArrayDeque<>();

    @Override
    public synchronized void execute(Runnable r) {
      tasks.add(r);
    }

    synchronized void runAll() {
      while (!tasks.isEmpty()) {
        tasks.poll().run();
      }
    }
  }

  @Test
  void write_thatFillsTheBuffer_handsItsSendToTheSender_flushSetsUpOnTheCaller() {
    Held sender = new Held();
    wb = new WriteBehind(path, LAYOUT, 4096, TIMEOUT, ByteBufAllocator.DEFAULT, sender);
    write(wb, 0, fill('A', 4096)); // fills the buffer
    assertEquals(List.of(), path.writes(), "the writer did not set the send up");
    assertEquals(1, sender.tasks.size());
    assertTrue(wb.isDirty(), "a send handed over is in flight");
    sender.runAll();
    assertEquals(List.of(new MemoryDataPath.Call(0, 0, 4096)), path.writes());
    write(wb, 8192, fill('B', 100)); // buffered
    wb.flush(); // set up here: the test's sender holds everything it is given
    assertEquals(List.of(), List.copyOf(sender.tasks));
    assertEquals(new MemoryDataPath.Call(1, 8192, 100), path.writes().get(1));
    assertArrayEquals(fill('B', 100), path.load(LAYOUT, 8192, 100));
  }

  @Test
  void write_overlappingASendTheSenderHolds_waitsForIt_andTheLaterBytesWin() throws Exception {
    Held sender = new Held();
    wb = new WriteBehind(path, LAYOUT, 4096, TIMEOUT, ByteBufAllocator.DEFAULT, sender);
    write(wb, 0, fill('A', 4096)); // handed to the sender, not set up yet
    var later = java.util.concurrent.CompletableFuture.runAsync(() -> {
      write(wb, 100, fill('B', 4096)); // at least the capacity and overlapping A: must wait for A
    });
    Thread.sleep(100);
    assertFalse(later.isDone(), "the overlapping send waits for the one the sender holds");
    sender.runAll(); // A goes; the later write's own send is then handed over
    later.get(5, java.util.concurrent.TimeUnit.SECONDS);
    sender.runAll();
    wb.flush();
    byte[] expect = fill('A', 4196);
    Arrays.fill(expect, 100, 4196, (byte) 'B');
    assertArrayEquals(expect, path.load(LAYOUT, 0, 4196));
  }

  @Test
  void write_randomOverlappingWrites_throughARealSender_endAsWritten() throws Exception {
    path.writeDelay(n -> n % 7 == 0 ? 3L : 0L);
    var sender = java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      wb = new WriteBehind(path, LAYOUT, 64 * 1024, TIMEOUT, ByteBufAllocator.DEFAULT, sender);
      Random r = new Random(11);
      byte[] expect = new byte[1 << 20];
      for (int i = 0; i < 20_000; i++) {
        int len = 1 + r.nextInt(i % 50 == 0 ? 70_000 : 4096);
        int at = r.nextInt(expect.length - len);
        byte[] b = fill((char) ('a' + i % 26), len);
        write(wb, at, b);
        System.arraycopy(b, 0, expect, at, len);
      }
      wb.flush();
      assertArrayEquals(expect, path.load(LAYOUT, 0, expect.length), "every byte as the last write left it");
    } finally {
      sender.shutdownNow();
    }
  }

  @Test
  void write_whenTheSenderIsClosed_failsTheSend_andReportsEio() {
    var sender = java.util.concurrent.Executors.newSingleThreadExecutor();
    sender.shutdown();
    wb = new WriteBehind(path, LAYOUT, 4096, TIMEOUT, ByteBufAllocator.DEFAULT, sender);
    write(wb, 0, fill('A', 4096)); // its send cannot be handed over: released, failed
    assertEquals(Errno.EIO, assertThrows(FsException.class, wb::flush).errno());
    assertEquals(List.of(), path.writes());
  }

  // ---- helpers --------------------------------------------------------------------------------

  private void awaitNoWritesInFlight() throws InterruptedException {
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (path.writesUnsettled() > 0) {
      assertTrue(System.nanoTime() < deadline, "sends still in flight");
      Thread.sleep(2);
    }
  }

  @Test
  void takeWithin_oneRegionBelowTheLimit_isTakenWhole_andNothingIsSent() {
    WriteBehind w = writeBehind(65536, TIMEOUT);
    byte[] data = bytes(3, 12_000);
    write(w, 100, Arrays.copyOfRange(data, 0, 5000)); // two pieces of one stream: one region
    write(w, 5100, Arrays.copyOfRange(data, 5000, 12_000));
    assertNull(w.takeWithin(12_099), "the region ends past the limit");
    WriteBehind.Taken t = w.takeWithin(12_100);
    try {
      assertEquals(100, t.offset());
      assertArrayEquals(data, ByteBufUtil.getBytes(t.data()));
    } finally {
      t.data().release();
    }
    assertFalse(w.isDirty(), "nothing is buffered any more");
    w.flush();
    assertEquals(List.of(), path.writes(), "the caller sends it");
  }

  @Test
  void takeBelow_oneRegionAcrossTheLimit_takesWhatIsBelow_andSendsTheRest() {
    WriteBehind w = writeBehind(65536, TIMEOUT);
    byte[] data = bytes(5, 30_000);
    write(w, 100, Arrays.copyOfRange(data, 0, 10_000));
    write(w, 10_100, Arrays.copyOfRange(data, 10_000, 30_000));
    assertNull(w.takeBelow(100), "nothing below the limit");
    WriteBehind.Taken t = w.takeBelow(20_100);
    try {
      assertEquals(100, t.offset());
      assertArrayEquals(Arrays.copyOfRange(data, 0, 20_000), ByteBufUtil.getBytes(t.data()));
    } finally {
      t.data().release();
    }
    w.flush(); // waits for the rest
    assertFalse(w.isDirty(), "nothing buffered or out any more");
    assertEquals(List.of(new MemoryDataPath.Call(0, 20_100, 10_000)), path.writes(), "the rest, sent by write-behind");
    assertArrayEquals(Arrays.copyOfRange(data, 20_000, 30_000), path.load(LAYOUT, 20_100, 10_000));
  }

  @Test
  void takeWithin_twoRegions_orASendOut_takesNothing() {
    WriteBehind w = writeBehind(65536, TIMEOUT);
    write(w, 0, bytes(1, 100));
    write(w, 1000, bytes(2, 100));
    assertNull(w.takeWithin(1 << 20), "two regions go as one gathered send");
    w.flush();
    assertEquals(1, path.writes().size());
    path.writeDelay(n -> 300L);
    write(w, 0, bytes(3, 65536)); // a full buffer: sent at once, and out for 300 ms
    write(w, 65536, bytes(4, 100));
    assertNull(w.takeWithin(1 << 20), "a send is out");
    w.flush();
    assertEquals(3, path.writes().size());
  }

  static void write(WriteBehind w, long offset, byte[] data) {
    ByteBuf src = ByteBufAllocator.DEFAULT.heapBuffer(data.length).writeBytes(data);
    try {
      w.write(offset, src);
    } finally {
      src.release();
    }
  }

  static byte[] fill(char c, int n) {
    byte[] b = new byte[n];
    Arrays.fill(b, (byte) c);
    return b;
  }

  static byte[] bytes(int seed, int n) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }
}
