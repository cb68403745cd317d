package org.flowfs.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import org.flowfs.common.Layout;

/**
 * Reads ahead of a sequential reader of one file: the file is seen as windows of {@code window}
 * bytes; a read in window {@code k} makes sure windows {@code k} and {@code k+1} are on their way,
 * each fetched from all the file's servers at once, so every server stays busy while the reader
 * consumes. A read that jumps elsewhere goes straight to the servers. The owner
 * ({@link FileState}) serializes calls.
 */
final class ReadAhead {
  private final DataPath path;
  private final Layout layout;
  private final int window;
  private final Duration timeout;
  private final ByteBufAllocator alloc;
  private final TreeMap<Long, Window> windows = new TreeMap<>();
  private long lastEnd;

  /**
   * Bytes {@code [k * window, k * window + length)} of the file, once {@code data} completes: a
   * buffer of the data path's choosing (views of the frames the bytes arrived in, for a flow).
   */
  record Window(CompletableFuture<ByteBuf> data, int length) {
    /** A window whose bytes are at hand. */
    static Window of(ByteBuf bytes, int length) {
      return new Window(CompletableFuture.completedFuture(bytes), length);
    }

    /** Releases the bytes once they are there (a read on its way ends first). */
    void drop() {
      data.whenComplete((b, err) -> {
        if (b != null) {
          b.release();
        }
      });
    }
  }

  /** Starts reading the first {@code length} bytes of a file: a window for {@link #offer}. */
  static Window first(DataPath path, Layout layout, int length, ByteBufAllocator alloc) {
    return new Window(path.readViews(layout, 0, length, alloc), length);
  }

  ReadAhead(DataPath path, Layout layout, int window, Duration timeout, ByteBufAllocator alloc) {
    this.path = path;
    this.layout = layout;
    this.window = window;
    this.timeout = timeout;
    this.alloc = alloc;
  }

  /** Reads {@code length} bytes at {@code offset} (within {@code size}) into {@code dst}. */
  void read(long offset, int length, long size, ByteBuf dst) {
    if (!streams(offset)) {
      jumped(offset + length);
      readNow(offset, length, dst);
      return;
    }
    ByteBuf v = views(offset, length, size);
    try {
      dst.writeBytes(v);
    } finally {
      v.release();
    }
  }

  /** Whether a read at {@code offset} is served from the windows: read-ahead is on and it does not jump. */
  boolean streams(long offset) {
    return window > 0 && (offset == lastEnd || covered(offset));
  }

  /**
   * The {@code length} bytes at {@code offset} (within {@code size}) of a read that {@link
   * #streams}, as retained views of the windows that hold them (read there first if need be):
   * no copy. The caller releases the buffer.
   */
  ByteBuf views(long offset, int length, long size) {
    lastEnd = offset + length;
    long k = offset / window;
    fetch(k, size);
    fetch(k + 1, size);
    // drop windows behind the reader, and those left ahead of where it read before it jumped back
    for (Map<Long, Window> stale : List.of(windows.headMap(k, false), windows.tailMap(k + 1, false))) {
      Iterator<Map.Entry<Long, Window>> it = stale.entrySet().iterator();
      while (it.hasNext()) {
        drop(it.next().getValue());
        it.remove();
      }
    }
    CompositeByteBuf out = alloc.compositeDirectBuffer(Integer.MAX_VALUE);
    try {
      long pos = offset;
      long end = offset + length;
      while (pos < end) {
        long wk = pos / window;
        Window w = windows.get(wk);
        if (w == null) {
          fetch(wk, size);
          w = windows.get(wk);
        }
        ByteBuf data;
        try {
          data = Await.get(w.data, timeout);
        } catch (RuntimeException e) {
          windows.remove(wk);
          drop(w);
          throw e;
        }
        int at = (int) (pos - wk * window);
        int n = (int) Math.min(end - pos, (long) w.length - at);
        if (n <= 0) {
          // the window was fetched when the file was shorter: read the rest directly
          int rest = (int) (end - pos);
          ByteBuf b = alloc.directBuffer(rest);
          try {
            path.readNow(layout, pos, rest, b, timeout);
          } catch (RuntimeException e) {
            b.release();
            throw e;
          }
          out.addComponent(true, b);
          break;
        }
        out.addComponent(true, data.retainedSlice(at, n));
        pos += n;
      }
      return out;
    } catch (RuntimeException e) {
      out.release();
      throw e;
    }
  }

  /** Whether a read at {@code offset} continues the last one (starts where it ended). */
  boolean continues(long offset) {
    return offset == lastEnd;
  }

  /**
   * Notes a read that does not {@link #streams}, ending at {@code end}, which its caller reads
   * with {@link #readNow}: a read that follows it then starts streaming.
   */
  void jumped(long end) {
    lastEnd = end;
  }

  /**
   * Reads {@code length} bytes at {@code offset} straight from the servers into {@code dst}. Uses
   * nothing a call of the owner changes, so the owner need not serialize it: a read that jumps
   * waits for the servers without holding up the file's other readers.
   */
  void readNow(long offset, int length, ByteBuf dst) {
    path.readNow(layout, offset, length, dst, timeout);
  }

  /**
   * Bytes {@code [start, start + length)} of a file of {@code size} bytes, for a reader that asked
   * for some of them and ends at {@code readerEnd}: views of the window that holds {@code start}
   * (the caller releases them), or null if no window does (then the caller reads them with
   * {@link #readNow}).
   */
  ByteBuf fromWindow(long start, int length, long size, long readerEnd) {
    ByteBuf v = window > 0 && covered(start) ? views(start, length, size) : null;
    lastEnd = readerEnd;
    return v;
  }

  private boolean covered(long offset) {
    Window w = windows.get(offset / window);
    return w != null;
  }

  private void fetch(long k, long size) {
    long start = k * window;
    if (start >= size || windows.containsKey(k)) {
      return;
    }
    int len = (int) Math.min(window, size - start);
    windows.put(k, new Window(path.readViews(layout, start, len, alloc), len));
  }

  /**
   * Takes {@code w} as the first window, read when the file was opened; the caller knows the file
   * ends within it. Dropped if windows are off or there is one already.
   */
  void offer(Window w) {
    if (window < w.length || windows.containsKey(0L)) {
      w.drop();
      return;
    }
    windows.put(0L, w);
  }

  /**
   * The file's {@code size > 0} bytes when the first window holds them all and they are at hand:
   * a view the caller releases; else null.
   */
  ByteBuf whole(long size) {
    Window w = windows.get(0L);
    if (w == null || size <= 0 || w.length < size || !w.data.isDone() || w.data.isCompletedExceptionally()) {
      return null;
    }
    ByteBuf b = w.data.join();
    return b.readableBytes() < size ? null : b.retainedSlice(b.readerIndex(), (int) size);
  }

  /** Forgets everything read ahead (the file changed). */
  void invalidate() {
    for (Window w : windows.values()) {
      drop(w);
    }
    windows.clear();
  }

  private static void drop(Window w) {
    w.drop();
  }
}
