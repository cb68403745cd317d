package org.flowfs.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.time.Duration;
import org.flowfs.common.Attr;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.wire.MetaOp.SetattrReq;

/**
 * What this client knows of one regular file while it is open: its layout, its size as this
 * client sees it (the recorded size, grown by this client's writes), the modification time of its
 * last write, and its write-behind and read-ahead. Shared by every open of the file in this
 * client; all methods are synchronized.
 */
final class FileState {
  final Handle handle;
  final Layout layout;
  private final WriteBehind writes;
  private final ReadAhead reads;
  private final ByteBufAllocator alloc;
  private long size;
  private long mtimeNs;
  /** Written since the size and mtime were last recorded on the metadata server. */
  private boolean unrecorded;
  /**
   * Written, since the last recording, by a caller who does not keep set-user-ID and
   * set-group-ID: the recording clears them (the metadata server applies the rule to the mode it
   * holds then), and until it does this client shows them cleared.
   */
  private boolean killSetid;
  /**
   * Made by this client's create, and nothing of it recorded since: no other client has seen
   * more of it than an empty file. Until the first recording, changes of its mode, owner and times
   * wait here ({@link #defer}) and go with the size, in one change with the bytes.
   */
  private boolean created;
  /** Attribute changes waiting for the next recording (null: none); see {@link #defer}. */
  private DeferredAttrs deferred;
  private int opens;
  /** Opens of this client that may write (a shared writable mapping needs one): no read-around then. */
  private int writableOpens;
  /** The block a small read that jumps is widened to (0: never); see {@link #around()}. */
  private final int around;
  /**
   * Guards {@link #epoch} (written under this state's lock as well, so a read may take it under
   * either) and {@link #storing}. The page sink's thread takes only this lock, never the state's:
   * a sequential read holds the state's lock while it waits for a read-ahead window, and when
   * every read from the servers held it, random reads that kept missing held it so much of the
   * time that stores waited on it until their queue overflowed.
   */
  private final Object stores = new Object();
  /** Counts {@link #quiesce()} calls: a store offered before the last one may no longer begin. */
  private long epoch;
  /** Read-around stores begun and not ended. */
  private int storing;
  private static final int PAGE = 4096;
  /**
   * A file of at most this many bytes (a sixteenth of the machine's memory) fits in the kernel's
   * page cache: its read-around block grows with it ({@link #around()}).
   */
  static final long CACHEABLE = physicalMemory() / 16;
  /** A cacheable file is read around in blocks of at least this fraction of it... */
  static final int AROUND_PARTS = 256;
  /** ...and at most this many bytes. */
  static final int AROUND_MAX = 1 << 20;

  private static long physicalMemory() {
    var os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
    return os instanceof com.sun.management.OperatingSystemMXBean sun ? sun.getTotalMemorySize() : 0;
  }
  /** With {@code sender} setting up the sends its writes start (see {@link WriteBehind}). */
  FileState(Attr attr, DataPath path, int writeBehind, int readAhead, int readAround, Duration timeout,
      ByteBufAllocator alloc, java.util.concurrent.Executor sender) {
    this.around = readAround;
    this.handle = attr.handle();
    this.layout = attr.layout();
    this.size = attr.size();
    this.mtimeNs = attr.mtimeNs();
    this.writes = new WriteBehind(path, layout, writeBehind, timeout, alloc, sender);
    this.reads = new ReadAhead(path, layout, readAhead, timeout, alloc);
    this.alloc = alloc;
  }

  synchronized void opened(Attr fresh) {
    opened(fresh, null, true);
  }

  /**
   * An open with the file's attributes as the metadata server gave them now, and {@code first},
   * its first bytes read since the open began (or null): kept as read-ahead when they are the whole
   * file and this is its only open, so that a small file's read needs no round trip of its own.
   */
  synchronized void opened(Attr fresh, ReadAhead.Window first, boolean writable) {
    opens++;
    if (writable) {
      writableOpens++;
    }
    if (!unrecorded) {
      size = Math.max(size, fresh.size());
      mtimeNs = fresh.mtimeNs();
    }
    reads.invalidate(); // close-to-open: what another client wrote and closed must show
    if (first != null) {
      if (opens == 1 && !unrecorded && size <= first.length()) {
        reads.offer(first);
      } else {
        first.drop();
      }
    }
  }

  /** A read-only open with its first bytes (see {@link #opened(Attr, ReadAhead.Window, boolean)}). */
  synchronized void opened(Attr fresh, ReadAhead.Window first) {
    opened(fresh, first, false);
  }

  /**
   * The whole file as the open that brought its first bytes read it (see {@link #opened(Attr,
   * ReadAhead.Window, boolean)}), while that open is the only one and nothing was written since:
   * a view the caller releases; else null.
   */
  synchronized ByteBuf whole() {
    if (opens != 1 || writableOpens != 0 || unrecorded || writes.isDirty()) {
      return null;
    }
    return reads.whole(size);
  }

  /** Returns true when this was the last open (of one that could write). */
  synchronized boolean closed() {
    return closed(true);
  }

  /** Returns true when this was the last open. */
  synchronized boolean closed(boolean writable) {
    if (writable) {
      writableOpens--;
    }
    if (--opens == 0) {
      created = false; // no close is left to record a change deferred from now on: it goes at once
      reads.invalidate();
      writes.discard();
      return true;
    }
    return false;
  }

  /**
   * Writes at the end of the file as this client sees it, or at {@code offset} if that lies
   * beyond: an {@code O_APPEND} write. Returns where the bytes went. Finding the end and writing
   * there are one step, so appends through any number of opens never overwrite each other.
   */
  synchronized long append(long offset, ByteBuf src, long nowNs, boolean killsSetid) {
    long at = Math.max(offset, size);
    write(at, src, nowNs, killsSetid);
    return at;
  }

  synchronized void write(long offset, ByteBuf src, long nowNs, boolean killsSetid) {
    reads.invalidate();
    dropDeferredMtime();
    killSetid |= killsSetid;
    int len = src.readableBytes();
    writes.write(offset, src);
    size = Math.max(size, offset + len);
    mtimeNs = nowNs;
    unrecorded = true;
  }

  /** Reads up to {@code length} bytes at {@code offset}; returns how many (0 at the end). */
  int read(long offset, int length, ByteBuf dst) {
    return read(offset, length, dst, null);
  }

  /**
   * {@link #read(long, int, ByteBuf)}; with a {@code sink}, a read smaller than the read-around
   * block that does not continue the last one and comes while no open of this client may write
   * reads the whole aligned block instead (from a read-ahead window that holds it, else from the
   * servers), and the pages of it the caller did not ask for go to the sink: the kernel's page
   * cache then answers the next reads there (random reads of a file that fits in memory stop
   * leaving the machine; a random reader whose reads once looked sequential, and so started a
   * window, keeps that).
   *
   * <p>A read that goes straight to the servers waits for them without this state's lock, so the
   * file's other readers (threads of one application reading a shared file at random) go on
   * meanwhile; what it must see (this client's buffered writes, the size) and what it changes
   * (where the last read ended, the epoch its stores carry) are settled under the lock first.
   */
  int read(long offset, int length, ByteBuf dst, PageSink sink) {
    int n;
    Fetch f;
    synchronized (this) {
      n = readable(offset, length);
      if (n == 0) {
        return 0;
      }
      f = plan(offset, n, dst, sink);
    }
    if (f != null) {
      fetch(f, offset, n, dst, sink);
    }
    return n;
  }

  /**
   * A read that goes to the servers, as settled under the lock: the block {@code [start, end)}
   * around it, whose pages go to the sink as of epoch {@code offered}, or none ({@link #PLAIN}).
   */
  private record Fetch(long start, long end, long offered) {}

  private static final Fetch PLAIN = new Fetch(-1, -1, 0);

  /**
   * Under the lock: reads the {@code n > 0} bytes at {@code offset} into {@code dst} if the
   * read-ahead windows hold them and returns null; else notes the read and returns what {@link
   * #fetch} must read from the servers.
   */
  private Fetch plan(long offset, int n, ByteBuf dst, PageSink sink) {
    if (!readsAround(offset, n, sink)) {
      if (reads.streams(offset)) {
        reads.read(offset, n, size, dst);
        return null;
      }
      reads.jumped(offset + n);
      return PLAIN;
    }
    int around = around();
    long start = offset - offset % around;
    long end = Math.min(size, (offset + n + around - 1) / around * around);
    ByteBuf v = reads.fromWindow(start, (int) (end - start), size, offset + n);
    if (v != null) {
      deliver(v, start, end, offset, n, dst, sink, epoch);
      return null;
    }
    return new Fetch(start, end, epoch); // a quiesce from now on cancels what this read offers
  }

  /** Without the lock: reads what {@link #plan} left to the servers into {@code dst}. */
  private void fetch(Fetch f, long offset, int n, ByteBuf dst, PageSink sink) {
    if (f == PLAIN) {
      reads.readNow(offset, n, dst);
      return;
    }
    ByteBuf block = alloc.directBuffer((int) (f.end - f.start));
    try {
      reads.readNow(f.start, (int) (f.end - f.start), block);
    } catch (RuntimeException e) {
      block.release(); // nothing writes into it any more
      throw e;
    }
    deliver(block, f.start, f.end, offset, n, dst, sink, f.offered);
  }

  /**
   * Copies the {@code n} bytes at {@code offset} from {@code block}, the file's bytes {@code
   * [start, end)}, into {@code dst}, offers the pages around them to {@code sink} as of {@code
   * offered}, and releases the block.
   */
  private void deliver(ByteBuf block, long start, long end, long offset, int n, ByteBuf dst, PageSink sink,
      long offered) {
    try {
      dst.writeBytes(block, (int) (offset - start), n);
      // never the pages asked for: the kernel holds them locked until this read is answered
      offer(sink, block, start, start, offset & -PAGE, offered);
      offer(sink, block, start, Math.min(end, (offset + n + PAGE - 1) & -PAGE), end, offered);
    } finally {
      block.release();
    }
  }

  /** Whether a read of {@code n} bytes at {@code offset} reads the block around it ({@link #read(long, int, ByteBuf, PageSink)}). */
  private boolean readsAround(long offset, int n, PageSink sink) {
    return sink != null && n < around() && writableOpens == 0 && !reads.continues(offset);
  }

  /**
   * How many of {@code length} bytes at {@code offset} a read gets (0 at or past the end), once
   * this client's buffered writes are out: a read sees them, whoever else reads the file.
   */
  private int readable(long offset, int length) {
    if (writes.isDirty()) {
      writes.flush();
    }
    return offset >= size ? 0 : (int) Math.min(length, size - offset);
  }

  /**
   * {@link #read(long, int, ByteBuf, PageSink)}, its bytes returned rather than copied: a
   * sequential read gets views of the read-ahead windows that hold them, any other read a buffer
   * of its own. The caller releases what it gets (it stays valid whatever happens to the file).
   */
  ByteBuf readViews(long offset, int length, PageSink sink) {
    int n;
    Fetch f;
    ByteBuf out;
    synchronized (this) {
      n = readable(offset, length);
      if (n == 0) {
        return io.netty.buffer.Unpooled.EMPTY_BUFFER;
      }
      if (reads.streams(offset) && !readsAround(offset, n, sink)) {
        return reads.views(offset, n, size);
      }
      out = alloc.directBuffer(n);
      try {
        f = plan(offset, n, out, sink);
      } catch (RuntimeException e) {
        out.release();
        throw e;
      }
    }
    try {
      if (f != null) {
        fetch(f, offset, n, out, sink);
      }
      return out;
    } catch (RuntimeException e) {
      out.release();
      throw e;
    }
  }

  private void offer(PageSink sink, ByteBuf block, long blockStart, long from, long to, long offered) {
    if (to <= from) {
      return;
    }
    sink.store(new Store(from, block.retainedSlice((int) (from - blockStart), (int) (to - from)), offered));
  }

  /**
   * Makes sure no read-around store lands after this returns: cancels those not begun and waits
   * for those storing. Called before an open, a close or a truncate is answered, since the
   * kernel drops or cuts its cached pages after those, and an open that may write can then
   * dirty pages a store would overwrite. Never called with the kernel holding a page of this
   * file locked for the caller (a read or a write), and waits without holding this state's lock.
   */
  void quiesce() {
    synchronized (this) { // a read that got its block before this call offers it with the epoch it ends
      synchronized (stores) {
        epoch++;
      }
    }
    // bounded: a store waits for a page that a READ holds locked, and that READ for a FUSE thread;
    // were every FUSE thread an open of this file waiting here, none would come. Past the bound
    // the store may land after the open: bytes read before it, what the kernel's own read racing
    // an open may cache as well
    long until = System.nanoTime() + QUIESCE_NS;
    synchronized (stores) {
      for (long left = QUIESCE_NS; storing > 0 && left > 0; left = until - System.nanoTime()) {
        try {
          stores.wait(Math.max(1, left / 1_000_000));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  private static final long QUIESCE_NS = 2_000_000_000L;

  /**
   * The read-around block now: the configured one, or, for a file that fits in {@link #CACHEABLE},
   * the power of two at or above {@link #AROUND_PARTS} of its size, at most {@link #AROUND_MAX}: the
   * kernel then caches such a file whole after at most that many misses, and every byte crosses the
   * network once whatever the block. A file too large to cache keeps the configured block, so that
   * a random reader of it moves little more than it reads.
   */
  private int around() {
    if (around == 0 || size > CACHEABLE) {
      return around;
    }
    long part = size / AROUND_PARTS;
    if (part <= around) {
      return around;
    }
    return (int) Math.max(around, Math.min(AROUND_MAX, Long.highestOneBit(part - 1) << 1));
  }

  /** Pages read around a jump on their way to the {@link PageSink}. */
  final class Store implements PageSink.Pages {
    private final long offset;
    private final ByteBuf data;
    private final long offered;

    private Store(long offset, ByteBuf data, long offered) {
      this.offset = offset;
      this.data = data;
      this.offered = offered;
    }

    @Override
    public long offset() {
      return offset;
    }

    @Override
    public ByteBuf data() {
      return data;
    }

    @Override
    public boolean begin() {
      synchronized (stores) {
        if (offered != epoch) {
          return false;
        }
        storing++;
        return true;
      }
    }

    @Override
    public void end() {
      synchronized (stores) {
        storing--;
        stores.notifyAll();
      }
    }
  }

  /** The size and mtime to record now, and the attribute changes deferred, or null if all are recorded. */
  synchronized Recording pendingRecording() {
    return unrecorded || deferred != null ? new Recording(size, mtimeNs, killSetid, deferred) : null;
  }

  /** The file was made by this client's create, with this open (see {@link #created}). */
  synchronized void created() {
    created = opens == 1 && !unrecorded;
  }

  /**
   * Defers a change of mode, owner or times (a {@code SetattrReq} mask of MODE, UID, GID, ATIME,
   * MTIME and KILL_SUID; times in ns) to the next recording, if the file was made by this client,
   * is open here, and nothing of it is recorded yet; false if the change must go now. Never a
   * change that involves set-ID bits (their clearing by a chown or write depends on the order of
   * changes, which only the metadata server applies), nor a time the server's clock sets.
   */
  synchronized boolean defer(Attr shown, int mask, int mode, int uid, int gid, long atimeNs, long mtimeNs) {
    if (!created || (shown.mode() & (Attr.S_ISUID | Attr.S_ISGID)) != 0 || !DeferredAttrs.deferrable(mask, mode)) {
      return false;
    }
    deferred = (deferred == null ? DeferredAttrs.NONE : deferred).and(mask, mode, uid, gid, atimeNs, mtimeNs);
    return true;
  }

  /** Whether attribute changes wait for the next recording. */
  synchronized boolean hasDeferred() {
    return deferred != null;
  }

  /** A write after a deferred mtime moves the mtime again: the write's own is recorded. */
  private void dropDeferredMtime() {
    if (deferred != null && (deferred.mask() & SetattrReq.MTIME) != 0) {
      deferred = deferred.without(SetattrReq.MTIME);
    }
  }

  /**
   * The buffered writes within the file's head, taken to be sent by the caller, when they are one
   * region that starts in the head and nothing is out; what of that region lies past the head is
   * being sent to the data servers ({@link WriteBehind#takeBelow}; {@link #flushWrites} waits for
   * it). Else null.
   */
  synchronized WriteBehind.Taken takeHeadWrites() {
    return layout.headBytes() > 0 ? writes.takeBelow(layout.headBytes()) : null;
  }

  /** Starts sending the buffered writes; {@link #flushWrites} waits for them. */
  synchronized void sendWrites() {
    writes.send();
  }

  /** Sends buffered writes; returns the attributes to record, or null if nothing changed. */
  synchronized Recording flushWrites() {
    writes.flush();
    return pendingRecording();
  }

  synchronized void recorded(Recording r) {
    created = false; // other clients may see it now
    if (r.equals(new Recording(size, mtimeNs, killSetid, deferred))) {
      unrecorded = false;
      killSetid = false;
      deferred = null;
    } else if (r.deferred() != null && r.deferred().equals(deferred)) {
      deferred = null;
    }
  }

  /** The file grew to at least {@code newSize} by a write that bypassed write-behind. */
  synchronized void grew(long newSize, long nowNs) {
    reads.invalidate();
    dropDeferredMtime();
    if (newSize > size) {
      size = newSize;
    }
    mtimeNs = nowNs;
    unrecorded = true;
  }

  /**
   * A record lock on the file was granted: another client may have changed it under its own lock
   * since; it is at least as long as the metadata server's {@code fresh} attributes say (never
   * shorter, as at an open: two processes here may take locks at once, and the answer to the
   * first may arrive last), and nothing read ahead is kept. Returns the new size if the file grew,
   * else -1.
   */
  synchronized long revalidated(Attr fresh) {
    long before = size;
    size = Math.max(size, fresh.size());
    if (!unrecorded) {
      mtimeNs = Math.max(mtimeNs, fresh.mtimeNs());
    }
    reads.invalidate();
    return size > before ? size : -1;
  }

  /** Forgets what was read ahead or around: the file's bytes changed under it. */
  synchronized void dropReads() {
    reads.invalidate();
  }

  /** The file was truncated to {@code newSize} (buffered writes were flushed before). */
  synchronized void truncated(long newSize, long nowNs) {
    reads.invalidate();
    size = newSize;
    mtimeNs = nowNs;
  }

  synchronized Attr overlay(Attr a) {
    if (!unrecorded && deferred == null && a.size() == size) {
      return a;
    }
    Attr o = a.withSizeAndTimes(size, Math.max(a.mtimeNs(), mtimeNs), Math.max(a.ctimeNs(), mtimeNs));
    o = killSetid ? o.withMode(Attr.withoutSetid(o.mode())) : o;
    return deferred == null ? o : deferred.appliedTo(o);
  }

  synchronized long size() {
    return size;
  }

  /**
   * A size and mtime to record on the metadata server, whether to clear set-ID bits, and the
   * deferred attribute changes that go with them (null: none).
   */
  record Recording(long size, long mtimeNs, boolean killSetid, DeferredAttrs deferred) {}
}
