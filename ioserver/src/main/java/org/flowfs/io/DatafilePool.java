package org.flowfs.io;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.flowfs.common.Handle;
import org.flowfs.common.NamedThreads;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Emptied datafiles kept for reuse, in {@code data/free/}: a removed datafile is truncated and
 * moved here, and the first write of a new datafile moves one back under its handle's name. A
 * create is then a rename, not a new inode: a local file system spends most of a small file's
 * create in its inode allocator (on ext4, 0.3-0.5 ms on a disk whose inodes were freed recently
 * against 0.08 ms for the rename and the write), and the remove gets cheaper too (truncate and
 * rename: 0.04 ms against 0.1 ms for the unlink).
 *
 * <p>Pooled files hold no data (their blocks are freed when they enter the pool), only an inode
 * each; at most {@code max} are kept, past that a removed datafile is unlinked. Files left in
 * {@code free/} by an earlier run are taken up at start (emptied again if a crash left one
 * with data).
 *
 * <p><b>Made ahead.</b> With {@code ready} above zero the pool also keeps that many empty files
 * made in advance, so that a burst of creates with no removes in between (an untar, a job
 * writing its output files) renames files rather than waits for the inode allocator: when a take
 * leaves fewer than half of {@code ready}, one background thread ({@code io-precreate}) creates
 * files until there are {@code ready} again. The files cost an inode each and no blocks; if
 * making one fails (no inodes left), the thread stops until the next take asks again.
 *
 * <p>Thread safe. The store serializes what happens to one handle; the pool only hands each
 * pooled file to one taker.
 */
final class DatafilePool {
  private static final Logger LOG = LoggerFactory.getLogger(DatafilePool.class);
  /** What {@link #recycle} did. */
  enum Outcome {
    /** The file is in the pool now. */
    RECYCLED,
    /** There was no file to recycle. */
    MISSING,
    /** The pool is full; the file is where it was. */
    FULL
  }

  private final Path dir;
  private final int max;
  private final ConcurrentLinkedQueue<Path> files = new ConcurrentLinkedQueue<>();
  private final AtomicInteger size = new AtomicInteger();
  private final AtomicLong names = new AtomicLong();
  private final int ready;
  private final ExecutorService maker;
  private final AtomicBoolean making = new AtomicBoolean();
  private volatile boolean closed;

  /** A pool of at most {@code max} files, without files made ahead. */
  DatafilePool(Path dir, int max) throws IOException {
    this(dir, max, 0);
  }

  /** A pool of at most {@code max} files that keeps {@code ready} of them made ahead (0: none). */
  DatafilePool(Path dir, int max, int ready) throws IOException {
    this.dir = Files.createDirectories(dir);
    this.max = max;
    this.ready = Math.min(ready, max);
    this.maker = NamedThreads.single("io-precreate");
    long last = 0;
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
      for (Path p : ds) {
        long n = nameOf(p);
        if (n < 0 || size.get() >= max) {
          Files.deleteIfExists(p);
          continue;
        }
        if (Files.size(p) != 0) {
          empty(p);
        }
        last = Math.max(last, n);
        files.add(p);
        size.incrementAndGet();
      }
    }
    names.set(last);
    makeAheadIfLow();
  }

  private static long nameOf(Path p) {
    String n = p.getFileName().toString();
    if (n.length() != 16 || !Files.isRegularFile(p)) {
      return -1;
    }
    try {
      return Long.parseUnsignedLong(n, 16);
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  private static void empty(Path p) throws IOException {
    try (FileChannel ignored = FileChannel.open(p, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
      // opening with O_TRUNC frees the blocks
    }
  }

  /** A pooled, empty file for the caller alone, or null if the pool is empty. */
  Path take() {
    Path p = files.poll();
    if (p != null) {
      size.decrementAndGet();
    }
    makeAheadIfLow();
    return p;
  }

  /** Starts the maker when files made ahead are wanted and fewer than half are left. */
  private void makeAheadIfLow() {
    if (ready > 0 && !closed && size.get() < (ready + 1) / 2 && making.compareAndSet(false, true)) {
      try {
        maker.execute(this::makeAhead);
      } catch (RejectedExecutionException e) {
        making.set(false); // closing
      }
    }
  }

  /** On the maker's thread: creates empty files until {@code ready} are pooled. */
  private void makeAhead() {
    boolean failed = false;
    try {
      while (!closed && size.get() < ready) {
        Path slot = reserve();
        if (slot == null) {
          break;
        }
        try {
          Files.createFile(slot);
          files.add(slot);
        } catch (IOException e) {
          size.decrementAndGet();
          LOG.debug("making a pooled datafile in {} failed, until the next take: {}", dir, e.toString());
          failed = true;
          break;
        }
      }
    } finally {
      making.set(false);
    }
    if (!failed) {
      makeAheadIfLow(); // takes that came while the flag was still set
    }
  }

  /** Stops making files ahead and waits for the maker to finish the file it is on. */
  void close() {
    closed = true;
    maker.shutdown();
    try {
      if (!maker.awaitTermination(10, TimeUnit.SECONDS)) {
        LOG.warn("the datafile maker of {} did not stop in 10 s", dir);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Counts one more pooled file and names its slot, or returns null when the pool is full. */
  private Path reserve() {
    if (size.incrementAndGet() > max) {
      size.decrementAndGet();
      return null;
    }
    return dir.resolve(Handle.hex(names.incrementAndGet()));
  }

  /** Returns a file {@link #take} gave out and the caller did not use. */
  void giveBack(Path p) {
    files.add(p);
    size.incrementAndGet();
  }

  /**
   * Moves the datafile at {@code p}, which nobody has open, into the pool and frees its data.
   * The caller unlinks it instead when the pool is {@link Outcome#FULL}.
   */
  Outcome recycle(Path p) throws IOException {
    Path slot = reserve();
    if (slot == null) {
      return Outcome.FULL;
    }
    boolean moved = false;
    try {
      Files.move(p, slot);
      moved = true;
      empty(slot);
      files.add(slot);
      return Outcome.RECYCLED;
    } catch (NoSuchFileException e) {
      size.decrementAndGet();
      return Outcome.MISSING;
    } catch (IOException e) {
      size.decrementAndGet();
      if (moved) {
        Files.deleteIfExists(slot);
      }
      throw e;
    }
  }
}
