package org.flowfs.meta;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The redo volume: buffered writes, atomic syncs, recovery of complete and torn records. */
class RedoVolumeTest {
  @TempDir
  Path dir;

  private Path file() {
    return dir.resolve("store");
  }

  private static byte[] bytes(int n, int seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  /**
   * The scan that finds a write's changed blocks marks exactly the blocks where some written byte
   * differs from the page: compared with a block-by-block reference over random pages and writes
   * with sparse, clustered, block-edge and no changes.
   */
  @Test
  void changedBlocks_marksExactlyTheBlocksWhereAWrittenByteDiffers() {
    Random r = new Random(7);
    for (int i = 0; i < 20_000; i++) {
      byte[] page = new byte[RedoVolume.PAGE];
      r.nextBytes(page);
      int inPage = r.nextInt(RedoVolume.PAGE);
      int n = 1 + r.nextInt(RedoVolume.PAGE - inPage);
      int from = r.nextInt(16);
      byte[] src = new byte[from + n + r.nextInt(16)];
      System.arraycopy(page, inPage, src, from, n);
      int changes = r.nextInt(4) == 0 ? 0 : 1 + r.nextInt(r.nextBoolean() ? 3 : 200);
      for (int c = 0; c < changes; c++) {
        int at = r.nextBoolean() ? r.nextInt(n) : Math.min(n - 1, (r.nextInt(n / RedoVolume.BLOCK + 1)) * RedoVolume.BLOCK);
        src[from + at] ^= (byte) (1 + r.nextInt(255));
      }
      long expected = 0;
      for (int k = 0; k < n; k++) {
        if (src[from + k] != page[inPage + k]) {
          expected |= 1L << ((inPage + k) / RedoVolume.BLOCK);
        }
      }
      assertEquals(expected, RedoVolume.changedBlocks(page, inPage, src, from, n), "write " + i);
    }
  }

  @Test
  void sync_thenReopen_readsWhatWasWritten() throws IOException {
    byte[] spanning = bytes(3 * RedoVolume.PAGE + 100, 1);
    try (RedoVolume v = RedoVolume.open(file())) {
      v.ensureAvailable(10_000);
      v.putData(RedoVolume.PAGE - 50, spanning, 0, spanning.length);
      v.putLong(8, 0x0102030405060708L);
      v.putInt(20, 77);
      v.putByte(24, (byte) 9);
      v.sync();
    }
    try (RedoVolume v = RedoVolume.open(file())) {
      byte[] back = new byte[spanning.length];
      v.getData(RedoVolume.PAGE - 50, back, 0, back.length);
      assertArrayEquals(spanning, back);
      assertEquals(0x0102030405060708L, v.getLong(8));
      assertEquals(77, v.getInt(20));
      assertEquals(9, v.getByte(24));
      assertEquals(0, v.getLong(1 << 19), "unwritten space reads as zeros");
      assertEquals(1 << 20, v.length(), "grows in steps of 1 MiB");
    }
  }

  @Test
  void recordsOfEverySize_replayInOrder() throws IOException {
    // small records share one kept buffer; one past RECORD_KEPT gets its own
    byte[] big = bytes(RedoVolume.RECORD_KEPT + 5 * RedoVolume.PAGE, 2);
    byte[] small = bytes(100, 3);
    try (RedoVolume v = RedoVolume.open(file(), java.time.Duration.ofHours(1))) { // no checkpoint: replay does it
      v.ensureAvailable(2L * big.length);
      v.putData(0, small, 0, small.length);
      v.sync();
      v.putData(RedoVolume.PAGE, big, 0, big.length);
      v.sync();
      v.putData(50, small, 0, small.length); // over the first record's bytes
      v.sync();
      v.forceLog();
      assertTrue(Files.size(RedoVolume.redoPath(file())) > big.length, "all three in the log");
    }
    try (RedoVolume v = RedoVolume.open(file())) {
      byte[] back = new byte[big.length];
      v.getData(RedoVolume.PAGE, back, 0, back.length);
      assertArrayEquals(big, back);
      byte[] head = new byte[150];
      v.getData(0, head, 0, head.length);
      assertArrayEquals(Arrays.copyOf(small, 50), Arrays.copyOf(head, 50));
      assertArrayEquals(small, Arrays.copyOfRange(head, 50, 150));
    }
  }

  @Test
  void writes_reachTheStoreFileAtCheckpoint_throughTheLog() throws IOException {
    try (RedoVolume v = RedoVolume.open(file())) {
      v.ensureAvailable(100);
      v.putLong(0, 42);
      assertEquals(42, v.getLong(0), "reads see buffered writes");
      assertEquals(0, onDisk(0), "the store file is untouched before sync");
      v.sync();
      assertEquals(42, v.getLong(0), "reads see logged writes");
      assertEquals(0, onDisk(0), "a sync only appends to the log");
      assertEquals(1, redoRecords().size());
      v.checkpoint();
      assertEquals(42, onDisk(0));
      assertTrue(redoRecords().isEmpty(), "a checkpoint empties the log");
    }
  }

  @Test
  void rewritingTheSameBytes_logsOnlyThePagesThatChanged() throws IOException {
    byte[] header = bytes(3 * RedoVolume.PAGE, 5); // as MapDB rewrites its header at every commit
    try (RedoVolume v = RedoVolume.open(file())) {
      v.ensureAvailable(10 * RedoVolume.PAGE);
      v.putData(0, header, 0, header.length);
      v.sync();
      header[RedoVolume.PAGE + 10]++; // a commit that changes one word of page 1
      v.putData(0, header, 0, header.length);
      v.putLong(5 * RedoVolume.PAGE, 7);
      v.sync();
      v.putData(0, header, 0, header.length); // nothing changed at all
      v.sync();
      List<List<RedoVolume.Edit>> records = redoRecords();
      assertEquals(2, records.size(), "a sync with nothing changed writes no record");
      assertEquals(List.of(0L, (long) RedoVolume.PAGE, 2L * RedoVolume.PAGE),
          records.get(0).stream().map(RedoVolume.Edit::offset).toList());
      assertEquals(List.of((long) RedoVolume.PAGE, 5L * RedoVolume.PAGE),
          records.get(1).stream().map(RedoVolume.Edit::offset).toList());
    }
    try (RedoVolume v = RedoVolume.open(file())) {
      byte[] back = new byte[header.length];
      v.getData(0, back, 0, back.length);
      assertArrayEquals(header, back);
      assertEquals(7, v.getLong(5 * RedoVolume.PAGE));
    }
  }

  /**
   * A sync logs the blocks its writes changed, not their pages; replayed over the store file as
   * the last checkpoint left it, or over pages a checkpoint that a crash cut short already wrote
   * in place, the records give the same bytes.
   */
  @Test
  void aSync_logsOnlyTheBlocksItChanged_andReplaysOverATornCheckpoint() throws IOException {
    byte[] content = bytes(3 * RedoVolume.PAGE, 7);
    Path crashed = dir.resolve("crashed");
    Files.createDirectories(crashed);
    try (RedoVolume v = RedoVolume.open(file(), java.time.Duration.ofHours(1))) { // no checkpoint of its own
      v.ensureAvailable(4 * RedoVolume.PAGE);
      v.putData(0, content, 0, content.length);
      v.sync();
      long first = Files.size(RedoVolume.redoPath(file()));
      ByteBuffer.wrap(content).putLong(RedoVolume.PAGE + 8, 42); // block 0 of page 1
      ByteBuffer.wrap(content).putInt(3 * RedoVolume.PAGE - 4, 43); // the last block of page 2
      v.putData(0, content, 0, content.length); // as MapDB rewrites a record whole
      v.sync();
      v.forceLog();
      assertEquals(first + RedoVolume.HEADER_BLOCKS + 2 * RedoVolume.PAGE_ENTRY + 2 * RedoVolume.BLOCK + RedoVolume.TRAILER,
          Files.size(RedoVolume.redoPath(file())), "two blocks logged, not two pages");
      List<RedoVolume.Edit> second = redoRecords().get(1);
      assertEquals(List.of((long) RedoVolume.PAGE, 3L * RedoVolume.PAGE - RedoVolume.BLOCK),
          second.stream().map(RedoVolume.Edit::offset).toList());
      assertArrayEquals(Arrays.copyOfRange(content, RedoVolume.PAGE, RedoVolume.PAGE + RedoVolume.BLOCK), second.get(0).data());
      // the files as a crash now would leave them: the store file untouched since the open
      Files.copy(file(), crashed.resolve("store"));
      Files.copy(RedoVolume.redoPath(file()), RedoVolume.redoPath(crashed.resolve("store")));
    }
    // a checkpoint cut short: page 1 already written in place, pages 0 and 2 not
    try (FileChannel ch = FileChannel.open(crashed.resolve("store"), StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.wrap(content, RedoVolume.PAGE, RedoVolume.PAGE), RedoVolume.PAGE);
    }
    try (RedoVolume v = RedoVolume.open(crashed.resolve("store"))) {
      byte[] back = new byte[content.length];
      v.getData(0, back, 0, back.length);
      assertArrayEquals(content, back);
    }
  }

  @Test
  void open_dropsARecordOfBlocksWhoseMasksOverrunIt() throws IOException {
    try (RedoVolume v = RedoVolume.open(file(), java.time.Duration.ofHours(1))) {
      v.ensureAvailable(100);
      v.putLong(0, 1);
      v.sync();
      v.putLong(8, 2);
      v.sync();
      v.forceLog();
      Files.copy(RedoVolume.redoPath(file()), dir.resolve("log"));
    }
    byte[] log = Files.readAllBytes(dir.resolve("log"));
    int second = RedoVolume.HEADER_BLOCKS + RedoVolume.PAGE_ENTRY + RedoVolume.BLOCK + RedoVolume.TRAILER;
    // the second record's page says all 64 blocks follow, with its CRC made to match: still refused
    ByteBuffer b = ByteBuffer.wrap(log);
    b.putLong(second + RedoVolume.HEADER_BLOCKS + 8, -1L);
    int length = b.getInt(second + RedoVolume.HEADER);
    CRC32C crc = new CRC32C();
    crc.update(log, second, length - RedoVolume.TRAILER);
    b.putLong(second + length - RedoVolume.TRAILER, crc.getValue());
    Files.write(RedoVolume.redoPath(file()), log);
    try (FileChannel ch = FileChannel.open(RedoVolume.redoPath(file()), StandardOpenOption.READ)) {
      assertEquals(1, RedoVolume.parse(ch).size(), "the first record only");
    }
  }

  @Test
  void syncInterval_checkpointsOnItsOwn() throws Exception {
    try (RedoVolume v = RedoVolume.open(file(), java.time.Duration.ofMillis(100))) {
      v.ensureAvailable(100);
      v.putLong(0, 43);
      v.sync();
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (onDisk(0) != 43 && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertEquals(43, onDisk(0));
    }
  }

  @Test
  void open_replaysCompleteRecordsInOrder() throws IOException {
    try (RedoVolume v = RedoVolume.open(file())) {
      v.ensureAvailable(100);
      v.putLong(0, 1);
      v.sync();
    }
    byte[] first = bytes(RedoVolume.PAGE, 2);
    byte[] second = bytes(RedoVolume.PAGE, 3);
    Files.write(RedoVolume.redoPath(file()), concat(record(7, 0, 0, first), record(7, 1, 0, second)));
    try (RedoVolume v = RedoVolume.open(file())) {
      byte[] back = new byte[RedoVolume.PAGE];
      v.getData(0, back, 0, back.length);
      assertArrayEquals(second, back);
    }
    assertTrue(redoRecords().isEmpty());
  }

  @Test
  void open_dropsTornOrDamagedRecord() throws IOException {
    try (RedoVolume v = RedoVolume.open(file())) {
      v.ensureAvailable(100);
      v.putLong(0, 1);
      v.sync();
    }
    byte[] full = record(5, 0, 0, bytes(RedoVolume.PAGE, 3));
    byte[] torn = Arrays.copyOf(full, full.length - 20);
    byte[] damaged = full.clone();
    damaged[100] ^= 1;
    for (byte[] bad : new byte[][] {torn, damaged, new byte[5]}) {
      Files.write(RedoVolume.redoPath(file()), bad);
      try (RedoVolume v = RedoVolume.open(file())) {
        assertEquals(1, v.getLong(0));
      }
    }
  }

  @Test
  void open_stopsAtAnotherGenerationOrASequenceGap() throws IOException {
    try (RedoVolume v = RedoVolume.open(file())) {
      v.ensureAvailable(3 * RedoVolume.PAGE);
      v.sync();
    }
    byte[] page = bytes(RedoVolume.PAGE, 6);
    // a newer, shorter generation in front of an older one's records: only the newer applies
    Files.write(RedoVolume.redoPath(file()), concat(record(9, 0, 0, page), record(8, 1, RedoVolume.PAGE, bytes(RedoVolume.PAGE, 4))));
    try (RedoVolume v = RedoVolume.open(file())) {
      byte[] back = new byte[RedoVolume.PAGE];
      v.getData(0, back, 0, back.length);
      assertArrayEquals(page, back);
      assertEquals(0, v.getLong(RedoVolume.PAGE), "a record of another generation is not applied");
    }
    Files.write(RedoVolume.redoPath(file()), concat(record(3, 0, 0, page), record(3, 2, RedoVolume.PAGE, bytes(RedoVolume.PAGE, 5))));
    try (RedoVolume v = RedoVolume.open(file())) {
      assertEquals(0, v.getLong(RedoVolume.PAGE), "a record after a gap in the sequence is not applied");
    }
  }

  @Test
  void open_lockedByAnother_refused() throws IOException {
    try (RedoVolume v = RedoVolume.open(file())) {
      assertThrows(IOException.class, () -> RedoVolume.open(file()));
    }
    RedoVolume.open(file()).close();
  }

  @Test
  void clear_zeroesBufferedAndStoredBytes() throws IOException {
    try (RedoVolume v = RedoVolume.open(file())) {
      v.ensureAvailable(100);
      byte[] ones = new byte[3 * RedoVolume.PAGE];
      Arrays.fill(ones, (byte) 1);
      v.putData(0, ones, 0, ones.length);
      v.sync();
      v.clear(10, 2 * RedoVolume.PAGE + 10);
      v.sync();
      assertEquals(1, v.getByte(9));
      assertEquals(0, v.getByte(10));
      assertEquals(0, v.getByte(2 * RedoVolume.PAGE + 9));
      assertEquals(1, v.getByte(2 * RedoVolume.PAGE + 10));
    }
  }

  @Test
  void interruptedReader_failsAlone_volumeGoesOn() throws Exception {
    try (RedoVolume v = RedoVolume.open(file())) {
      v.ensureAvailable(2 * RedoVolume.PAGE);
      v.putLong(0, 5);
      v.sync();
      v.checkpoint(); // page 0 is in the clean-page cache now, page 1 in the store file only
      Thread.currentThread().interrupt(); // the channel read sees it and closes the channel
      assertThrows(java.io.UncheckedIOException.class, () -> v.getLong(RedoVolume.PAGE));
      assertTrue(Thread.interrupted(), "the interrupt stays with the thread");
      assertEquals(5, v.getLong(0));
      assertEquals(0, v.getLong(RedoVolume.PAGE));
      v.putLong(8, 6);
      v.sync();
    }
    try (RedoVolume v = RedoVolume.open(file())) {
      assertEquals(6, v.getLong(8));
    }
  }

  @Test
  void reads_seeTheLatestBytes_throughSyncsCheckpointsAndSharedCacheSlots() throws Exception {
    long far = (long) RedoVolume.CLEAN_SLOTS * RedoVolume.PAGE; // its page shares page 0's slot
    long[] offsets = {0, 8, RedoVolume.PAGE, far, far + 8};
    java.util.Map<Long, Long> model = new java.util.HashMap<>();
    java.util.Random r = new java.util.Random(1);
    try (RedoVolume v = RedoVolume.open(file())) {
      v.ensureAvailable(far + RedoVolume.PAGE);
      for (int i = 0; i < 5000; i++) {
        long at = offsets[r.nextInt(offsets.length)];
        switch (r.nextInt(4)) {
          case 0 -> {
            long value = r.nextLong();
            v.putLong(at, value);
            model.put(at, value);
          }
          case 1 -> v.sync();
          case 2 -> v.checkpoint();
          default -> assertEquals(model.getOrDefault(at, 0L), v.getLong(at), "at " + at + ", step " + i);
        }
      }
      v.sync();
    }
    try (RedoVolume v = RedoVolume.open(file())) {
      for (long at : offsets) {
        assertEquals(model.getOrDefault(at, 0L), v.getLong(at));
      }
    }
  }

  /** A redo record as the volume writes it: pages at {@code firstOffset}, one after another. */
  private static byte[] record(long generation, long seq, long firstOffset, byte[]... pages) {
    ByteBuffer b = ByteBuffer.allocate(RedoVolume.HEADER + pages.length * (8 + RedoVolume.PAGE) + RedoVolume.TRAILER);
    b.putLong(RedoVolume.MAGIC).putLong(generation).putLong(seq).putInt(pages.length);
    for (int i = 0; i < pages.length; i++) {
      b.putLong(firstOffset + (long) i * RedoVolume.PAGE).put(pages[i]);
    }
    CRC32C crc = new CRC32C();
    crc.update(b.array(), 0, b.position());
    b.putLong(crc.getValue()).putLong(RedoVolume.END);
    return b.array();
  }

  private long onDisk(long offset) throws IOException {
    try (FileChannel ch = FileChannel.open(file(), StandardOpenOption.READ)) {
      ByteBuffer b = ByteBuffer.allocate(8);
      ch.read(b, offset);
      return b.getLong(0);
    }
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] c = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, c, a.length, b.length);
    return c;
  }

  private List<List<RedoVolume.Edit>> redoRecords() throws IOException {
    try (FileChannel ch = FileChannel.open(RedoVolume.redoPath(file()), StandardOpenOption.READ)) {
      return RedoVolume.parse(ch);
    }
  }

  /**
   * Checkpoints beside syncs and reads, as the periodic one runs: a reader never sees a value go
   * back (a stale copy of a page taken out of the logged ones), and nothing is lost after reopening.
   * Each value carries its slot and a version that only grows.
   */
  @Test
  void checkpoints_besideSyncsAndReads_neverShowOldBytes_andLoseNothing() throws Exception {
    int slots = 48;
    long[] model = new long[slots];
    java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
    java.util.concurrent.atomic.AtomicReference<Throwable> failure = new java.util.concurrent.atomic.AtomicReference<>();
    java.util.concurrent.atomic.AtomicInteger checkpoints = new java.util.concurrent.atomic.AtomicInteger();
    long stride = RedoVolume.PAGE + 1000; // one slot per page, some across a page boundary
    try (RedoVolume v = RedoVolume.open(file(), java.time.Duration.ofSeconds(1))) {
      v.ensureAvailable(slots * stride + RedoVolume.PAGE);
      Thread checkpointer = new Thread(() -> {
        try {
          while (!stop.get()) {
            v.checkpoint();
            checkpoints.incrementAndGet();
          }
        } catch (Throwable t) {
          failure.compareAndSet(null, t);
        }
      });
      Thread reader = new Thread(() -> {
        long[] seen = new long[slots];
        try {
          while (!stop.get()) {
            for (int i = 0; i < slots; i++) {
              long x = v.getLong(i * stride + 4093);
              if (x != 0 && (x >>> 40) != i) {
                throw new AssertionError("slot " + i + " holds " + Long.toHexString(x));
              }
              long version = x & ((1L << 40) - 1);
              if (version < seen[i]) {
                throw new AssertionError("slot " + i + " went back from version " + seen[i] + " to " + version);
              }
              seen[i] = version;
            }
          }
        } catch (Throwable t) {
          failure.compareAndSet(null, t);
        }
      });
      checkpointer.start();
      reader.start();
      Random r = new Random(7);
      for (long version = 1; version <= 20_000 && failure.get() == null; version++) {
        int i = r.nextInt(slots);
        long x = ((long) i << 40) | version;
        v.putLong(i * stride + 4093, x);
        model[i] = x;
        if (r.nextInt(4) == 0) {
          v.sync();
        }
      }
      v.sync();
      stop.set(true);
      checkpointer.join(30_000);
      reader.join(30_000);
      if (failure.get() != null) {
        throw new AssertionError(failure.get());
      }
      assertTrue(checkpoints.get() > 10, "checkpoints ran: " + checkpoints.get());
    }
    try (RedoVolume v = RedoVolume.open(file())) {
      for (int i = 0; i < slots; i++) {
        assertEquals(model[i], v.getLong(i * stride + 4093), "slot " + i);
      }
    }
  }
  /**
   * A crash at any sync, with the checkpoint under way cut short anywhere: copies of the store and
   * log files taken at random syncs, some of the store's pages then overwritten with their bytes
   * as of that sync (what a checkpoint writes in place), reopen to exactly the bytes of that sync.
   * Writes of every shape between syncs: within a block, across blocks and pages, bytes rewritten
   * unchanged, zeroed ranges, and checkpoints now and then.
   */
  @Test
  void crashesAtRandomSyncs_overTornCheckpoints_reopenToThatSync() throws IOException {
    int size = 16 * RedoVolume.PAGE;
    byte[] model = new byte[size];
    Random r = new Random(2026);
    int crashes = 0;
    try (RedoVolume v = RedoVolume.open(file(), java.time.Duration.ofHours(1))) {
      v.ensureAvailable(size);
      for (int step = 0; step < 600; step++) {
        int op = r.nextInt(10);
        if (op < 6) {
          int len = 1 + r.nextInt(r.nextBoolean() ? 64 : 3 * RedoVolume.PAGE);
          int at = r.nextInt(size - len);
          byte[] b = new byte[len];
          if (op == 5) {
            System.arraycopy(model, at, b, 0, len); // the same bytes again: changes nothing
          } else {
            r.nextBytes(b);
          }
          v.putData(at, b, 0, len);
          System.arraycopy(b, 0, model, at, len);
        } else if (op == 6) {
          int len = 1 + r.nextInt(2 * RedoVolume.PAGE);
          int at = r.nextInt(size - len);
          v.clear(at, at + len);
          Arrays.fill(model, at, at + len, (byte) 0);
        } else if (op == 7) {
          v.sync();
          v.checkpoint();
        } else {
          v.sync();
          if (r.nextInt(3) == 0) {
            crashes++;
            assertReopensTo(model, crashAt(v, r, model, crashes));
          }
        }
      }
    }
    assertTrue(crashes > 20, "crashes simulated: " + crashes);
  }

  /** Copies of the store and log files as a crash now leaves them, with a random part of a checkpoint done. */
  private Path crashAt(RedoVolume v, Random r, byte[] synced, int n) throws IOException {
    v.forceLog();
    Path crash = dir.resolve("crash" + n);
    Files.createDirectories(crash);
    Path store = crash.resolve("store");
    Files.copy(file(), store);
    Files.copy(RedoVolume.redoPath(file()), RedoVolume.redoPath(store));
    try (FileChannel ch = FileChannel.open(store, StandardOpenOption.WRITE)) {
      for (int page = 0; page < synced.length / RedoVolume.PAGE; page++) {
        if (r.nextInt(3) == 0) {
          ch.write(ByteBuffer.wrap(synced, page * RedoVolume.PAGE, RedoVolume.PAGE), (long) page * RedoVolume.PAGE);
        }
      }
    }
    return store;
  }

  private static void assertReopensTo(byte[] expected, Path store) throws IOException {
    try (RedoVolume v = RedoVolume.open(store)) {
      byte[] back = new byte[expected.length];
      v.getData(0, back, 0, back.length);
      assertArrayEquals(expected, back, store.toString());
    }
  }
}
