package org.flowfs.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.time.Duration;
import org.flowfs.common.Attr;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;

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
  private int opens;

  FileState(Attr attr, DataPath path, int writeBehind, int readAhead, Duration timeout, ByteBufAllocator alloc) {
    this.handle = attr.handle();
    this.layout = attr.layout();
    this.size = attr.size();
    this.mtimeNs = attr.mtimeNs();
    this.writes = new WriteBehind(path, layout, writeBehind, timeout, alloc);
    this.reads = new ReadAhead(path, layout, readAhead, timeout, alloc);
  }

  synchronized void opened(Attr fresh) {
    opened(fresh, null);
  }

  /**
   * An open with the file's attributes as the metadata server gave them now, and {@code first},
   * its first bytes read since the open began (or null): kept as read-ahead when they are the whole
   * file and this is its only open, so that a small file's read needs no round trip of its own.
   */
  synchronized void opened(Attr fresh, ReadAhead.Window first) {
    opens++;
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

  /** Returns true when this was the last open. */
  synchronized boolean closed() {
    if (--opens == 0) {
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
    killSetid |= killsSetid;
    int len = src.readableBytes();
    writes.write(offset, src);
    size = Math.max(size, offset + len);
    mtimeNs = nowNs;
    unrecorded = true;
  }

  /** Reads up to {@code length} bytes at {@code offset}; returns how many (0 at the end). */
  synchronized int read(long offset, int length, ByteBuf dst) {
    if (writes.isDirty()) {
      writes.flush();
    }
    if (offset >= size) {
      return 0;
    }
    int n = (int) Math.min(length, size - offset);
    reads.read(offset, n, size, dst);
    return n;
  }

  /** The size and mtime to record now, or null if they are recorded. */
  synchronized Recording pendingRecording() {
    return unrecorded ? new Recording(size, mtimeNs, killSetid) : null;
  }

  /** Sends buffered writes; returns the attributes to record, or null if nothing changed. */
  synchronized Recording flushWrites() {
    writes.flush();
    return pendingRecording();
  }

  synchronized void recorded(Recording r) {
    if (r.equals(new Recording(size, mtimeNs, killSetid))) {
      unrecorded = false;
      killSetid = false;
    }
  }

  /** The file grew to at least {@code newSize} by a write that bypassed write-behind. */
  synchronized void grew(long newSize, long nowNs) {
    reads.invalidate();
    if (newSize > size) {
      size = newSize;
    }
    mtimeNs = nowNs;
    unrecorded = true;
  }

  /** The file was truncated to {@code newSize} (buffered writes were flushed before). */
  synchronized void truncated(long newSize, long nowNs) {
    reads.invalidate();
    size = newSize;
    mtimeNs = nowNs;
  }

  synchronized Attr overlay(Attr a) {
    if (!unrecorded && a.size() == size) {
      return a;
    }
    Attr o = a.withSizeAndTimes(size, Math.max(a.mtimeNs(), mtimeNs), Math.max(a.ctimeNs(), mtimeNs));
    return killSetid ? o.withMode(Attr.withoutSetid(o.mode())) : o;
  }

  synchronized long size() {
    return size;
  }

  /** A size and mtime to record on the metadata server, and whether to clear set-ID bits. */
  record Recording(long size, long mtimeNs, boolean killSetid) {}
}
