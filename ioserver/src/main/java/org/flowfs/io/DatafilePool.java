package org.flowfs.io;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileStore;
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
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
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
 * <p>Pooled files hold no data, only an inode each; at most {@code max} are kept, past that a
 * removed datafile is unlinked. Files left in {@code free/} by an earlier run are taken up at
 * start (emptied again if a crash left one with data).
 *
 * <p><b>Freed later.</b> A removed datafile of {@link #FREE_LATER_MIN} or more has its blocks
 * freed by one background thread ({@code io-free}), not by the remove: freeing is file system work
 * that stalls the I/O beside it (on ext4, truncating four datafiles of 512 MiB took 0.34 s, and a
 * direct write of 512 MiB running meanwhile took 0.68-1.07 s against 0.36-0.63 s alone; through
 * FlowFS, the first 16 MiB of a new file written right after a 1 GiB file was removed took 220-290
 * ms instead of 20-40). The thread truncates a file {@link #FREE_STEP} bytes at a time, each step
 * once the store has had no read or write for {@link #QUIET_NANOS}: a large remove's cost moves to
 * a moment when nobody waits. When space runs short (less usable than four times what waits to be
 * freed, or under a twentieth of the disk) it frees without waiting, and a remove frees its file
 * itself before it answers, so a full disk has its room back as the remove returns. What waits is
 * counted in {@code store.freeing-bytes}; a file that waits is not taken for a new datafile until
 * it is empty.
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
  /** Files in the pool, empty or waiting to be freed (bounded by {@code max}). */
  private final AtomicInteger size = new AtomicInteger();
  /** Of those, the empty ones, in {@link #files}. */
  private final AtomicInteger empties = new AtomicInteger();
  private final AtomicLong names = new AtomicLong();
  private final int ready;
  private final ExecutorService maker;
  private final AtomicBoolean making = new AtomicBoolean();
  /** Bytes a step of freeing truncates at once. */
  static final long FREE_STEP = 64L << 20;
  /** The smallest removed datafile freed later; a smaller one is emptied at once (a truncate of a few blocks). */
  static final long FREE_LATER_MIN = 1L << 20;
  /** How long the store has had no read or write before a step of freeing runs (unless space is short). */
  static final long QUIET_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
  /** Removed files whose blocks wait to be freed, in {@code dir} already. */
  private final ConcurrentLinkedQueue<Waiting> toFree = new ConcurrentLinkedQueue<>();
  /** Bytes of the files in {@link #toFree} not freed yet: {@code store.freeing-bytes}. */
  private final LongAdder freeing;
  private final ExecutorService freer;
  private final AtomicBoolean freerOn = new AtomicBoolean();
  private final FileStore fileStore;
  /** The size of {@link #fileStore}, read once. */
  private final long fileStoreTotal;
  /** When the store last read or wrote ({@link System#nanoTime()}). */
  private volatile long lastBusy = System.nanoTime() - QUIET_NANOS;
  private volatile boolean closed;
  /** Freeing stops at the next step: closing took too long. */
  private volatile boolean stopped;

  /** A pool of at most {@code max} files, without files made ahead. */
  DatafilePool(Path dir, int max) throws IOException {
    this(dir, max, 0, new LongAdder());
  }

  /**
   * A pool of at most {@code max} files that keeps {@code ready} of them made ahead (0: none),
   * counting the bytes that wait to be freed in {@code freeing}.
   */
  DatafilePool(Path dir, int max, int ready, LongAdder freeing) throws IOException {
    this.dir = Files.createDirectories(dir);
    this.max = max;
    this.ready = Math.min(ready, max);
    this.freeing = freeing;
    this.fileStore = Files.getFileStore(dir);
    this.fileStoreTotal = fileStore.getTotalSpace();
    this.maker = NamedThreads.single("io-precreate");
    this.freer = NamedThreads.single("io-free");
    long last = 0;
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
      for (Path p : ds) {
        long n = nameOf(p);
        if (n < 0 || size.get() >= max) {
          Files.deleteIfExists(p);
          continue;
        }
        last = Math.max(last, n);
        size.incrementAndGet();
        long bytes = Files.size(p);
        if (bytes != 0) {
          freeLater(p, bytes); // a crash came before its blocks were freed
        } else {
          empty(p); // blocks reserved past its end, if a crash came before they were freed
          addEmpty(p);
        }
      }
    }
    names.set(last);
    makeAheadIfLow();
  }

  /** Notes a read or write of the store: freeing waits until they pause. */
  void busy() {
    lastBusy = System.nanoTime();
  }

  private void addEmpty(Path p) {
    files.add(p);
    empties.incrementAndGet();
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
      empties.decrementAndGet();
      size.decrementAndGet();
    }
    makeAheadIfLow();
    return p;
  }

  /** Starts the maker when files made ahead are wanted and fewer than half are left. */
  private void makeAheadIfLow() {
    if (ready > 0 && !closed && empties.get() < (ready + 1) / 2 && making.compareAndSet(false, true)) {
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
      while (!closed && empties.get() < ready) {
        Path slot = reserve();
        if (slot == null) {
          break;
        }
        try {
          Files.createFile(slot);
          addEmpty(slot);
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

  /**
   * Stops making files ahead and waits for the maker to finish the file it is on; frees what
   * waits to be freed without waiting for quiet (no more writes come), for at most 10 s: files
   * not freed by then stay in {@code dir}, freed after the next start.
   */
  void close() {
    closed = true;
    maker.shutdown();
    freer.shutdown();
    try {
      if (!maker.awaitTermination(10, TimeUnit.SECONDS)) {
        LOG.warn("the datafile maker of {} did not stop in 10 s", dir);
      }
      if (!freer.awaitTermination(10, TimeUnit.SECONDS)) {
        stopped = true;
        LOG.warn("freeing the removed datafiles of {} did not end in 10 s: the rest is freed at the next start", dir);
        freer.awaitTermination(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      stopped = true;
      Thread.currentThread().interrupt();
    }
  }

  /** Bytes of removed datafiles not freed yet. */
  long freeing() {
    return freeing.sum();
  }

  /** A file waiting to be freed, and its bytes as counted in {@link #freeing}. */
  private record Waiting(Path path, long bytes) {}

  /** Queues {@code p}, of {@code bytes} bytes and counted in {@link #size}, for the freer. */
  private void freeLater(Path p, long bytes) {
    freeing.add(bytes);
    toFree.add(new Waiting(p, bytes));
    startFreer();
  }

  private void startFreer() {
    if (!stopped && freerOn.compareAndSet(false, true)) {
      try {
        freer.execute(this::freeAll);
      } catch (RejectedExecutionException e) {
        freerOn.set(false); // closing
      }
    }
  }

  /** On the freer's thread: frees the queued files, then they are the pool's empty files. */
  private void freeAll() {
    try {
      for (Waiting w; !stopped && (w = toFree.poll()) != null; ) {
        free(w);
      }
    } finally {
      freerOn.set(false);
    }
    if (!toFree.isEmpty()) {
      startFreer(); // queued while the flag was still set
    }
  }

  /**
   * Truncates {@code w}'s file a {@link #FREE_STEP} at a time, each step when the store is quiet
   * or space short, then pools it; unlinks it after a failure; leaves it in {@code dir}, freed
   * after the next start, when {@link #close} stopped freeing.
   */
  private void free(Waiting w) {
    Path p = w.path();
    long left = w.bytes();
    try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
      long now = ch.size(); // as counted when queued; counted as it is if that differs
      freeing.add(now - left);
      left = now;
      while (left > 0) {
        if (!awaitTurn()) {
          return;
        }
        long to = (left - 1) / FREE_STEP * FREE_STEP;
        ch.truncate(to);
        freeing.add(to - left);
        left = to;
      }
    } catch (IOException e) {
      LOG.warn("freeing the blocks of the removed datafile {} failed ({}): unlinking it", p, e.toString());
      freeing.add(-left);
      size.decrementAndGet();
      try {
        Files.deleteIfExists(p);
      } catch (IOException gone) {
        LOG.warn("could not unlink {} either: {}", p, gone.toString());
      }
      return;
    }
    addEmpty(p);
    makeAheadIfLow();
  }

  /**
   * Waits until the store has had no read or write for {@link #QUIET_NANOS}, space is short or
   * the pool closes; false when {@link #close} stopped freeing.
   */
  private boolean awaitTurn() {
    while (!stopped) {
      long idle = System.nanoTime() - lastBusy;
      if (idle >= QUIET_NANOS || closed || spaceShort(0)) {
        return true;
      }
      LockSupport.parkNanos(QUIET_NANOS - idle);
    }
    return false;
  }

  /**
   * Whether freeing should not wait: the file system has less usable space than four times what
   * waits to be freed (with {@code more} bytes about to), or under a twentieth of its size.
   */
  private boolean spaceShort(long more) {
    try {
      long usable = fileStore.getUsableSpace();
      return usable < fileStoreTotal / 20 || usable / 4 < freeing.sum() + more;
    } catch (IOException e) {
      return true;
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
    size.incrementAndGet();
    addEmpty(p);
  }

  /**
   * Moves the datafile at {@code p}, which nobody has open, into the pool, where its blocks are
   * freed later (at once when space is short). The caller unlinks it instead when the pool is
   * {@link Outcome#FULL}.
   */
  Outcome recycle(Path p) throws IOException {
    Path slot = reserve();
    if (slot == null) {
      return Outcome.FULL;
    }
    boolean moved = false;
    try {
      long bytes = Files.size(p);
      Files.move(p, slot);
      moved = true;
      if (bytes >= FREE_LATER_MIN && !spaceShort(bytes)) {
        freeLater(slot, bytes);
        return Outcome.RECYCLED;
      }
      empty(slot); // an empty one too: blocks reserved past its end (fallocate) are freed only so
      addEmpty(slot);
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
