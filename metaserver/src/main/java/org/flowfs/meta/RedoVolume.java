package org.flowfs.meta;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;
import java.util.zip.CRC32C;
import org.eclipse.collections.impl.map.mutable.primitive.LongObjectHashMap;
import org.mapdb.DataInput2;
import org.mapdb.volume.Volume;

/**
 * A MapDB {@link Volume} over one file whose every {@link #sync()} (MapDB calls it once at the end
 * of each commit) is atomic, even against a crash in the middle of it: after a crash the store
 * holds the state after some prefix of the syncs, never part of one.
 *
 * <p><b>Why.</b> MapDB 3.1.0's transactional store ({@code StoreWAL}) writes only record data to
 * its write-ahead log; index and free-space changes go straight into the store file after the
 * log is synced, and nothing replays the log when the store is opened again. A process killed
 * while a commit writes the store file leaves a torn file (B-tree nodes pointing at garbage),
 * which the crash test of this module produced with plain {@code fileDB(..).transactionEnable()}
 * in about one kill of thirty.
 *
 * <p><b>How: a redo log with checkpoints.</b> Writes between two syncs are kept in memory as whole
 * {@value #PAGE}-byte pages, each with a mask of its {@value #BLOCK}-byte blocks whose bytes the
 * writes changed. A sync appends the changed blocks as one record to the redo log beside the store
 * ({@code <file>.redo}: magic, log generation, sequence number, page count, record length, then
 * per page its offset, its block mask and the bytes of those blocks, CRC-32C, end marker) and
 * keeps the pages in memory as logged pages (reads see them); the store file is not touched. A
 * metadata operation changes a few dozen bytes in each of about ten pages (a B-tree node, index
 * words, MapDB's header): whole pages made a record of ~44 KiB per operation, the changed blocks
 * one of a few KiB. Replaying a block writes its bytes as of that sync, so replaying the records
 * in order over the store file as the last checkpoint left it, or over any page a later
 * checkpoint wrote in place, gives the same bytes: replay is idempotent. (Records of whole pages,
 * as an older version wrote them, still replay.) A checkpoint forces the log, writes every logged
 * page in place, forces the store file, and starts a new, empty log generation. Opening the volume
 * replays the records of the log's generation in sequence up to the first torn, damaged or
 * out-of-sequence one: the store then holds the state after the last record that reached the disk.
 *
 * <p><b>Durability.</b> With a {@code syncInterval} of zero every sync forces the log before it
 * returns: one fsync per commit, and an acknowledged commit survives a power loss. With an
 * interval, a sync returns once its record is in the operating system's page cache (it survives
 * a crash of the process, not of the machine) and a checkpoint, at least every interval, makes it
 * durable; {@link #forceLog()} makes everything synced so far durable at once (a client's fsync).
 * A machine crash then loses at most the last interval, and never leaves half of a commit, the way
 * a journaling local file system behaves between its commits.
 *
 * <p>The redo file is locked while the volume is open (it, not the store file, whose channel an
 * interrupted reader may close; see {@link #io}). {@link #truncate} and {@link #clear} are not
 * used by MapDB's transactional store; they work but are not atomic.
 *
 * <p><b>Threads.</b> Reads share a lock; writes take it exclusively, and so do syncs and
 * checkpoints, but only for their work in memory and their writes into the page cache: none holds
 * it while it waits for the disk (a forced log, pages written in place and forced), so a read (a
 * metadata server answers lookups on its network event loops) never waits for the disk behind a
 * sync or a checkpoint. Syncs and checkpoints exclude each other with a lock of their own. A
 * checkpoint writes in place only logged pages, which no reader reads from the file, and takes
 * them out of the logged pages (into the clean-page cache) only afterwards, under the exclusive
 * lock. The periodic checkpoint runs through a gate ({@link #checkpointsThrough}): the metadata
 * store's writer lets it run while no commit is under way, so that no commit on an event loop
 * waits for it either.
 *
 * <p><b>Reads</b> come from the pages buffered since the last checkpoint, else from a cache of
 * clean pages ({@value #CLEAN_SLOTS} slots, one page each, a page's slot fixed by its number),
 * else from the file, into that cache: MapDB reads a record at a time, a few words or a few
 * hundred bytes, and every B-tree step of a lookup is such a read (about nine per metadata
 * operation). A checkpoint puts the pages it writes in place into the cache.
 */
final class RedoVolume extends Volume {
  /** Slots of the clean-page cache: 32 MiB of pages at most. */
  static final int CLEAN_SLOTS = 8192;

  /** The unit of buffering. */
  static final int PAGE = 4096;
  /** The unit of the redo log: a page's changed blocks are logged, 64 per page, one bit each. */
  static final int BLOCK = 64;
  /** The store file grows in steps of this, as MapDB's own file volume does. */
  private static final long GROW = 1 << 20;
  /** A record of whole pages (the format of older versions; replayed, no longer written). */
  static final long MAGIC = 0x466c_6f77_5265_646fL; // "FlowRedo"
  /** A record of changed blocks. */
  static final long MAGIC_BLOCKS = 0x466c_6f77_426c_6b73L; // "FlowBlks"
  static final long END = 0x5265_646f_456e_6421L; // "RedoEnd!"
  /** magic, generation, sequence number, page count (a record of whole pages). */
  static final int HEADER = 8 + 8 + 8 + 4;
  /** magic, generation, sequence number, page count, record length (a record of changed blocks). */
  static final int HEADER_BLOCKS = HEADER + 4;
  /** Per page of a record of changed blocks: its offset and its block mask. */
  static final int PAGE_ENTRY = 8 + 8;
  static final int TRAILER = 8 + 8;
  /** Checkpoint early when this many pages wait in memory, or the log grows past {@link #MAX_LOG}. */
  static final int MAX_LOGGED_PAGES = 16384;
  static final long MAX_LOG = 256L << 20;

  private final Path path;
  private final File file;
  /** The store file; reopened if an interrupt of some reading thread closed it. */
  private volatile FileChannel channel;
  /** The redo file; only the committing thread uses it, and its lock guards the store. */
  private final FileChannel redo;
  private final FileLock fileLock;
  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  /** Held by a sync and by a checkpoint, for their whole length: one at a time. */
  private final ReentrantLock syncing = new ReentrantLock();
  /** What the periodic checkpoint runs through (see {@link #checkpointsThrough}). */
  private volatile Consumer<Runnable> gate = Runnable::run;
  /** Page number to its new content, written since the last sync; guarded by lock. */
  private final LongObjectHashMap<Dirty> dirty = new LongObjectHashMap<>();

  /** A page written since the last sync, and which of its blocks the writes changed. */
  private static final class Dirty {
    final byte[] data;
    long blocks;

    Dirty(byte[] data) {
      this.data = data;
    }
  }
  /** Pages synced (in the log) but not yet written in place; guarded by lock. */
  private final LongObjectHashMap<byte[]> logged = new LongObjectHashMap<>();

  /** A page as the store file holds it; its array is never written again. */
  private record CleanPage(long pageNo, byte[] data) {}

  /**
   * Clean pages: slot {@code pageNo % CLEAN_SLOTS}. Filled by readers (under the read lock, so
   * no checkpoint takes a page out of the logged pages meanwhile; the pages a checkpoint writes in
   * place are logged ones, which no reader reads from the file) and by checkpoints; a page buffered
   * in {@link #dirty} or {@link #logged} is read from there, so its slot may hold an older copy
   * until the checkpoint that writes it in place replaces it.
   */
  private final java.util.concurrent.atomic.AtomicReferenceArray<CleanPage> clean =
      new java.util.concurrent.atomic.AtomicReferenceArray<>(CLEAN_SLOTS);
  /** Records up to this size are assembled in one direct buffer kept for the next sync. */
  static final int RECORD_KEPT = 1 << 20;
  /** That buffer; guarded by lock. */
  private ByteBuffer record;
  /** Where the next record goes in the log, its generation and sequence number; guarded by lock. */
  private long logEnd;
  private long generation;
  private long seq;
  /** Zero: force the log at every sync. */
  private final long intervalNanos;
  private final java.util.concurrent.ScheduledExecutorService checkpointer;
  private final java.security.SecureRandom random = new java.security.SecureRandom();
  /** The length MapDB sees; guarded by lock. */
  private long size;
  /** Beyond this offset the store file holds only zeros; guarded by lock. */
  private long dataEnd;
  /** Pages one commit is assumed to log at most, for {@link #nearlyFull}. */
  static final int COMMIT_PAGES = 1024;
  /** Whether the next sync may find the log full and checkpoint; set under lock. */
  private volatile boolean nearlyFull;
  /** Set when a sync failed: the file may hold part of it, so no more writes until reopened. */
  private volatile RuntimeException failed;

  private RedoVolume(Path path, FileChannel channel, FileChannel redo, FileLock fileLock, java.time.Duration syncInterval)
      throws IOException {
    this.path = path;
    this.file = path.toFile();
    this.channel = channel;
    this.redo = redo;
    this.fileLock = fileLock;
    this.size = channel.size();
    this.dataEnd = size;
    this.intervalNanos = syncInterval.toNanos();
    this.generation = random.nextLong();
    long period = intervalNanos > 0 ? intervalNanos : java.util.concurrent.TimeUnit.SECONDS.toNanos(1);
    this.checkpointer = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "meta-checkpoint");
      t.setDaemon(true);
      return t;
    });
    checkpointer.scheduleWithFixedDelay(this::checkpointQuietly, period, period, java.util.concurrent.TimeUnit.NANOSECONDS);
  }

  /**
   * Opens (creating if missing) the store file {@code path} and its redo file, locks them, and
   * replays what a crash left in the log.
   *
   * @param syncInterval zero: every sync is durable before it returns; otherwise the longest a
   *     sync waits for the disk (see the class comment)
   * @throws IOException if the files cannot be opened or the store is locked by another process
   */
  static RedoVolume open(Path path) throws IOException {
    return open(path, java.time.Duration.ZERO);
  }

  static RedoVolume open(Path path, java.time.Duration syncInterval) throws IOException {
    FileChannel log = FileChannel.open(redoPath(path), StandardOpenOption.CREATE, StandardOpenOption.READ,
        StandardOpenOption.WRITE);
    FileChannel ch = null;
    try {
      FileLock l;
      try {
        l = log.tryLock(); // the redo file's, which no reader's interrupt can close
      } catch (OverlappingFileLockException e) {
        l = null;
      }
      if (l == null) {
        throw new IOException(path + " is in use by another process");
      }
      ch = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
      recover(ch, log);
      return new RedoVolume(path, ch, log, l, syncInterval);
    } catch (IOException | RuntimeException e) {
      log.close(); // releases the lock
      if (ch != null) {
        ch.close();
      }
      throw e;
    }
  }

  static Path redoPath(Path store) {
    return store.resolveSibling(store.getFileName() + ".redo");
  }

  /**
   * Replays the log into the store file: the records of the first record's generation, in
   * sequence, up to the first torn, damaged or out-of-sequence one; then empties the log.
   */
  private static void recover(FileChannel store, FileChannel log) throws IOException {
    List<List<Edit>> records = parse(log);
    for (List<Edit> edits : records) {
      for (Edit e : edits) {
        writeFully(store, ByteBuffer.wrap(e.data), e.offset);
      }
    }
    if (!records.isEmpty()) {
      store.force(true);
    }
    writeFully(log, ByteBuffer.allocate(8), 0);
    log.force(true);
  }

  /**
   * The intact records of the log, in order (see {@link #recover}), each as the bytes it puts at
   * which offsets: a whole page per page of a record of pages, a run of changed blocks of a page
   * per run of a record of blocks.
   */
  static List<List<Edit>> parse(FileChannel log) throws IOException {
    List<List<Edit>> records = new ArrayList<>();
    long fileSize = log.size();
    long at = 0;
    long gen = 0;
    long expect = 0;
    while (at + HEADER_BLOCKS + TRAILER <= fileSize) {
      ByteBuffer head = ByteBuffer.allocate(HEADER_BLOCKS);
      readFully(log, head, at);
      head.flip();
      long magic = head.getLong();
      if (magic != MAGIC && magic != MAGIC_BLOCKS) {
        break;
      }
      long g = head.getLong();
      long sq = head.getLong();
      int count = head.getInt();
      if (!records.isEmpty() && (g != gen || sq != expect)) {
        break; // a record of an older generation, left behind a shorter newer one
      }
      long length = magic == MAGIC ? (long) HEADER + (long) count * (8 + PAGE) + TRAILER : head.getInt();
      if (count < 0 || length < HEADER_BLOCKS + TRAILER || at + length > fileSize || length > Integer.MAX_VALUE) {
        break;
      }
      ByteBuffer b = ByteBuffer.allocate((int) length);
      readFully(log, b, at);
      b.flip();
      CRC32C crc = new CRC32C();
      crc.update(b.array(), 0, (int) length - TRAILER);
      b.position(magic == MAGIC ? HEADER : HEADER_BLOCKS);
      List<Edit> edits = magic == MAGIC ? pages(b, count) : blocks(b, count, (int) length - TRAILER);
      if (edits == null || b.position() != length - TRAILER || b.getLong() != crc.getValue() || b.getLong() != END) {
        break;
      }
      records.add(edits);
      gen = g;
      expect = sq + 1;
      at += length;
    }
    return records;
  }

  /** The pages of a record of whole pages. */
  private static List<Edit> pages(ByteBuffer b, int count) {
    List<Edit> edits = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      long offset = b.getLong();
      byte[] data = new byte[PAGE];
      b.get(data);
      edits.add(new Edit(offset, data));
    }
    return edits;
  }

  /** The runs of changed blocks of a record of blocks, or null if its entries overrun {@code end}. */
  private static List<Edit> blocks(ByteBuffer b, int count, int end) {
    List<Edit> edits = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      if (b.position() + PAGE_ENTRY > end) {
        return null;
      }
      long offset = b.getLong();
      long mask = b.getLong();
      if (b.position() + (long) Long.bitCount(mask) * BLOCK > end) {
        return null;
      }
      while (mask != 0) {
        int first = Long.numberOfTrailingZeros(mask);
        int run = Long.numberOfTrailingZeros(~(mask >>> first)); // set bits from first on
        byte[] data = new byte[run * BLOCK];
        b.get(data);
        edits.add(new Edit(offset + (long) first * BLOCK, data));
        mask &= run == 64 ? 0 : ~(((1L << run) - 1) << first);
      }
    }
    return edits;
  }

  /** Bytes a record puts at {@code offset} of the store file. */
  record Edit(long offset, byte[] data) {}

  // ---- writes: buffered until sync --------------------------------------------------------------

  @Override
  public void putData(long offset, byte[] src, int srcPos, int srcSize) {
    lock.writeLock().lock();
    try {
      checkWritable();
      int done = 0;
      while (done < srcSize) {
        long at = offset + done;
        int inPage = (int) (at % PAGE);
        int n = Math.min(srcSize - done, PAGE - inPage);
        write(at / PAGE, inPage, src, srcPos + done, n);
        done += n;
      }
    } finally {
      lock.writeLock().unlock();
    }
  }

  /**
   * Writes {@code n} bytes of {@code src} at {@code inPage} of page {@code pageNo}, marking the
   * blocks whose bytes change. Bytes that are already there change nothing and mark nothing: MapDB
   * rewrites its whole 32 KiB header at every commit, of which a commit changes a few words. Lock
   * held.
   */
  private void write(long pageNo, int inPage, byte[] src, int from, int n) {
    Dirty d = dirty.get(pageNo);
    byte[] now = d != null ? d.data : current(pageNo);
    long changed = changedBlocks(now, inPage, src, from, n);
    if (changed == 0) {
      return;
    }
    if (d == null) {
      d = new Dirty(now.clone()); // the logged copy stays as its record has it, for the checkpoint
      dirty.put(pageNo, d);
    }
    System.arraycopy(src, from, d.data, inPage, n);
    d.blocks |= changed;
  }

  /**
   * The blocks of {@code page} where {@code n} bytes of {@code src} at {@code inPage} differ from
   * what it holds. One vectorized comparison runs over the whole range and stops at each
   * difference only, which then marks its block and goes on from the next block: MapDB's 32 KiB
   * header, rewritten at every commit with a few words changed, costs a scan of its pages, not a
   * comparison per block.
   */
  static long changedBlocks(byte[] page, int inPage, byte[] src, int from, int n) {
    long mask = 0;
    int end = inPage + n;
    for (int at = inPage; at < end; ) {
      int m = java.util.Arrays.mismatch(page, at, end, src, from + at - inPage, from + n);
      if (m < 0) {
        break;
      }
      int block = (at + m) / BLOCK;
      mask |= 1L << block;
      at = (block + 1) * BLOCK;
    }
    return mask;
  }

  /** Page {@code pageNo} as of the last sync: logged, else as the store file holds it. Lock held. */
  private byte[] current(long pageNo) {
    byte[] l = logged.get(pageNo);
    return l != null ? l : cleanPage(pageNo);
  }

  @Override
  public void putData(long offset, ByteBuffer buf) {
    byte[] b = new byte[buf.remaining()];
    buf.get(b);
    putData(offset, b, 0, b.length);
  }

  @Override
  public void putLong(long offset, long value) {
    putData(offset, ByteBuffer.allocate(8).putLong(0, value).array(), 0, 8);
  }

  @Override
  public void putInt(long offset, int value) {
    putData(offset, ByteBuffer.allocate(4).putInt(0, value).array(), 0, 4);
  }

  @Override
  public void putByte(long offset, byte value) {
    putData(offset, new byte[] {value}, 0, 1);
  }

  @Override
  public void clear(long startOffset, long endOffset) {
    lock.writeLock().lock();
    try {
      checkWritable();
      for (long at = startOffset; at < endOffset; ) {
        long pageNo = at / PAGE;
        int inPage = (int) (at % PAGE);
        int n = (int) Math.min(endOffset - at, PAGE - inPage);
        if (dirty.containsKey(pageNo) || logged.containsKey(pageNo) || pageNo * PAGE < dataEnd) { // else zeros already
          write(pageNo, inPage, ZEROS, 0, n);
        }
        at += n;
      }
    } finally {
      lock.writeLock().unlock();
    }
  }

  private static final byte[] ZEROS = new byte[PAGE];

  @Override
  public void ensureAvailable(long offset) {
    long wanted = (offset + GROW - 1) / GROW * GROW;
    lock.writeLock().lock();
    try {
      checkWritable();
      if (wanted > size) {
        // a zero tail is harmless to a crash: MapDB's header says how much of the file is used
        io("growing", ch -> writeFully(ch, ByteBuffer.allocate(1), wanted - 1));
        size = wanted;
      }
    } finally {
      lock.writeLock().unlock();
    }
  }

  /**
   * Logs everything written since the last sync as one record, atomically (see the class
   * comment): durable before it returns with a zero sync interval, else within the interval. If
   * it fails, the volume refuses all further writes: reopening it replays what reached the log.
   */
  @Override
  public void sync() {
    syncing.lock();
    try {
      boolean full;
      lock.writeLock().lock();
      try {
        checkWritable();
        if (dirty.isEmpty()) {
          return;
        }
        try {
          appendRecord();
        } catch (IOException | RuntimeException e) {
          throw fail("syncing", e);
        }
        full = logged.size() > MAX_LOGGED_PAGES || logEnd > MAX_LOG;
      } finally {
        lock.writeLock().unlock();
      }
      try {
        if (intervalNanos == 0) {
          redo.force(false);
        }
        if (full) {
          checkpointUnlocked();
        }
      } catch (IOException | RuntimeException e) {
        throw fail("syncing", e);
      }
    } finally {
      syncing.unlock();
    }
  }

  /** Refuses all further writes after {@code e} (see {@link #sync}); what to throw. */
  private RuntimeException fail(String what, Exception e) {
    failed = e instanceof IOException io ? new UncheckedIOException(what + " " + file, io) : (RuntimeException) e;
    return failed;
  }

  /**
   * Makes the periodic checkpoint run through {@code gate}: it calls the runnable it is given
   * (the checkpoint) when that suits it, on its own thread, before it returns. The metadata
   * store's writer passes one that runs it while no commit is under way.
   */
  void checkpointsThrough(Consumer<Runnable> gate) {
    this.gate = gate;
  }

  /**
   * Appends the changed blocks of the dirty pages as the next record of the log and moves the
   * pages to the logged pages. Lock held.
   */
  private void appendRecord() throws IOException {
    long[] pages = dirty.keysView().toSortedArray();
    int length = HEADER_BLOCKS + TRAILER;
    for (long pageNo : pages) {
      length += PAGE_ENTRY + Long.bitCount(dirty.get(pageNo).blocks) * BLOCK;
    }
    ByteBuffer b = recordBuffer(length);
    b.putLong(MAGIC_BLOCKS).putLong(generation).putLong(seq).putInt(pages.length).putInt(length);
    for (long pageNo : pages) {
      Dirty d = dirty.get(pageNo);
      b.putLong(pageNo * PAGE).putLong(d.blocks);
      for (long m = d.blocks; m != 0; m &= m - 1) {
        b.put(d.data, Long.numberOfTrailingZeros(m) * BLOCK, BLOCK);
      }
    }
    CRC32C crc = new CRC32C();
    crc.update(b.duplicate().flip());
    b.putLong(crc.getValue()).putLong(END).flip();
    writeFully(redo, b, logEnd);
    logEnd += length;
    seq++;
    dirty.forEachKeyValue((pageNo, d) -> logged.put(pageNo, d.data));
    dirty.clear();
    nearlyFull = logged.size() + COMMIT_PAGES > MAX_LOGGED_PAGES
        || logEnd + COMMIT_PAGES * (long) (PAGE_ENTRY + PAGE) > MAX_LOG;
  }

  /**
   * Whether a sync of a commit of up to {@link #COMMIT_PAGES} pages may find the log full and
   * checkpoint (wait for the disk) before it returns.
   */
  boolean nearlyFull() {
    return nearlyFull;
  }

  /**
   * The buffer a record is assembled in, cleared, at least {@code size} bytes: direct, so the
   * write goes from it to the kernel without the copy into a temporary direct buffer that a heap
   * buffer costs, and kept from sync to sync (a commit of a few pages allocates nothing). A record
   * larger than {@link #RECORD_KEPT} (a big group commit, rare) gets a heap buffer of its own,
   * which the garbage collector takes back. Lock held.
   */
  private ByteBuffer recordBuffer(int size) {
    if (size > RECORD_KEPT) {
      return ByteBuffer.allocate(size);
    }
    if (record == null || record.capacity() < size) {
      record = ByteBuffer.allocateDirect(Math.max(size, RECORD_KEPT / 4));
    }
    return record.clear().limit(size);
  }

  /** Makes every record synced so far durable (a client asked for it: fsync). */
  void forceLog() {
    checkWritable();
    try {
      redo.force(false);
    } catch (IOException e) {
      throw new UncheckedIOException("forcing the redo log of " + file, e);
    }
  }

  /** Checkpoints now, as the volume does on its own every interval (tests). */
  void checkpoint() throws IOException {
    syncing.lock();
    try {
      checkWritable();
      checkpointUnlocked();
    } finally {
      syncing.unlock();
    }
  }

  private void checkpointQuietly() {
    gate.accept(() -> {
      if (failed != null || closed.get()) {
        return;
      }
      try {
        checkpoint();
      } catch (IOException | RuntimeException e) {
        fail("checkpointing", e);
      }
    });
  }

  /**
   * Makes the logged pages durable and writes them in place, then starts a new log generation,
   * holding the exclusive lock only to take the pages out of the logged ones and to write the new
   * generation's mark: reads go on while it waits for the disk. {@link #syncing} held, so no
   * record is appended meanwhile and the pages copied at the start are all the logged pages until
   * the end. Interrupted halfway, the next open replays the same records again: idempotent.
   */
  private void checkpointUnlocked() throws IOException {
    List<Map.Entry<Long, byte[]>> pages = new ArrayList<>();
    lock.readLock().lock();
    try {
      if (logEnd == 0 && logged.isEmpty()) {
        return;
      }
      logged.forEachKeyValue((k, v) -> pages.add(Map.entry(k, v)));
    } finally {
      lock.readLock().unlock();
    }
    pages.sort(Map.Entry.comparingByKey());
    redo.force(false); // every record so far, and so every page taken, durable in the log
    if (!pages.isEmpty()) {
      io("writing", ch -> {
        for (Map.Entry<Long, byte[]> p : pages) {
          writeFully(ch, ByteBuffer.wrap(p.getValue()), p.getKey() * PAGE);
        }
        ch.force(false);
      });
    }
    lock.writeLock().lock();
    try {
      for (Map.Entry<Long, byte[]> p : pages) {
        clean.set(slot(p.getKey()), new CleanPage(p.getKey(), p.getValue())); // logged copies are never written
        logged.remove(p.getKey());
      }
      if (!pages.isEmpty()) {
        dataEnd = Math.max(dataEnd, (pages.get(pages.size() - 1).getKey() + 1) * PAGE);
      }
      newGeneration();
    } finally {
      lock.writeLock().unlock();
    }
    // durable before a record of the new generation can overwrite the old ones (syncing held)
    redo.force(false);
  }

  /** Marks the log empty: the next record starts a new generation. Exclusive lock held. */
  private void newGeneration() throws IOException {
    // whatever older records stay behind the new ones are never replayed
    writeFully(redo, ByteBuffer.allocate(8), 0);
    logEnd = 0;
    seq = 0;
    generation = random.nextLong();
    nearlyFull = false; // every caller emptied the logged pages first
  }

  private void checkWritable() {
    RuntimeException f = failed;
    if (f != null) {
      throw new IllegalStateException("an earlier sync of " + file + " failed; reopen the store", f);
    }
  }

  @Override
  public void truncate(long newSize) {
    syncing.lock();
    try {
      sync();
      checkpointUnlocked();
      lock.writeLock().lock();
      try {
        io("truncating", ch -> {
          ch.truncate(newSize);
          ch.force(true);
        });
        size = newSize;
        dataEnd = Math.min(dataEnd, newSize);
        for (int i = 0; i < CLEAN_SLOTS; i++) {
          clean.set(i, null);
        }
      } finally {
        lock.writeLock().unlock();
      }
    } catch (IOException e) {
      throw new UncheckedIOException("truncating " + file, e);
    } finally {
      syncing.unlock();
    }
  }

  // ---- reads: buffered pages first, then the file -----------------------------------------------

  @Override
  public void getData(long offset, byte[] dst, int dstPos, int dstSize) {
    lock.readLock().lock();
    try {
      int done = 0;
      while (done < dstSize) {
        long at = offset + done;
        int inPage = (int) (at % PAGE);
        int n = Math.min(dstSize - done, PAGE - inPage);
        Dirty d = dirty.get(at / PAGE);
        byte[] p = d != null ? d.data : null;
        if (p == null) {
          p = logged.get(at / PAGE);
        }
        if (p == null) {
          p = cleanPage(at / PAGE);
        }
        System.arraycopy(p, inPage, dst, dstPos + done, n);
        done += n;
      }
    } finally {
      lock.readLock().unlock();
    }
  }

  @Override
  public DataInput2 getDataInput(long offset, int size) {
    byte[] b = new byte[size];
    getData(offset, b, 0, size);
    return new DataInput2.ByteArray(b);
  }

  @Override
  public long getLong(long offset) {
    byte[] b = new byte[8];
    getData(offset, b, 0, 8);
    return ByteBuffer.wrap(b).getLong();
  }

  @Override
  public int getInt(long offset) {
    byte[] b = new byte[4];
    getData(offset, b, 0, 4);
    return ByteBuffer.wrap(b).getInt();
  }

  @Override
  public byte getByte(long offset) {
    byte[] b = new byte[1];
    getData(offset, b, 0, 1);
    return b[0];
  }

  private static int slot(long pageNo) {
    return (int) (pageNo % CLEAN_SLOTS);
  }

  /** Page {@code pageNo} as the store file holds it, from the cache or read into it. Lock held (either). */
  private byte[] cleanPage(long pageNo) {
    CleanPage c = clean.get(slot(pageNo));
    if (c != null && c.pageNo() == pageNo) {
      return c.data();
    }
    byte[] p = new byte[PAGE];
    readFromFile(pageNo * PAGE, p, 0, PAGE);
    clean.set(slot(pageNo), new CleanPage(pageNo, p));
    return p;
  }

  /** Reads from the store file; zeros beyond its end. */
  private void readFromFile(long offset, byte[] dst, int pos, int len) {
    ByteBuffer b = ByteBuffer.wrap(dst, pos, len);
    io("reading", ch -> {
      while (b.hasRemaining()) {
        int n = ch.read(b, offset + (b.position() - pos));
        if (n < 0) {
          while (b.hasRemaining()) {
            b.put((byte) 0);
          }
        }
      }
    });
  }

  /** One piece of I/O on the store channel, safe to run again from the start. */
  private interface ChannelIo {
    void run(FileChannel ch) throws IOException;
  }

  /**
   * Runs {@code io} on the store channel. A thread interrupted during channel I/O closes the
   * channel for every thread (a {@link java.nio.channels.InterruptibleChannel}): then the channel
   * is reopened, the interrupted thread gets an error and the others run their I/O again.
   */
  private void io(String what, ChannelIo io) {
    for (int attempt = 0; ; attempt++) {
      FileChannel ch = channel;
      try {
        io.run(ch);
        return;
      } catch (ClosedByInterruptException e) {
        reopen(ch);
        throw new UncheckedIOException(what + " " + file + ": interrupted", e);
      } catch (ClosedChannelException e) { // closed under us by another thread's interrupt
        if (closed.get() || attempt == 3) {
          throw new UncheckedIOException(what + " " + file, e);
        }
        reopen(ch);
      } catch (IOException e) {
        throw new UncheckedIOException(what + " " + file, e);
      }
    }
  }

  private synchronized void reopen(FileChannel broken) {
    if (channel != broken || closed.get()) {
      return;
    }
    try {
      channel = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
    } catch (IOException e) {
      throw new UncheckedIOException("reopening " + file, e);
    }
  }

  // ---- the rest of the volume -------------------------------------------------------------------

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    // no interrupt: an interrupted channel operation would close the channel for everyone
    checkpointer.shutdown();
    try {
      checkpointer.awaitTermination(30, java.util.concurrent.TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    syncing.lock();
    try {
      try {
        if (failed == null) {
          sync();
          checkpointUnlocked();
        }
      } finally {
        try {
          channel.close();
        } finally {
          fileLock.release();
          redo.close();
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("closing " + file, e);
    } finally {
      syncing.unlock();
    }
  }

  @Override
  public long length() {
    lock.readLock().lock();
    try {
      return size;
    } finally {
      lock.readLock().unlock();
    }
  }

  @Override
  public int sliceSize() {
    return -1;
  }

  @Override
  public boolean isSliced() {
    return false;
  }

  @Override
  public boolean isReadOnly() {
    return false;
  }

  @Override
  public File getFile() {
    return file;
  }

  @Override
  public boolean getFileLocked() {
    return true;
  }

  private static void writeFully(FileChannel ch, ByteBuffer b, long offset) throws IOException {
    long at = offset;
    while (b.hasRemaining()) {
      at += ch.write(b, at);
    }
  }

  private static void readFully(FileChannel ch, ByteBuffer b, long offset) throws IOException {
    long at = offset;
    while (b.hasRemaining()) {
      int n = ch.read(b, at);
      if (n < 0) {
        throw new IOException("short read");
      }
      at += n;
    }
  }
}
