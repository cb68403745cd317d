package org.flowfs.io;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.DefaultFileRegion;
import io.netty.util.ReferenceCounted;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.NamedThreads;
import org.flowfs.common.StorageSpace;
import org.flowfs.common.config.IoConfig;
import org.flowfs.common.flow.Pieces;
import org.flowfs.common.wire.ShmSlots;

/**
 * Datafiles as local files: {@code <dir>/data/<bb>/<handle in hex>}, {@code bb} the low byte of
 * the handle, so no directory grows past 1/256 of the datafiles. Paths are built from the handle's
 * number only: no request can name a path outside the storage directory. Open channels are kept
 * in a bounded cache and reference counted, so eviction never closes a channel in use.
 *
 * <p>Removed datafiles are recycled through a {@link DatafilePool}, so that creating one is a
 * rename rather than a new inode. What happens to one handle's file (opening or creating it,
 * removing it) is serialized by a lock per bucket, and a datafile is recycled only when no
 * channel to it is in use: a late read or write of a removed handle can never reach the file once
 * it serves another handle.
 *
 * <p><b>Early writeback.</b> Once {@code writeback} bytes were written to a datafile since its
 * last sync, one background thread ({@code io-writeback}) syncs it ({@code fdatasync}) while the
 * writes go on: a stream's data reaches the disk as it arrives, and the writer's fsync at the end
 * waits for the last piece only, not for the whole file. (The kernel alone starts writing dirty
 * pages back only past a tenth of memory: a 1 GiB file written and fsynced waited for all of it
 * at the fsync, with the CPUs idle.) A sync failure there is not lost: the file's pages stay
 * dirty or in error, and the writer's own fsync reports it.
 *
 * <p><b>Direct writes.</b> With a {@link DirectWrite}, large pieces go to the datafile past the
 * page cache through a second channel opened with {@code O_DIRECT} (opened with the first such
 * piece). Early writeback counts only the bytes written through the page cache. A file system that
 * refuses direct I/O (the open or the write fails where the same bytes written through the page
 * cache succeed) turns direct writes off for this store, with one warning.
 */
final class FileBStreamStore implements BStreamStore {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(FileBStreamStore.class);
  private final Path data;
  private final int server;
  private final Cache<Handle, Chan> open;
  private final AtomicLong count = new AtomicLong();
  private final DatafilePool pool;
  private final long writeback;
  /** Runs the background syncs of early writeback, one at a time; null without it. */
  private final ExecutorService syncer;
  /**
   * In the server's counters: {@code store.writebacks}, {@code store.direct-bytes} and, of those,
   * {@code store.direct-staged-bytes}: copied into a staging buffer first (not placed aligned).
   */
  private final LongAdder writebacks;
  private final LongAdder directBytes;
  private final LongAdder directStaged;
  private final LongAdder directReadBytes;
  /** Large writes past the page cache; null when off (or refused by the file system). */
  private volatile DirectWrite direct;
  /** Reads past the page cache, of at least its threshold (null: none). */
  private volatile DirectWrite directReads;
  /** Whether those go only into shared memory in huge pages ({@code io.direct-read = auto}). */
  private boolean directReadsHugeOnly;
  /** Emptied datafiles kept for reuse, per server. */
  static final int POOL_MAX = 8192;
  /** Empty datafiles kept made ahead for creates, per server (see {@link DatafilePool}). */
  static final int POOL_READY = 256;

  /** A cached channel; the cache holds one reference, each user one more. */
  private static final class Chan {
    final FileChannel channel;
    final Path path;
    /** The datafile opened for direct writes, once a piece needed it. */
    private FileChannel direct;
    final AtomicInteger refs = new AtomicInteger(1);
    /** Bytes written since the last background sync began. */
    final AtomicLong unsynced = new AtomicLong();
    /** A background sync of this file is queued or running. */
    final AtomicBoolean syncing = new AtomicBoolean();

    Chan(FileChannel channel, Path path) {
      this.channel = channel;
      this.path = path;
    }

    /** The channel for direct writes, opened with the first call. */
    synchronized FileChannel direct() throws IOException {
      if (direct == null) {
        direct = DirectWrite.open(path);
      }
      return direct;
    }

    private static void closeQuietly(FileChannel ch) {
      try {
        ch.close();
      } catch (IOException e) {
        // closing a datafile cannot lose data that a sync did not promise
      }
    }

    /** True once the last reference is gone and the channel closed: nobody can use it again. */
    boolean closed() {
      return refs.get() <= 0;
    }

    boolean retain() {
      for (;;) {
        int r = refs.get();
        if (r <= 0) {
          return false;
        }
        if (refs.compareAndSet(r, r + 1)) {
          return true;
        }
      }
    }

    void release() {
      if (refs.decrementAndGet() == 0) {
        closeQuietly(channel);
        synchronized (this) {
          if (direct != null) {
            closeQuietly(direct);
          }
        }
      }
    }
  }

  /** {@code data/00} .. {@code data/ff}: a datafile lives in the one its handle's low byte names. */
  private final Path[] buckets = new Path[256];
  /** Serializes opening, creating and removing the datafiles of a bucket. */
  private final Object[] locks = new Object[256];

  /** A store with early writeback every {@code writeback} bytes of a datafile (0: none). */
  FileBStreamStore(Path dir, int server, int maxOpen, long writeback) throws IOException {
    this(dir, server, maxOpen, POOL_MAX, POOL_READY, writeback, new Counters());
  }

  /**
   * A store with early writeback every {@code writeback} bytes of a datafile (0: none) and pieces
   * of at least {@code directWrite} bytes written past the page cache (0: none, see {@link
   * DirectWrite}), counting into {@code counters}.
   */
  FileBStreamStore(Path dir, int server, int maxOpen, long writeback, long directWrite, Counters counters)
      throws IOException {
    this(dir, server, maxOpen, writeback, directWrite, 0, counters);
  }

  /**
   * As above, and reads of at least {@code directRead} bytes into memory that allows it read past
   * the page cache ({@link #readDirect}; 0: none; {@link IoConfig#DIRECT_READ_AUTO}: those of at
   * least {@link IoConfig#DIRECT_READ_AUTO_MIN} bytes into shared memory in huge pages only).
   */
  FileBStreamStore(Path dir, int server, int maxOpen, long writeback, long directWrite, long directRead,
      Counters counters) throws IOException {
    this(dir, server, maxOpen, POOL_MAX, POOL_READY, writeback, counters);
    this.direct = DirectWrite.of(directWrite, data);
    this.directReadsHugeOnly = directRead == IoConfig.DIRECT_READ_AUTO;
    this.directReads = DirectWrite.of(directReadsHugeOnly ? IoConfig.DIRECT_READ_AUTO_MIN : directRead, data);
  }

  FileBStreamStore(Path dir, int server, int maxOpen) throws IOException {
    this(dir, server, maxOpen, 0);
  }

  /**
   * A store keeping up to {@code poolMax} emptied datafiles for reuse, {@code poolReady} of them
   * made ahead when removes do not supply them (0: none made ahead); without early writeback.
   */
  static FileBStreamStore pooled(Path dir, int server, int maxOpen, int poolMax, int poolReady) throws IOException {
    return new FileBStreamStore(dir, server, maxOpen, poolMax, poolReady, 0, new Counters());
  }

  private FileBStreamStore(Path dir, int server, int maxOpen, int poolMax, int poolReady, long writeback,
      Counters counters) throws IOException {
    this.writebacks = counters.counter("store.writebacks");
    this.directBytes = counters.counter("store.direct-bytes");
    this.directStaged = counters.counter("store.direct-staged-bytes");
    this.directReadBytes = counters.counter("store.direct-read-bytes");
    this.data = dir.resolve("data");
    this.server = server;
    this.writeback = writeback;
    this.syncer = writeback > 0 ? NamedThreads.single("io-writeback") : null;
    Files.createDirectories(data);
    for (int b = 0; b < 256; b++) {
      buckets[b] = Files.createDirectories(data.resolve(String.format("%02x", b)));
      locks[b] = new Object();
    }
    this.pool = new DatafilePool(data.resolve("free"), poolMax, poolReady, counters.counter("store.freeing-bytes"));
    this.open = Caffeine.newBuilder()
        .maximumSize(maxOpen)
        .executor(Runnable::run)
        .removalListener((Handle h, Chan c, RemovalCause cause) -> {
          if (c != null) {
            c.release();
          }
        })
        .build();
    long n = 0;
    for (int b = 0; b < 256; b++) {
      try (DirectoryStream<Path> ds = Files.newDirectoryStream(buckets[b])) {
        for (Path ignored : ds) {
          n++;
        }
      }
    }
    count.set(n);
  }

  private int bucket(Handle h) {
    if (h.server() != server) {
      throw new FsException(Errno.EINVAL, "handle " + h + " does not belong to this server");
    }
    return (int) (h.local() & 0xFF);
  }

  /** A retained channel, or null when the datafile does not exist and {@code create} is false. */
  private Chan acquire(Handle h, boolean create) throws IOException {
    for (;;) {
      Chan c = open.getIfPresent(h);
      if (c == null) {
        c = openOrCreate(h, create);
        if (c == null) {
          return null;
        }
      }
      if (c.retain()) {
        return c;
      }
    }
  }

  /** The cached channel of {@code h}, opening (or creating) the datafile if there is none. */
  private Chan openOrCreate(Handle h, boolean create) throws IOException {
    int b = bucket(h);
    synchronized (locks[b]) {
      Chan c = open.getIfPresent(h);
      if (c != null) {
        return c;
      }
      Path p = buckets[b].resolve(h.hex());
      FileChannel ch = null;
      while (ch == null) {
        ch = create ? createNew(p) : null;
        if (ch == null) {
          try {
            ch = FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE);
          } catch (NoSuchFileException e) {
            if (!create) {
              return null;
            }
            // deleted behind the store's back since createNew saw it: create it
          }
        }
      }
      c = new Chan(ch, p);
      open.put(h, c);
      return c;
    }
  }

  /**
   * Creates the datafile at {@code p} and opens it, or returns null if it exists. A write that
   * finds no open channel is most often the first write of a new file (a datafile exists only once
   * written), so creating is tried first, from the pool when it has a file: for a new file, one
   * rename (or one create) and no exception.
   */
  private FileChannel createNew(Path p) throws IOException {
    Path pooled = pool.take();
    if (pooled != null) {
      try {
        Files.move(pooled, p);
        FileChannel ch = FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE);
        count.incrementAndGet();
        return ch;
      } catch (java.nio.file.FileAlreadyExistsException exists) {
        pool.giveBack(pooled);
        return null;
      } catch (NoSuchFileException gone) {
        // taken out of the pool directory by hand: create instead
      }
    }
    try {
      FileChannel ch = FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE, StandardOpenOption.CREATE_NEW);
      count.incrementAndGet();
      return ch;
    } catch (java.nio.file.FileAlreadyExistsException exists) {
      return null;
    }
  }

  private static FsException failure(String what, Handle h, IOException e) {
    return new FsException(Errno.from(e), what + " of datafile " + h + " failed: " + e.getMessage(), e);
  }

  @Override
  public int read(Handle h, long offset, int length, ByteBuf dst) {
    pool.busy();
    try {
      Chan c = acquire(h, false);
      if (c == null) {
        return 0;
      }
      try {
        dst.ensureWritable(length);
        int done = 0;
        while (done < length) {
          int n = dst.writeBytes(c.channel, offset + done, length - done);
          if (n <= 0) {
            break;
          }
          done += n;
        }
        return done;
      } finally {
        c.release();
      }
    } catch (IOException e) {
      throw failure("read", h, e);
    }
  }

  @Override
  public boolean readDirect(Handle h, long lo, int n, ByteBuf dst) {
    DirectWrite d = directReads;
    int at = dst.writerIndex();
    if (d == null || !dst.hasMemoryAddress() || directReadsHugeOnly && !ShmSlots.inHugePages(dst)
        || !d.reads(lo, n, dst.memoryAddress() + at, dst.capacity() - at)) {
      return false;
    }
    pool.busy();
    try {
      Chan c = acquire(h, false);
      if (c == null) {
        return false; // no datafile: zeros, as a read gives them
      }
      try {
        int got = d.read(c.direct(), dst.nioBuffer(at, (int) d.roundUp(n)), lo, n);
        dst.setZero(at + got, n - got); // past the datafile's end: zeros
        dst.writerIndex(at + n);
        directReadBytes.add(got);
        return true;
      } finally {
        c.release();
      }
    } catch (IOException e) {
      if (d == directReads) {
        directReads = null;
        LOG.warn("{}: direct reads refused ({}); reading through the page cache from now on (io.direct-read)", data, e.toString());
      }
      return false; // the caller reads through the page cache
    }
  }

  @Override
  public List<ReferenceCounted> regions(Handle h, Pieces pieces) {
    List<ReferenceCounted> parts = new ArrayList<>(pieces.count());
    pool.busy();
    try {
      Chan c = acquire(h, false);
      try {
        long size = c == null ? 0 : c.channel.size();
        long runStart = -1;
        long runEnd = -1;
        int zeros = 0;
        for (int i = 0; i < pieces.count(); i++) {
          long off = pieces.offset(i);
          int len = pieces.length(i);
          int have = (int) Math.max(0, Math.min(len, size - off));
          if (have > 0) {
            zeros = addZeros(parts, zeros);
            if (off == runEnd) {
              runEnd += have; // continues the region before: one sendfile for both
            } else {
              addRegion(parts, c, runStart, runEnd);
              runStart = off;
              runEnd = off + have;
            }
          }
          if (have < len) {
            addRegion(parts, c, runStart, runEnd);
            runStart = runEnd = -1;
            zeros += len - have; // past the datafile's end: zeros, as a read gives
          }
        }
        addRegion(parts, c, runStart, runEnd);
        addZeros(parts, zeros);
        return parts;
      } finally {
        if (c != null) {
          c.release();
        }
      }
    } catch (IOException e) {
      parts.forEach(ReferenceCounted::release);
      throw failure("read", h, e);
    } catch (RuntimeException e) {
      parts.forEach(ReferenceCounted::release);
      throw e;
    }
  }

  private static int addZeros(List<ReferenceCounted> parts, int n) {
    if (n > 0) {
      parts.add(PooledByteBufAllocator.DEFAULT.directBuffer(n).writeZero(n));
    }
    return 0;
  }

  private static void addRegion(List<ReferenceCounted> parts, Chan c, long start, long end) {
    if (end > start && c.retain()) {
      parts.add(new ChanRegion(c, start, end - start));
    } else if (end > start) {
      throw new FsException(Errno.EIO, "datafile closed while a read was set up");
    }
  }

  /**
   * A region of a datafile for {@code sendfile}; holds a reference to the cached channel until it
   * was sent (Netty's region would close the channel, which other reads share).
   */
  private static final class ChanRegion extends DefaultFileRegion {
    private final Chan chan;

    ChanRegion(Chan chan, long position, long count) {
      super(chan.channel, position, count);
      this.chan = chan;
    }

    @Override
    protected void deallocate() {
      chan.release();
    }
  }

  @Override
  public long write(Handle h, long offset, ByteBuf src) {
    pool.busy();
    try {
      Chan c = acquire(h, true);
      try {
        int len = src.readableBytes();
        long buffered = writeAt(c, src, src.readerIndex(), len, offset);
        src.skipBytes(len);
        writtenBack(c, buffered);
        return c.channel.size();
      } finally {
        c.release();
      }
    } catch (IOException e) {
      throw failure("write", h, e);
    }
  }

  @Override
  public void write(Handle h, org.flowfs.common.flow.Pieces pieces, ByteBuf src) {
    pool.busy();
    try {
      Chan c = acquire(h, true);
      try {
        int at = src.readerIndex();
        long buffered = 0;
        for (int i = 0; i < pieces.count(); i++) {
          buffered += writeAt(c, src, at, pieces.length(i), pieces.offset(i));
          at += pieces.length(i);
        }
        writtenBack(c, buffered);
      } finally {
        c.release();
      }
    } catch (IOException e) {
      throw failure("write", h, e);
    }
  }

  /**
   * Writes {@code len} bytes of {@code src} from index {@code from} at {@code offset} of the
   * datafile, the aligned middle of a large piece directly; returns the bytes written through the
   * page cache.
   */
  private long writeAt(Chan c, ByteBuf src, int from, int len, long offset) throws IOException {
    DirectWrite d = direct;
    if (d == null || !d.covers(offset, len)) {
      buffered(c, src, from, len, offset);
      return len;
    }
    long start = d.start(offset);
    long end = d.end(offset + len);
    int head = (int) (start - offset);
    buffered(c, src, from, head, offset);
    try {
      directStaged.add(d.write(c.direct(), src, from + head, start, end));
      directBytes.add(end - start);
    } catch (IOException e) {
      buffered(c, src, from + head, (int) (end - start), start); // throws if the bytes cannot be written at all
      refuse(d, e);
      head += (int) (end - start);
    }
    int tail = (int) (offset + len - end);
    buffered(c, src, from + (int) (end - offset), tail, end);
    return head + tail;
  }

  /** Direct writes failed where buffered ones succeed: the file system does not take them; off. */
  private void refuse(DirectWrite d, IOException e) {
    if (d == direct) {
      direct = null;
      LOG.warn("{}: direct writes refused ({}); writing through the page cache from now on (io.direct-write)", data, e.toString());
    }
  }

  private static void buffered(Chan c, ByteBuf src, int from, int len, long offset) throws IOException {
    for (int done = 0; done < len; ) {
      done += src.getBytes(from + done, c.channel, offset + done, len - done);
    }
  }

  /** Bytes written past the page cache so far. */
  long directBytes() {
    return directBytes.sum();
  }

  /** Of {@link #directBytes()}, those copied into a staging buffer first. */
  long directStaged() {
    return directStaged.sum();
  }

  /** Background syncs of early writeback done so far. */
  long writebacks() {
    return writebacks.sum();
  }

  /** Counts {@code len} bytes written through {@code c} (retained); past the threshold, queues a sync. */
  private void writtenBack(Chan c, long len) {
    if (syncer == null || c.unsynced.addAndGet(len) < writeback || !c.syncing.compareAndSet(false, true)) {
      return;
    }
    c.retain(); // the caller holds a reference: this one is the sync's until it is done
    try {
      syncer.execute(() -> {
        try {
          c.unsynced.set(0);
          c.channel.force(false);
          writebacks.increment();
        } catch (IOException e) {
          // the writer's own fsync reports it: the pages stay dirty or in error
        } finally {
          c.syncing.set(false);
          c.release();
        }
      });
    } catch (RejectedExecutionException e) {
      c.syncing.set(false); // closing
      c.release();
    }
  }

  @Override
  public void truncate(Handle h, long size) {
    try {
      Chan c = acquire(h, true);
      try {
        long cur = c.channel.size();
        if (size < cur) {
          c.channel.truncate(size); // frees blocks reserved past the old end too
        } else {
          // the channel cannot extend a file, nor truncate one to its own size; and a file system
          // frees blocks a fallocate reserved past the end only on a truncate to the size or below
          try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(c.path.toFile(), "rw")) {
            if (size > cur) {
              f.setLength(size); // a hole up to the new end
            }
            f.setLength(size);
          }
        }
      } finally {
        c.release();
      }
    } catch (IOException e) {
      throw failure("truncate", h, e);
    }
  }

  @Override
  public void allocate(Handle h, long offset, long length, boolean punch) {
    pool.busy();
    try {
      Chan c = acquire(h, !punch);
      if (c == null) {
        return; // nothing stored to free
      }
      try {
        if (!punch) {
          // a local file system that runs out midway keeps what it reserved: refuse up front what
          // cannot fit, so one request cannot take the disk's last block. The bytes below the
          // datafile's end count as held already (a sparse datafile may need more: the file
          // system says so then).
          long held = Math.max(0, Math.min(c.channel.size(), offset + length) - offset);
          long available = space().available();
          if (length - held > available) {
            throw new FsException(Errno.ENOSPC, "reserving " + (length - held) + " bytes of datafile " + h + ": "
                + available + " available");
          }
        }
        Fallocate.range(c.path, Fallocate.KEEP_SIZE | (punch ? Fallocate.PUNCH_HOLE : 0), offset, length);
      } finally {
        c.release();
      }
    } catch (IOException e) {
      throw failure(punch ? "punch" : "allocate", h, e);
    }
  }

  @Override
  public long size(Handle h) {
    try {
      Chan c = acquire(h, false);
      if (c == null) {
        return 0;
      }
      try {
        return c.channel.size();
      } finally {
        c.release();
      }
    } catch (IOException e) {
      throw failure("size", h, e);
    }
  }

  @Override
  public void remove(Handle h) {
    int b = bucket(h);
    Path p = buckets[b].resolve(h.hex());
    try {
      synchronized (locks[b]) {
        Chan c = open.getIfPresent(h);
        open.invalidate(h); // the removal listener drops the cache's reference
        if (c == null && !p.toFile().exists()) {
          // never written, as most datafiles of a small file: a stat, where a move would build
          // the exception that says so (creates take this lock too, so it stays missing)
          return;
        }
        if (c == null || c.closed()) { // nobody uses it: recycle it
          switch (pool.recycle(p)) {
            case RECYCLED -> {
              count.decrementAndGet();
              return;
            }
            case MISSING -> {
              return;
            }
            case FULL -> { } // unlinked below
          }
        }
        if (Files.deleteIfExists(p)) {
          count.decrementAndGet();
        }
      }
    } catch (IOException e) {
      throw failure("remove", h, e);
    }
  }

  @Override
  public void sync(Handle h, boolean dataOnly) {
    try {
      Chan c = acquire(h, false);
      if (c == null) {
        return;
      }
      try {
        c.channel.force(!dataOnly);
      } finally {
        c.release();
      }
    } catch (IOException e) {
      throw failure("sync", h, e);
    }
  }

  @Override
  public List<Handle> list(long cursor, int max) {
    List<Long> ids = new ArrayList<>();
    try {
      for (int b = 0; b < 256; b++) {
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(buckets[b])) {
          for (Path p : ds) {
            String n = p.getFileName().toString();
            if (n.length() == 16) {
              try {
                long id = Long.parseUnsignedLong(n, 16);
                if (Long.compareUnsigned(id, cursor) > 0) {
                  ids.add(id);
                }
              } catch (NumberFormatException e) {
                // not a datafile: ignore
              }
            }
          }
        }
      }
    } catch (IOException e) {
      throw new FsException(Errno.EIO, "cannot list datafiles: " + e.getMessage(), e);
    }
    ids.sort(Long::compareUnsigned);
    return ids.stream().limit(max).map(Handle::new).toList();
  }

  @Override
  public StorageSpace space() {
    return StorageSpace.of(data);
  }

  @Override
  public long count() {
    return count.get();
  }

  @Override
  public void close() {
    pool.close();
    if (syncer != null) {
      NamedThreads.shutdown(syncer, 30_000);
    }
    open.invalidateAll();
    open.cleanUp();
  }
}
