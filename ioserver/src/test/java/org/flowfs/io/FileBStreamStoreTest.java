package org.flowfs.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.FileRegion;
import io.netty.util.ReferenceCounted;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.channels.Channels;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.flowfs.common.Handle;
import org.flowfs.common.HugePagePool;
import org.flowfs.common.config.IoConfig;
import org.flowfs.common.flow.Pieces;
import org.flowfs.common.wire.ShmSlots;
import org.junit.jupiter.api.Test;

/** The contract against {@link FileBStreamStore}, and what is particular to keeping one file per handle. */
class FileBStreamStoreTest extends BStreamStoreContract {
  /** A small open-channel bound, so the contract runs with evictions too. */
  private static final int MAX_OPEN = 8;

  @Override
  protected BStreamStore open(Path dir, int server) throws IOException {
    return FileBStreamStore.pooled(dir, server, MAX_OPEN, FileBStreamStore.POOL_MAX, 0); // the pool as removes fill it
  }

  /**
   * A flow's pieces as parts to send from the page cache: the datafile's bytes as file regions
   * (pieces that follow each other in it as one), zeros past its end and for a datafile never
   * written; sent, they are the bytes {@link BStreamStore#read} gives. Releasing them leaves the
   * shared channel open.
   */
  @Test
  void regions_areTheDatafilesBytesAndZerosPastItsEnd() throws IOException {
    Handle a = h(7);
    byte[] data = bytes(3, 100_000);
    write(a, 0, data);
    Pieces p = new Pieces(4);
    p.add(8_000, 20_000);
    p.add(50_000, 30_000);
    p.add(90_000, 20_000); // 10,000 bytes in the datafile, 10,000 past its end
    p.add(200_000, 4_096); // all past the end
    List<ReferenceCounted> parts = store.regions(a, p);
    try {
      assertEquals(List.of("region 8000+20000", "region 50000+30000", "region 90000+10000", "zeros 14096"),
          parts.stream().map(FileBStreamStoreTest::describe).toList(), "neighbouring zeros are one buffer");
      byte[] expect = new byte[(int) p.bytes()];
      System.arraycopy(data, 8_000, expect, 0, 20_000);
      System.arraycopy(data, 50_000, expect, 20_000, 30_000);
      System.arraycopy(data, 90_000, expect, 50_000, 10_000);
      assertArrayEquals(expect, sent(parts));
    } finally {
      parts.forEach(ReferenceCounted::release);
    }
    assertArrayEquals(slice(data, 0, 100), read(a, 0, 100), "the cached channel is still open");
    Pieces q = new Pieces(1);
    q.add(0, 5_000);
    List<ReferenceCounted> none = store.regions(h(8), q);
    try {
      assertEquals(List.of("zeros 5000"), none.stream().map(FileBStreamStoreTest::describe).toList());
    } finally {
      none.forEach(ReferenceCounted::release);
    }
  }

  private static String describe(ReferenceCounted part) {
    if (part instanceof FileRegion r) {
      return "region " + r.position() + "+" + r.count();
    }
    return "zeros " + ((ByteBuf) part).readableBytes();
  }

  /** The bytes {@code parts} put on a connection, in order. */
  private static byte[] sent(List<ReferenceCounted> parts) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    WritableByteChannel ch = Channels.newChannel(out);
    for (ReferenceCounted part : parts) {
      if (part instanceof FileRegion r) {
        for (long at = 0; at < r.count(); ) {
          at += r.transferTo(ch, at);
        }
      } else {
        ByteBuf b = (ByteBuf) part;
        assertTrue(ByteBufUtil.getBytes(b).length == b.readableBytes());
        for (byte x : ByteBufUtil.getBytes(b)) {
          assertEquals(0, x, "a hole reads as zeros");
        }
        out.write(ByteBufUtil.getBytes(b));
      }
    }
    return out.toByteArray();
  }

  @Test
  void datafile_isOneFileUnderItsLowByte() throws IOException {
    Handle a = h(0x1234);
    write(a, 0, bytes(1, 10));
    Path f = dir.resolve("data").resolve("34").resolve(a.hex());
    assertTrue(Files.isRegularFile(f), f + " exists");
    assertEquals(10, Files.size(f));
  }

  @Test
  void open_countsDatafilesAlreadyOnDisk() throws IOException {
    write(h(1), 0, bytes(1, 1));
    write(h(300), 0, bytes(1, 1));
    store.close();
    store = open(dir, SERVER);
    assertEquals(2, store.count());
    assertEquals(List.of(h(1), h(300)), store.list(0, 10));
  }

  @Test
  void list_ignoresFilesThatAreNotDatafiles() throws IOException {
    write(h(1), 0, bytes(1, 1));
    Files.writeString(dir.resolve("data").resolve("01").resolve("notes.txt"), "x");
    Files.writeString(dir.resolve("data").resolve("02").resolve("zzzzzzzzzzzzzzzz"), "x");
    assertEquals(List.of(h(1)), store.list(0, 10));
  }

  @Test
  void openChannels_moreDatafilesThanTheBound_underConcurrentUse() throws Exception {
    int datafiles = 200;
    int threads = 8;
    int size = 3000;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int me = t;
        done.add(pool.submit((Callable<Void>) () -> {
          Random r = new Random(me);
          // each thread owns the datafiles d with d % threads == me and checks what it wrote;
          // it also reads and sizes everybody's, so channels are shared and evicted while in use
          for (int round = 0; round < 3; round++) {
            for (int d = me; d < datafiles; d += threads) {
              Handle h = h(1 + d);
              byte[] data = bytes(d * 7 + round, size);
              write(h, 0, data);
              assertArrayEquals(data, read(h, 0, size));
              Handle other = h(1 + r.nextInt(datafiles));
              store.size(other);
              read(other, r.nextInt(size), 100);
              if (r.nextInt(10) == 0) {
                store.sync(h, true);
              }
            }
          }
          for (int d = me; d < datafiles; d += threads) {
            Handle h = h(1 + d);
            store.truncate(h, size / 2);
            assertArrayEquals(slice(bytes(d * 7 + 2, size), 0, size / 2), read(h, 0, size));
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
    assertEquals(datafiles, store.count());
    assertEquals(datafiles, store.list(0, 1000).size());
    for (int d = 0; d < datafiles; d++) {
      assertEquals(size / 2, store.size(h(1 + d))); // one thread: the cache keeps its bound as it goes
    }
    long open = openFilesUnder(dir);
    assertTrue(open <= 2L * MAX_OPEN, open + " datafiles open with a bound of " + MAX_OPEN);
    store.close();
    assertEquals(0, openFilesUnder(dir), "close() closes every channel");
    store = open(dir, SERVER);
    for (int d = 0; d < datafiles; d++) {
      assertEquals(size / 2, store.size(h(1 + d)));
    }
  }

  @Test
  void remove_recyclesTheDatafile_andTheNextCreateReusesIt() throws IOException {
    Path free = dir.resolve("data").resolve("free");
    write(h(1), 0, bytes(1, 5000));
    store.remove(h(1));
    assertEquals(0, store.count());
    assertEquals(List.of(), store.list(0, 10));
    List<Path> pooled = filesIn(free);
    assertEquals(1, pooled.size());
    assertEquals(0, Files.size(pooled.get(0)), "a pooled datafile holds no data");
    Object inode = Files.getAttribute(pooled.get(0), "unix:ino");

    write(h(2), 10, bytes(2, 3)); // a new datafile: the pooled one, under its new name
    Path f = dir.resolve("data").resolve("02").resolve(h(2).hex());
    assertEquals(inode, Files.getAttribute(f, "unix:ino"));
    assertEquals(List.of(), filesIn(free));
    assertEquals(13, store.size(h(2)), "nothing of the removed datafile's 5000 bytes is left");
    assertArrayEquals(concat(new byte[10], bytes(2, 3)), read(h(2), 0, 100));
    assertEquals(1, store.count());
    assertEquals(0, store.read(h(1), 0, 10, io.netty.buffer.Unpooled.buffer()), "the removed handle reads empty");
  }

  /**
   * {@code allocate} reserves the range's blocks ({@code fallocate} with KEEP_SIZE: the size stays,
   * a never-written datafile is made with size 0), and a removal gives them back though the
   * datafile's size is 0: the pool empties it with {@code O_TRUNC}, which frees blocks past the end.
   */
  @Test
  void allocate_reservesBlocks_keepsTheSize_andARemoveFreesThem() throws Exception {
    Handle h = h(3);
    Path f = dir.resolve("data").resolve("03").resolve(h.hex());
    store.allocate(h, 0, 8 << 20, false);
    assertEquals(0, store.size(h));
    assertTrue(blocks(f) >= 8 << 20, "8 MiB reserved: " + blocks(f));
    write(h, 100, bytes(4, 1000));
    store.allocate(h, 0, 4096, false); // over written bytes: they stay
    assertArrayEquals(concat(new byte[100], bytes(4, 1000)), read(h, 0, 5000));
    store.remove(h);
    Path pooled = filesIn(dir.resolve("data").resolve("free")).get(0);
    assertEquals(0, blocks(pooled), "the reservation freed with the datafile");

    Handle e = h(4);
    store.allocate(e, 1 << 20, 1 << 20, false); // never written: size 0, blocks past the end
    assertEquals(0, store.size(e));
    store.remove(e);
    for (Path p : filesIn(dir.resolve("data").resolve("free"))) {
      assertEquals(0, blocks(p), "an empty datafile's reservation freed too: " + p);
    }
  }

  /** A truncate frees blocks reserved past the end, also one to the size the datafile has. */
  @Test
  void truncate_freesBlocksReservedPastTheEnd() throws Exception {
    Handle h = h(8);
    Path f = dir.resolve("data").resolve("08").resolve(h.hex());
    write(h, 0, bytes(8, 4096));
    store.allocate(h, 0, 8 << 20, false);
    assertTrue(blocks(f) >= 8 << 20);
    store.truncate(h, 4096);
    assertEquals(4096, blocks(f), "the reservation past the end freed, the bytes kept");
    assertArrayEquals(bytes(8, 4096), read(h, 0, 8192));
  }

  /** A reservation larger than the space left is ENOSPC at once, and reserves nothing. */
  @Test
  void allocate_ofMoreThanIsAvailable_isEnospc_andReservesNothing() throws Exception {
    Handle h = h(7);
    write(h, 0, bytes(7, 4096));
    Path f = dir.resolve("data").resolve("07").resolve(h.hex());
    long before = blocks(f);
    long tooMuch = store.space().available() + (1L << 30);
    org.flowfs.common.FsException e = org.junit.jupiter.api.Assertions.assertThrows(
        org.flowfs.common.FsException.class, () -> store.allocate(h, 4096, tooMuch, false));
    assertEquals(org.flowfs.common.Errno.ENOSPC, e.errno(), e.getMessage());
    assertEquals(before, blocks(f));
  }

  /** A punched range reads as zeros and gives its blocks back; the size stays; a missing datafile stays missing. */
  @Test
  void punch_zerosTheRange_freesItsBlocks_andKeepsTheSize() throws Exception {
    Handle h = h(5);
    Path f = dir.resolve("data").resolve("05").resolve(h.hex());
    byte[] data = bytes(6, 3 << 20);
    write(h, 0, data);
    long before = blocks(f);
    store.allocate(h, 1 << 20, 1 << 20, true);
    assertEquals(3 << 20, store.size(h));
    assertTrue(blocks(f) <= before - (1 << 20), "1 MiB freed: " + before + " -> " + blocks(f));
    byte[] want = data.clone();
    java.util.Arrays.fill(want, 1 << 20, 2 << 20, (byte) 0);
    assertArrayEquals(want, read(h, 0, 3 << 20));
    store.allocate(h(6), 0, 4096, true);
    assertEquals(List.of(h(5)), store.list(0, 10), "nothing made to punch a hole in");
  }

  /** Bytes of storage a file holds ({@code st_blocks} times 512). */
  private static long blocks(Path p) throws Exception {
    Process pr = new ProcessBuilder("stat", "-c", "%b", p.toString()).redirectErrorStream(true).start();
    String out = new String(pr.getInputStream().readAllBytes()).strip();
    assertEquals(0, pr.waitFor(), out);
    return Long.parseLong(out) * 512;
  }

  /**
   * A large removed datafile keeps its blocks while the store keeps writing (writes to another
   * datafile count as busy), and is freed once the writes pause: {@code store.freeing-bytes}.
   */
  @Test
  void remove_ofALargeDatafile_freesItsBlocksWhenTheWritesPause() throws Exception {
    store.close();
    org.flowfs.common.Counters counters = new org.flowfs.common.Counters();
    store = new FileBStreamStore(dir, SERVER, MAX_OPEN, 0L, 0L, counters);
    Path free = dir.resolve("data").resolve("free");
    write(h(1), 0, new byte[3 << 20]);
    store.remove(h(1));
    assertEquals(3L << 20, counters.get("store.freeing-bytes"));
    Path pooled = null; // among the empty files the pool makes ahead
    for (Path p : filesIn(free)) {
      if (Files.size(p) > 0) {
        pooled = p;
      }
    }
    assertTrue(pooled != null, "the removed datafile is in the pool with its blocks");
    long busyUntil = System.nanoTime() + 200_000_000L;
    for (int i = 0; System.nanoTime() < busyUntil; i++) {
      write(h(2), i, new byte[] {(byte) i});
      Thread.sleep(1);
    }
    assertEquals(3L << 20, Files.size(pooled), "not freed while the store writes");
    long until = System.nanoTime() + 10_000_000_000L;
    while (counters.get("store.freeing-bytes") != 0 && System.nanoTime() < until) {
      Thread.sleep(10);
    }
    assertEquals(0, counters.get("store.freeing-bytes"));
    assertEquals(0, Files.size(pooled), "freed once the writes paused");
  }

  @Test
  void pool_isBounded_andSurvivesARestart() throws IOException {
    store.close();
    store = FileBStreamStore.pooled(dir, SERVER, MAX_OPEN, 2, 0);
    for (int i = 1; i <= 3; i++) {
      write(h(i), 0, bytes(i, 100));
    }
    for (int i = 1; i <= 3; i++) {
      store.remove(h(i));
    }
    Path free = dir.resolve("data").resolve("free");
    assertEquals(2, filesIn(free).size(), "past the bound a removed datafile is unlinked");
    assertEquals(0, store.count());
    store.close();
    store = FileBStreamStore.pooled(dir, SERVER, MAX_OPEN, 2, 0);
    write(h(10), 0, bytes(10, 7));
    write(h(11), 0, bytes(11, 7));
    assertEquals(List.of(), filesIn(free), "files pooled by the last run are used");
    write(h(12), 0, bytes(12, 7));
    assertEquals(List.of(h(10), h(11), h(12)), store.list(0, 10));
    assertArrayEquals(bytes(11, 7), read(h(11), 0, 100));
  }

  @Test
  void pool_makesFilesAhead_soCreatesWithoutRemovesRenameThem() throws Exception {
    store.close();
    Path free = dir.resolve("data").resolve("free");
    store = FileBStreamStore.pooled(dir, SERVER, MAX_OPEN, 16, 6);
    awaitFiles(free, 6); // made at start
    for (Path p : filesIn(free)) {
      assertEquals(0, Files.size(p), "made empty");
    }
    java.util.Set<Object> made = new java.util.HashSet<>();
    for (Path p : filesIn(free)) {
      made.add(Files.getAttribute(p, "unix:ino"));
    }
    write(h(1), 0, bytes(1, 100)); // no remove came before: the create renames a file made ahead
    assertTrue(made.contains(Files.getAttribute(dir.resolve("data").resolve("01").resolve(h(1).hex()), "unix:ino")));
    for (int i = 2; i <= 30; i++) { // more creates than the pool holds: it is made again as they go
      write(h(i), 0, bytes(i, 10));
    }
    // refilled to 6 whenever it falls below half: the last creates may leave 3 to 6
    awaitFiles(free, 3);
    assertEquals(30, store.count());
    for (int i = 1; i <= 30; i++) {
      assertArrayEquals(bytes(i, i == 1 ? 100 : 10), read(h(i), 0, 200));
    }
    for (int i = 1; i <= 30; i++) { // removes fill the pool up to its bound, no further
      store.remove(h(i));
    }
    // the maker may still be creating a file whose slot it has counted: close waits for it
    store.close();
    assertEquals(16, filesIn(free).size());
    Thread.sleep(50);
    assertEquals(16, filesIn(free).size(), "nothing is made after close");
  }

  @Test
  void writeback_syncsAStreamInTheBackgroundAsItComes() throws Exception {
    store.close();
    FileBStreamStore fs = new FileBStreamStore(dir, SERVER, MAX_OPEN, 64 * 1024);
    store = fs;
    byte[] all = bytes(3, 1 << 20);
    for (int at = 0; at < all.length; at += 16 * 1024) {
      write(h(1), at, java.util.Arrays.copyOfRange(all, at, at + 16 * 1024));
    }
    long until = System.nanoTime() + 10_000_000_000L;
    while (fs.writebacks() == 0) {
      assertTrue(System.nanoTime() < until, "no background sync after 1 MiB written with writeback every 64 KiB");
      Thread.sleep(5);
    }
    assertTrue(fs.writebacks() <= 16, "at most one sync per 64 KiB: " + fs.writebacks());
    assertArrayEquals(all, read(h(1), 0, all.length));
    write(h(2), 0, bytes(4, 1000)); // below the threshold: no sync of its own
    store.close();
    long syncs = fs.writebacks();
    FileBStreamStore none = new FileBStreamStore(dir, SERVER, MAX_OPEN, 0);
    store = none;
    write(h(3), 0, bytes(5, 1 << 20));
    assertEquals(0, none.writebacks(), "without writeback, no background sync");
    assertTrue(syncs >= 1);
    assertArrayEquals(all, read(h(1), 0, all.length));
  }

  /**
   * Direct writes: the aligned middle of a large piece goes past the page cache through a channel
   * opened with O_DIRECT, its unaligned head and tail and small pieces through the page cache;
   * whatever mix wrote a range, reads and sendfile regions give the last bytes written there.
   */
  @Test
  void directWrite_largeAlignedPartsPastThePageCache_readsSeeEveryWrite() throws Exception {
    store.close();
    org.flowfs.common.Counters counters = new org.flowfs.common.Counters();
    FileBStreamStore fs = new FileBStreamStore(dir, SERVER, MAX_OPEN, 64L << 10, 128L << 10, counters);
    store = fs;
    byte[] expect = new byte[3 << 20];
    // small and buffered first, then a large unaligned piece over it, then small ones inside that
    put(expect, h(1), 5_000, bytes(1, 10_000));
    assertEquals(0, fs.directBytes(), "below the threshold: through the page cache");
    put(expect, h(1), 1_000, bytes(2, (2 << 20) + 3_000));
    long middle = (((1_000 + (2 << 20) + 3_000) / 4096) * 4096) - 4096;
    assertEquals(middle, fs.directBytes(), "the aligned middle, [4096, end rounded down)");
    assertTrue(datafileOpenDirect(), "a channel with O_DIRECT on the datafile");
    put(expect, h(1), 300_000, bytes(3, 7));
    put(expect, h(1), 1 << 20, bytes(4, 4096));
    // one flow buffer of several pieces from a composite buffer, as the network delivers it
    Pieces p = new Pieces(3);
    p.add(2 << 20, 256 * 1024);
    p.add((2 << 20) + 300_000, 200_000);
    p.add(500, 100);
    byte[] a = bytes(5, 256 * 1024);
    byte[] b = bytes(6, 200_100);
    ByteBuf src = io.netty.buffer.Unpooled.compositeBuffer()
        .addComponent(true, io.netty.buffer.Unpooled.wrappedBuffer(java.util.Arrays.copyOf(a, 100_000)))
        .addComponent(true, io.netty.buffer.Unpooled.wrappedBuffer(concat(java.util.Arrays.copyOfRange(a, 100_000, a.length), b)));
    store.write(h(1), p, src);
    System.arraycopy(a, 0, expect, 2 << 20, a.length);
    System.arraycopy(b, 0, expect, (2 << 20) + 300_000, 200_000);
    System.arraycopy(b, 200_000, expect, 500, 100);
    int size = (2 << 20) + 500_000;
    assertTrue(fs.directBytes() >= middle + 256 * 1024 + 196_608, "the flow's two large pieces went direct too");
    assertEquals(fs.directBytes(), counters.get("store.direct-bytes"), "counted in the server's counters");
    assertEquals(size, store.size(h(1)));
    assertArrayEquals(slice(expect, 0, size), read(h(1), 0, size));
    Pieces all = new Pieces(1);
    all.add(0, size);
    List<ReferenceCounted> parts = store.regions(h(1), all);
    try {
      assertArrayEquals(slice(expect, 0, size), sent(parts), "sendfile sees the direct writes");
    } finally {
      parts.forEach(ReferenceCounted::release);
    }
    store.sync(h(1), true);
    store.close();
    store = open(dir, SERVER); // another store, nothing cached: the bytes are in the file
    assertArrayEquals(slice(expect, 0, size), read(h(1), 0, size));
  }

  /**
   * Direct reads (io.direct-read): an aligned range of at least the threshold goes from the device
   * straight into aligned memory (a slot of shared memory, on the server), zeros past the
   * datafile's end, and sees bytes still in the page cache from buffered writes; an unaligned or
   * small read, memory that is not aligned, and a store without the threshold decline, leaving the
   * buffer as it was (the flow then reads through the page cache).
   */
  @Test
  void readDirect_alignedRangesIntoAlignedMemory_declinesTheRest() throws Exception {
    store.close();
    org.flowfs.common.Counters counters = new org.flowfs.common.Counters();
    FileBStreamStore fs = new FileBStreamStore(dir, SERVER, MAX_OPEN, 0L, 0L, 128L << 10, counters);
    store = fs;
    byte[] data = bytes(9, 700_000);
    write(h(1), 0, data); // through the page cache (no direct writes): dirty pages the read must see
    ByteBuf mem = io.netty.buffer.Unpooled.directBuffer(2 << 20);
    try {
      int base = (int) (-mem.memoryAddress() & 4095);
      ByteBuf dst = mem.slice(base, 512 << 10).writerIndex(0);
      assertTrue(fs.readDirect(h(1), 256 << 10, 256 << 10, dst));
      assertArrayEquals(slice(data, 256 << 10, 256 << 10), io.netty.buffer.ByteBufUtil.getBytes(dst));
      ByteBuf tail = mem.slice(base + (1 << 20), 512 << 10).writerIndex(0);
      assertTrue(fs.readDirect(h(1), 512 << 10, 256 << 10, tail), "past the end");
      byte[] want = new byte[256 << 10];
      System.arraycopy(data, 512 << 10, want, 0, 700_000 - (512 << 10));
      assertArrayEquals(want, io.netty.buffer.ByteBufUtil.getBytes(tail), "the datafile's last bytes, then zeros");
      assertEquals(256 * 1024 + 700_000 - (512 << 10), counters.get("store.direct-read-bytes"));
      ByteBuf other = mem.slice(base, 512 << 10).writerIndex(0);
      assertFalse(fs.readDirect(h(1), 1000, 256 << 10, other), "unaligned offset");
      assertFalse(fs.readDirect(h(1), 0, 64 << 10, other), "below the threshold");
      assertFalse(fs.readDirect(h(1), 0, 256 << 10, mem.slice(base + 512, 512 << 10).writerIndex(0)), "unaligned memory");
      assertFalse(fs.readDirect(h(1), 0, 256 << 10, mem.slice(base, 200_000).writerIndex(0)), "no room");
      assertEquals(0, other.writerIndex());
      assertFalse(fs.readDirect(h(2), 0, 256 << 10, other), "no datafile: the flow reads zeros the usual way");
      store.close();
      store = new FileBStreamStore(dir, SERVER, MAX_OPEN, 0L, 0L, 0L, counters);
      assertFalse(store.readDirect(h(1), 0, 256 << 10, other), "off");
    } finally {
      mem.release();
    }
  }

  /**
   * {@code io.direct-read = auto}: reads of 128 KiB or more go past the page cache only into a slot
   * of shared memory in huge pages; into other memory, aligned or not, and into slots of 4 KiB
   * pages, the store declines (the flow reads through the page cache).
   */
  @Test
  void readDirect_auto_onlyIntoSlotsInHugePages() throws Exception {
    store.close();
    org.flowfs.common.Counters counters = new org.flowfs.common.Counters();
    FileBStreamStore fs = new FileBStreamStore(dir, SERVER, MAX_OPEN, 0L, 0L, IoConfig.DIRECT_READ_AUTO, counters);
    store = fs;
    byte[] data = bytes(10, 1 << 20);
    write(h(1), 0, data);
    ByteBuf mem = io.netty.buffer.Unpooled.directBuffer(1 << 20);
    org.flowfs.common.Counters shmCounters = new org.flowfs.common.Counters();
    ShmSlots small = ShmSlots.create(ShmSlots.DIR, 1, 256 << 10, shmCounters);
    ByteBuf slot = small.taken(256 << 10);
    try {
      ByteBuf aligned = mem.slice((int) (-mem.memoryAddress() & 4095), 512 << 10).writerIndex(0);
      assertFalse(fs.readDirect(h(1), 0, 256 << 10, aligned), "aligned memory, not a slot");
      assertFalse(fs.readDirect(h(1), 0, 256 << 10, slot), "a slot of 4 KiB pages");
      assertEquals(0, aligned.writerIndex() + slot.writerIndex());
    } finally {
      slot.release();
      small.unlink();
      small.close();
      mem.release();
    }
    assertEquals(0, counters.get("store.direct-read-bytes"));
    assumeTrue("root".equals(System.getProperty("user.name")), "mounts a hugetlbfs: needs root");
    try (HugePagePool huge = HugePagePool.mount(dir.resolve("huge"), 1, "")) {
      assumeTrue(HugePagePool.available() >= 1, "the kernel found no huge page to add");
      ShmSlots big = ShmSlots.make(huge.dir(), 2, 256 << 10, shmCounters);
      ByteBuf hp = big.taken(256 << 10);
      try {
        assertTrue(ShmSlots.inHugePages(hp));
        assertFalse(fs.readDirect(h(1), 0, 64 << 10, hp), "below 128 KiB");
        assertTrue(fs.readDirect(h(1), 256 << 10, 256 << 10, hp));
        assertArrayEquals(slice(data, 256 << 10, 256 << 10), ByteBufUtil.getBytes(hp));
        assertEquals(256 << 10, counters.get("store.direct-read-bytes"));
      } finally {
        hp.release();
        big.unlink();
        big.close();
      }
    }
  }

  /** Without a threshold (io.direct-write = 0) every write goes through the page cache. */
  @Test
  void directWrite_off_writesEverythingThroughThePageCache() throws Exception {
    store.close();
    FileBStreamStore fs = new FileBStreamStore(dir, SERVER, MAX_OPEN, 0L, 0L, new org.flowfs.common.Counters());
    store = fs;
    byte[] data = bytes(7, 4 << 20);
    write(h(1), 0, data);
    assertEquals(0, fs.directBytes());
    assertTrue(!datafileOpenDirect());
    assertArrayEquals(data, read(h(1), 0, data.length));
  }

  /**
   * A payload placed as the I/O server's receive path places it: its bytes at addresses congruent
   * to their datafile offsets, in reads that follow each other in one region (several buffers to
   * Netty, one run of memory). The blocks go to the file from that memory; only what no whole block
   * of such memory holds (here: the part before it, from another read) is copied first.
   */
  @Test
  void directWrite_placedPayload_goesFromTheNetworkMemoryWithoutACopy() throws Exception {
    store.close();
    org.flowfs.common.Counters counters = new org.flowfs.common.Counters();
    FileBStreamStore fs = new FileBStreamStore(dir, SERVER, MAX_OPEN, 0L, 128L << 10, counters);
    store = fs;
    int size = 1 << 20;
    long offset = 3L << 20; // an aligned datafile offset
    byte[] data = bytes(8, size);
    int early = 5_000; // arrived with the frame's header, somewhere else in memory
    ByteBuf region = io.netty.buffer.PooledByteBufAllocator.DEFAULT.directBuffer(size + 8192);
    ByteBuf elsewhere = io.netty.buffer.Unpooled.directBuffer(early + 3);
    try {
      int at = (int) ((early - region.memoryAddress()) & 4095); // byte `early` at an aligned address
      region.setBytes(at, data, early, size - early);
      elsewhere.writeZero(3).writeBytes(data, 0, early).skipBytes(3);
      io.netty.buffer.CompositeByteBuf src = io.netty.buffer.Unpooled.compositeBuffer();
      src.addComponent(true, elsewhere.retain());
      int pos = at;
      for (int n : new int[] {65_536 - early, 20_011, 65_536, 301_000}) { // reads of any size
        src.addComponent(true, region.retainedSlice(pos, n));
        pos += n;
      }
      src.addComponent(true, region.retainedSlice(pos, at + size - early - pos));
      Pieces p = new Pieces(1);
      p.add(offset, size);
      store.write(h(1), p, src);
      src.release();
    } finally {
      region.release();
      elsewhere.release();
    }
    assertEquals(size, fs.directBytes(), "all of it direct");
    assertEquals(8192, fs.directStaged(), "copied: only the blocks that began in the other read");
    assertEquals(fs.directStaged(), counters.get("store.direct-staged-bytes"));
    assertArrayEquals(data, read(h(1), offset, size));
    store.close();
    store = open(dir, SERVER);
    assertArrayEquals(data, read(h(1), offset, size), "in the file");
  }

  private void put(byte[] expect, Handle h, int offset, byte[] data) {
    write(h, offset, data);
    System.arraycopy(data, 0, expect, offset, data.length);
  }

  /** Whether this process has a datafile under {@code dir} open with O_DIRECT (/proc/self/fdinfo). */
  private boolean datafileOpenDirect() throws IOException {
    Path real = dir.resolve("data").toRealPath();
    try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
      for (Path fd : (Iterable<Path>) fds::iterator) {
        try {
          if (Files.readSymbolicLink(fd).startsWith(real)) {
            for (String line : Files.readAllLines(Path.of("/proc/self/fdinfo", fd.getFileName().toString()))) {
              if (line.startsWith("flags:") && (Long.parseLong(line.substring(6).trim(), 8) & 040000) != 0) {
                return true;
              }
            }
          }
        } catch (IOException e) {
          // closed meanwhile
        }
      }
    }
    return false;
  }

  private static void awaitFiles(Path d, int n) throws Exception {
    long until = System.nanoTime() + 10_000_000_000L;
    while (filesIn(d).size() < n) {
      assertTrue(System.nanoTime() < until, "only " + filesIn(d).size() + " of " + n + " files made ahead");
      Thread.sleep(5);
    }
  }

  @Test
  void remove_whileAChannelIsInUse_unlinksInsteadOfRecycling() throws Exception {
    write(h(1), 0, bytes(1, 100));
    // readers race the removes: a read sees h(1)'s bytes or nothing, never the bytes of another
    // handle whose datafile reuses the inode h(1) had while the read held its channel
    ExecutorService readers = Executors.newFixedThreadPool(4);
    try {
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        fs.add(readers.submit((Callable<Void>) () -> {
          for (int i = 0; i < 2000; i++) {
            byte[] got = read(h(1), 0, 100);
            assertTrue(got.length == 0 || java.util.Arrays.equals(bytes(1, 100), got), "never another file's bytes");
          }
          return null;
        }));
      }
      for (int i = 0; i < 200; i++) {
        store.remove(h(1));
        write(h(2 + i), 0, bytes(50 + i, 100)); // may reuse what h(1) was
        write(h(1), 0, bytes(1, 100));
      }
      for (Future<?> f : fs) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      readers.shutdownNow();
    }
    for (int i = 0; i < 200; i++) {
      assertArrayEquals(bytes(50 + i, 100), read(h(2 + i), 0, 100));
    }
  }

  private static List<Path> filesIn(Path d) throws IOException {
    try (Stream<Path> s = Files.list(d)) {
      return s.toList();
    }
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] c = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, c, a.length, b.length);
    return c;
  }

  /** File descriptors of this process open on files under {@code dir} (Linux). */
  private static long openFilesUnder(Path dir) throws IOException {
    Path real = dir.toRealPath();
    long n = 0;
    try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
      for (Path fd : (Iterable<Path>) fds::iterator) {
        try {
          if (Files.readSymbolicLink(fd).startsWith(real)) {
            n++;
          }
        } catch (IOException e) {
          // closed meanwhile
        }
      }
    }
    return n;
  }
}
