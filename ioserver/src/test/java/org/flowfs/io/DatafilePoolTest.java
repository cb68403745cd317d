package org.flowfs.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The datafile pool's deferred freeing: a large removed datafile is emptied when the store is quiet. */
class DatafilePoolTest {
  private static final long MIB = 1 << 20;

  @TempDir
  Path dir;
  private DatafilePool pool;

  @AfterEach
  void close() {
    if (pool != null) {
      pool.close();
    }
  }

  private Path datafile(String name, long bytes) throws IOException {
    Path p = dir.resolve(name);
    try (RandomAccessFile f = new RandomAccessFile(p.toFile(), "rw")) {
      byte[] block = new byte[(int) MIB];
      for (long at = 0; at < bytes; at += MIB) {
        f.write(block, 0, (int) Math.min(MIB, bytes - at));
      }
    }
    return p;
  }

  private static List<Path> filesIn(Path d) throws IOException {
    try (Stream<Path> s = Files.list(d)) {
      return s.toList();
    }
  }

  /** Waits up to 10 s for {@code p} to be empty. */
  private static void awaitEmpty(Path p) throws Exception {
    long until = System.nanoTime() + 10_000_000_000L;
    while (Files.size(p) != 0 && System.nanoTime() < until) {
      Thread.sleep(10);
    }
    assertEquals(0, Files.size(p), "freed in 10 s: " + p);
  }

  @Test
  void largeRemovedDatafile_waitsWhileTheStoreIsBusy_thenIsFreedAndReused() throws Exception {
    LongAdder freeing = new LongAdder();
    pool = new DatafilePool(dir.resolve("free"), 16, 0, freeing);
    Path removed = datafile("removed", 4 * MIB);

    // a store busy with I/O: a read or write every millisecond while the remove comes
    long busyUntil = System.nanoTime() + 200_000_000L;
    pool.busy();
    assertEquals(DatafilePool.Outcome.RECYCLED, pool.recycle(removed));
    Path pooled = filesIn(dir.resolve("free")).get(0);
    assertEquals(4 * MIB, Files.size(pooled), "the remove answered before the blocks were freed");
    while (System.nanoTime() < busyUntil) {
      pool.busy();
      Thread.sleep(1);
    }
    assertEquals(4 * MIB, Files.size(pooled), "its blocks wait while the store reads and writes");
    assertEquals(4 * MIB, freeing.sum(), "store.freeing-bytes");
    assertEquals(4 * MIB, pool.freeing());
    assertNull(pool.take(), "a file that waits to be freed is no new datafile");

    // quiet: freed, and then the next new datafile
    awaitEmpty(pooled);
    long until = System.nanoTime() + 5_000_000_000L;
    while (freeing.sum() != 0 && System.nanoTime() < until) {
      Thread.sleep(10);
    }
    assertEquals(0, freeing.sum());
    assertEquals(pooled, pool.take());
  }

  @Test
  void smallRemovedDatafile_isEmptiedByTheRemove() throws Exception {
    LongAdder freeing = new LongAdder();
    pool = new DatafilePool(dir.resolve("free"), 16, 0, freeing);
    Path removed = datafile("small", DatafilePool.FREE_LATER_MIN - MIB / 2);
    pool.busy();
    assertEquals(DatafilePool.Outcome.RECYCLED, pool.recycle(removed));
    Path pooled = pool.take();
    assertEquals(0, Files.size(pooled), "emptied at once: a truncate of a few blocks");
    assertEquals(0, freeing.sum());
  }

  @Test
  void close_freesWhatWaits_withoutWaitingForQuiet() throws Exception {
    pool = new DatafilePool(dir.resolve("free"), 16, 0, new LongAdder());
    pool.busy();
    pool.recycle(datafile("a", 3 * MIB));
    pool.recycle(datafile("b", 2 * MIB));
    pool.busy();
    pool.close();
    pool = null;
    List<Path> pooled = filesIn(dir.resolve("free"));
    assertEquals(2, pooled.size());
    for (Path p : pooled) {
      assertEquals(0, Files.size(p), "freed as the store closed: " + p);
    }
  }

  @Test
  void fileLeftWithDataByACrash_isFreedAfterTheStart_thenReused() throws Exception {
    Path free = Files.createDirectories(dir.resolve("free"));
    Path left = free.resolve("0000000000000007");
    Files.move(datafile("left", 2 * MIB), left);
    LongAdder freeing = new LongAdder();
    pool = new DatafilePool(free, 16, 0, freeing);
    awaitEmpty(left);
    long until = System.nanoTime() + 5_000_000_000L;
    Path taken;
    while ((taken = pool.take()) == null && System.nanoTime() < until) {
      Thread.sleep(10);
    }
    assertEquals(left, taken);
    assertEquals(0, freeing.sum());
    Path next = pool.recycle(datafile("other", 0)) == DatafilePool.Outcome.RECYCLED ? pool.take() : null;
    assertNotEquals(left, next, "names of new slots follow the ones found at start");
    assertTrue(next.getFileName().toString().compareTo("0000000000000007") > 0);
  }
}
