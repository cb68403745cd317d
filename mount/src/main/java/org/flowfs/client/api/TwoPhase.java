package org.flowfs.client.api;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.request.Request;
import org.flowfs.common.request.RequestCursor;
import org.flowfs.common.request.RequestProcessor;
import org.flowfs.common.request.Segments;

/**
 * Collective two-phase I/O (the scheme ROMIO made standard): the byte range all members access
 * together is cut into one contiguous file domain per aggregator; in each round every member sends
 * each aggregator the pieces of its data that fall into the aggregator's current window (at most
 * {@code cb_buffer_size} bytes), and the aggregator moves its window with one contiguous transfer
 * (one flow per server). A write window with holes is read first and written back whole (data
 * sieving), so pieces of other data in it are preserved. A read window is read whole and each
 * member gets its pieces back.
 *
 * <p>Every member calls with its own offset and memory; all of them run the same rounds, in
 * lockstep, even with nothing to move. A failure at an aggregator is carried to the end of the
 * operation and raised at every member, so no member is left waiting.
 */
final class TwoPhase {
  private static final int SEGMAX = 1024;

  private TwoPhase() {}

  /** What a member needs: the file and the group, the transfer and its tuning. */
  record Call(FileSystemClient client, OpenFile file, Group group, ViewState view, long at, Memory mem,
      long cbBuffer, int cbNodes, long align, ByteBufAllocator alloc) {}

  /** The file segments of one member's access, in stream order (and file order: views run forward). */
  private static final class Segs {
    long[] off = new long[16];
    long[] len = new long[16];
    long[] pos = new long[16];
    int n;

    void add(long o, long l, long p) {
      if (n > 0 && off[n - 1] + len[n - 1] == o) {
        len[n - 1] += l;
        return;
      }
      if (n == off.length) {
        off = Arrays.copyOf(off, 2 * n);
        len = Arrays.copyOf(len, 2 * n);
        pos = Arrays.copyOf(pos, 2 * n);
      }
      off[n] = o;
      len[n] = l;
      pos[n] = p;
      n++;
    }

    /** The first segment ending after {@code o}. */
    int firstEndingAfter(long o) {
      int lo = 0;
      int hi = n;
      while (lo < hi) {
        int mid = (lo + hi) >>> 1;
        if (off[mid] + len[mid] <= o) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      return lo;
    }
  }

  static long write(Call c) {
    return run(c, true);
  }

  static long read(Call c) {
    return run(c, false);
  }

  private static long run(Call c, boolean write) {
    Group g = c.group();
    ViewState v = c.view();
    long total = v.fileBytes(c.mem());
    ByteBuf stream = null;
    boolean ownStream = false;
    try {
      // the member's data in file form, in stream order
      if (total > 0) {
        if (!write || v.converts(true) || !c.mem().type().isContiguous()) {
          stream = c.alloc().directBuffer(Math.toIntExact(total));
          ownStream = true;
          if (write) {
            Streams.pack(v, c.mem(), stream, total);
          } else {
            stream.setZero(0, (int) total);
          }
        } else {
          stream = c.mem().flowBuffer();
        }
      }
      Segs mine = segments(v, c.at(), total);

      // phase 0: who accesses what
      ByteBuffer info = ByteBuffer.allocate(40);
      info.putLong(mine.n == 0 ? Long.MAX_VALUE : mine.off[0]);
      info.putLong(mine.n == 0 ? Long.MIN_VALUE : mine.off[mine.n - 1] + mine.len[mine.n - 1]);
      info.putLong(total).putLong(c.cbBuffer()).putLong(c.cbNodes());
      byte[][] all = g.allgather(info.array());
      long lo = Long.MAX_VALUE;
      long hi = Long.MIN_VALUE;
      for (byte[] a : all) {
        ByteBuffer b = ByteBuffer.wrap(a);
        lo = Math.min(lo, b.getLong());
        hi = Math.max(hi, b.getLong());
      }
      if (lo >= hi) {
        return 0; // nobody moves anything
      }
      ByteBuffer root = ByteBuffer.wrap(all[0]);
      root.position(24);
      long cb = Math.max(1, root.getLong());
      int aggs = (int) Math.max(1, Math.min(g.size(), root.getLong()));

      // the file domains: contiguous, aligned to the strip size where that helps
      long domain = (hi - lo + aggs - 1) / aggs;
      long align = Math.max(1, c.align());
      if (domain > align) {
        domain = (domain + align - 1) / align * align;
      }
      long rounds = (domain + cb - 1) / cb;
      int myDomain = -1;
      for (int a = 0; a < aggs; a++) {
        if (aggregator(a, aggs, g.size()) == g.rank()) {
          myDomain = a;
        }
      }
      int[] next = new int[aggs];
      for (int a = 0; a < aggs; a++) {
        next[a] = mine.firstEndingAfter(lo + a * domain);
      }

      Errno failed = null;
      String why = null;
      long validEnd = total; // reads: the first stream byte that did not arrive (end of file)
      for (long r = 0; r < rounds; r++) {
        byte[][] outMsg = new byte[g.size()][];
        Arrays.fill(outMsg, new byte[4]);
        for (int a = 0; a < aggs; a++) {
          long ws = lo + a * domain + r * cb;
          long we = Math.min(Math.min(hi, lo + (a + 1) * domain), ws + cb);
          if (ws >= we) {
            continue;
          }
          outMsg[aggregator(a, aggs, g.size())] = pieces(mine, next, a, ws, we, write ? stream : null);
        }
        byte[][] inMsg = g.alltoall(outMsg);
        if (write) {
          if (myDomain >= 0 && failed == null) {
            try {
              aggregateWrite(c, inMsg);
            } catch (RuntimeException e) {
              failed = Errno.from(e);
              why = e.getMessage();
            }
          }
          continue;
        }
        byte[][] replies = new byte[g.size()][];
        Arrays.fill(replies, new byte[4]);
        if (myDomain >= 0) {
          try {
            replies = aggregateRead(c, inMsg, failed != null);
          } catch (RuntimeException e) {
            failed = Errno.from(e);
            why = e.getMessage();
            replies = aggregateRead(c, inMsg, true);
          }
        }
        byte[][] back = g.alltoall(replies);
        for (int s = 0; s < back.length; s++) {
          int a = domainOf(s, aggs, g.size());
          if (a >= 0) {
            validEnd = Math.min(validEnd, scatter(outMsg[s], back[s], stream));
          }
        }
      }

      // every member learns whether an aggregator failed
      ByteBuffer st = ByteBuffer.allocate(4).putInt(failed == null ? 0 : failed.code());
      for (byte[] s : g.allgather(st.array())) {
        int code = ByteBuffer.wrap(s).getInt();
        if (code != 0) {
          throw new FsException(Errno.ofCode(code), "collective " + (write ? "write" : "read") + " failed at an aggregator"
              + (why != null ? ": " + why : ""));
        }
      }
      if (write) {
        return c.mem().dataBytes();
      }
      return total == 0 ? 0 : Streams.unpack(v, c.mem(), stream, validEnd);
    } finally {
      if (ownStream) {
        stream.release();
      }
    }
  }

  /** The rank that aggregates domain {@code a}: spread over the group. */
  private static int aggregator(int a, int aggs, int size) {
    return (int) ((long) a * size / aggs);
  }

  /** The domain rank {@code r} aggregates, or -1. */
  private static int domainOf(int r, int aggs, int size) {
    for (int a = 0; a < aggs; a++) {
      if (aggregator(a, aggs, size) == r) {
        return a;
      }
    }
    return -1;
  }

  /** The file segments of stream bytes {@code at ..} ({@code total} of them), from the request processor. */
  private static Segs segments(ViewState v, long at, long total) {
    Segs out = new Segs();
    if (total == 0) {
      return out;
    }
    Slices.Placed p = v.slice(at, total);
    RequestCursor cur = RequestCursor.of(p.request(), p.displacement(), total);
    Segments segs = new Segments(SEGMAX);
    long pos = 0;
    while (pos < total) {
      RequestProcessor.processMemory(cur, SEGMAX, segs, pos, total - pos);
      for (int i = 0; i < segs.count(); i++) {
        out.add(segs.offset(i), segs.size(i), pos);
        pos += segs.size(i);
      }
      if (segs.bytes() == 0) {
        throw new IllegalStateException("request processor made no progress");
      }
    }
    return out;
  }

  /**
   * This member's pieces in {@code [ws, we)}: {@code int n, n x (long offset, int length, long
   * stream position)}, then for a write their bytes. Advances {@code next[a]} past the segments
   * done with.
   */
  private static byte[] pieces(Segs s, int[] next, int a, long ws, long we, ByteBuf data) {
    int first = next[a];
    int k = first;
    long bytes = 0;
    int n = 0;
    while (k < s.n && s.off[k] < we) {
      long from = Math.max(ws, s.off[k]);
      long to = Math.min(we, s.off[k] + s.len[k]);
      if (to > from) {
        n++;
        bytes += to - from;
      }
      if (s.off[k] + s.len[k] > we) {
        break; // continues in the next window
      }
      k++;
    }
    ByteBuffer out = ByteBuffer.allocate(Math.toIntExact(4 + 20L * n + (data != null ? bytes : 0)));
    out.putInt(n);
    int dataAt = 4 + 20 * n;
    for (int j = first; j < first + n; j++) {
      long from = Math.max(ws, s.off[j]);
      long to = Math.min(we, s.off[j] + s.len[j]);
      long spos = s.pos[j] + (from - s.off[j]);
      out.putLong(from).putInt((int) (to - from)).putLong(spos);
      if (data != null) {
        data.getBytes((int) spos, out.array(), dataAt, (int) (to - from));
        dataAt += (int) (to - from);
      }
    }
    next[a] = k;
    return out.array();
  }

  /**
   * The file ranges {@code {start, end}} of the pieces in the members' piece lists ({@code int n,
   * n x (long offset, int length, long position)}), in list order.
   */
  private static long[][] ranges(byte[][] in) {
    List<long[]> out = new ArrayList<>();
    for (byte[] m : in) {
      ByteBuffer b = ByteBuffer.wrap(m);
      int n = b.getInt();
      for (int i = 0; i < n; i++) {
        long off = b.getLong();
        int len = b.getInt();
        b.getLong();
        out.add(new long[] {off, off + len});
      }
    }
    return out.toArray(long[][]::new);
  }

  /** Aggregator, write: assembles the window from every member's pieces and writes it at once. */
  private static void aggregateWrite(Call c, byte[][] in) {
    long[][] ranges = ranges(in);
    if (ranges.length == 0) {
      return;
    }
    Arrays.sort(ranges, (x, y) -> Long.compare(x[0], y[0]));
    long wlo = ranges[0][0];
    long whi = Long.MIN_VALUE;
    for (long[] r : ranges) {
      whi = Math.max(whi, r[1]);
    }
    long covered = wlo;
    for (long[] r : ranges) {
      if (r[0] > covered) {
        break;
      }
      covered = Math.max(covered, r[1]);
    }
    int size = Math.toIntExact(whi - wlo);
    ByteBuf window = c.alloc().directBuffer(size, size);
    try {
      window.setZero(0, size);
      if (covered < whi) {
        // holes: keep the bytes between the pieces (read, modify, write)
        Futures.join(c.client().readAsync(c.file(), Request.bytes(size), wlo, size, window, null));
      }
      for (byte[] m : in) {
        ByteBuffer b = ByteBuffer.wrap(m);
        int n = b.getInt();
        int dataAt = 4 + 20 * n;
        for (int i = 0; i < n; i++) {
          long off = b.getLong();
          int len = b.getInt();
          b.getLong();
          window.setBytes((int) (off - wlo), m, dataAt, len);
          dataAt += len;
        }
      }
      Futures.join(c.client().writeAsync(c.file(), Request.bytes(size), wlo, size, window, null));
    } finally {
      window.release();
    }
  }

  /**
   * Aggregator, read: reads the window the members' pieces span at once and answers each member
   * with {@code int n, n x int valid bytes}, then the pieces' bytes. With {@code failed}, answers
   * that nothing arrived.
   */
  private static byte[][] aggregateRead(Call c, byte[][] in, boolean failed) {
    long wlo = Long.MAX_VALUE;
    long whi = Long.MIN_VALUE;
    for (long[] r : ranges(in)) {
      wlo = Math.min(wlo, r[0]);
      whi = Math.max(whi, r[1]);
    }
    ByteBuf window = null;
    long got = 0;
    try {
      if (wlo < whi && !failed) {
        int size = Math.toIntExact(whi - wlo);
        window = c.alloc().directBuffer(size, size);
        window.setZero(0, size);
        got = Futures.join(c.client().readAsync(c.file(), Request.bytes(size), wlo, size, window, null));
      }
      byte[][] out = new byte[in.length][];
      for (int s = 0; s < in.length; s++) {
        ByteBuffer b = ByteBuffer.wrap(in[s]);
        int n = b.getInt();
        long bytes = 0;
        long[] off = new long[n];
        int[] len = new int[n];
        for (int i = 0; i < n; i++) {
          off[i] = b.getLong();
          len[i] = b.getInt();
          b.getLong();
          bytes += len[i];
        }
        ByteBuffer r = ByteBuffer.allocate(Math.toIntExact(4 + 4L * n + (window != null ? bytes : 0)));
        r.putInt(n);
        for (int i = 0; i < n; i++) {
          long valid = Math.max(0, Math.min(len[i], wlo + got - off[i]));
          r.putInt((int) valid);
        }
        if (window != null) {
          int at = 4 + 4 * n;
          for (int i = 0; i < n; i++) {
            window.getBytes((int) (off[i] - wlo), r.array(), at, len[i]);
            at += len[i];
          }
        }
        out[s] = r.array();
      }
      return out;
    } finally {
      if (window != null) {
        window.release();
      }
    }
  }

  /**
   * Member, read: copies the pieces an aggregator sent back ({@code reply}) for the pieces asked
   * for ({@code asked}) into the stream buffer; returns the first stream byte that did not arrive,
   * or {@code Long.MAX_VALUE}.
   */
  private static long scatter(byte[] asked, byte[] reply, ByteBuf stream) {
    ByteBuffer q = ByteBuffer.wrap(asked);
    ByteBuffer r = ByteBuffer.wrap(reply);
    int n = q.getInt();
    if (n == 0) {
      return Long.MAX_VALUE;
    }
    if (r.getInt() != n) {
      throw new FsException(Errno.EPROTO, "aggregator answered for other pieces");
    }
    long missing = Long.MAX_VALUE;
    int at = 4 + 4 * n;
    boolean withData = reply.length > at;
    for (int i = 0; i < n; i++) {
      q.getLong();
      int len = q.getInt();
      long spos = q.getLong();
      int valid = r.getInt();
      if (valid < len) {
        missing = Math.min(missing, spos + valid);
      }
      if (withData) {
        stream.setBytes((int) spos, reply, at, valid);
        at += len;
      }
    }
    return missing;
  }
}
