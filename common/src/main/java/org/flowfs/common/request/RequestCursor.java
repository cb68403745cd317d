package org.flowfs.common.request;

import java.util.Objects;
import org.flowfs.common.dist.Distribution;

/**
 * The request state (seed 003's {@code PINT_Request_state}): a position in the data stream of a
 * request tiled over a file or a buffer, with what is needed to go on from there cheaply.
 *
 * <p>The stream is {@code aggregateSize} bytes long: the data bytes of instance 0 of the request
 * in typemap order, then those of instance 1, and so on (instance {@code k} lies at {@code
 * displacement + k * request.extent()}, as MPI tiles a filetype over a file view), cut after
 * {@code aggregateSize} bytes, which need not be a whole number of instances. A position is a byte
 * number in that stream: 0 at the start, which is also the byte's offset in a contiguous client
 * buffer holding the stream.
 *
 * <p>A new cursor is positioned at the start. The {@link RequestProcessor} moves it; resuming a
 * call at the position the previous call returned costs nothing more than going on, and any other
 * position is reached by a search costing O(nesting depth x log(parts)), never by walking from the
 * start. The cursor keeps a stack of loop indices, one frame per level of the request, and
 * allocates nothing while it walks.
 *
 * <p><b>Not thread safe.</b> A cursor is the only mutable piece of request processing and is owned
 * by one flow (one thread at a time); the {@link Request} it walks is immutable and may be shared
 * by any number of cursors.
 */
public final class RequestCursor {
  private final Request request;
  private final long displacement;
  private final long total;
  /** The request's walking form repeated over enough instances; null when the stream is empty. */
  private final Node top;
  private final boolean monotone;
  private final long minOffset;
  private final long lastOffset;

  // walker state: frame d walks node fNode[d] placed at fBase[d], at part fIdx[d]
  private final Node[] fNode;
  private final long[] fIdx;
  private final long[] fBase;
  private int depth;
  private long pos;
  // offset of the byte at pos, and bytes left in its block from there
  private long curOff;
  private long curRem;
  // when the leaf frame repeats one block: block i of it is fastLen bytes at fastBase + i *
  // fastStride, i < fastCount; fastCount is 0 for other leaves
  private long fastBase;
  private long fastStride;
  private long fastLen;
  private long fastCount;
  private long seeks;

  // the distribution run last looked up, kept across calls: offsets [runStart, runEnd) are on
  // runServer, for runDist over runCount servers, and if that is runFor (the server processed),
  // contiguous in its datafile from runPhys
  private Distribution runDist;
  private int runCount;
  private int runFor;
  private long runStart;
  private long runEnd;
  private int runServer;
  private long runPhys;

  // saved state for CKSIZE, allocated on first use
  private Node[] sNode;
  private long[] sIdx;
  private long[] sBase;

  private RequestCursor(Request request, long displacement, long aggregateSize) {
    Objects.requireNonNull(request, "request");
    if (aggregateSize < 0) {
      throw new IllegalArgumentException("aggregate size must not be negative: " + aggregateSize);
    }
    if (aggregateSize > 0 && request.size() == 0) {
      throw new IllegalArgumentException("a request without data cannot cover " + aggregateSize);
    }
    this.request = request;
    this.displacement = displacement;
    this.total = aggregateSize;
    long tiles = aggregateSize == 0 ? 0 : (aggregateSize - 1) / request.size() + 1;
    try {
      this.top = Node.repeat(tiles, request.extent(), request.node);
      this.minOffset = top == null ? displacement : Math.addExact(displacement, top.lo);
      Math.addExact(displacement, top == null ? 0 : top.hi);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("tiled request overflows 64-bit offsets", e);
    }
    this.monotone = top == null || top.monotone;
    this.lastOffset = top == null ? displacement - 1 : displacement + top.offsetAt(total - 1);
    int frames = top == null ? 1 : top.depth;
    this.fNode = new Node[frames];
    this.fIdx = new long[frames];
    this.fBase = new long[frames];
    seekTo(0);
    this.seeks = 0;
  }

  /** A cursor over one instance of {@code request} at offset 0. */
  public static RequestCursor of(Request request) {
    return new RequestCursor(request, 0, request.size());
  }

  /**
   * A cursor over the first {@code aggregateSize} data bytes of {@code request} tiled from {@code
   * displacement} on (seed 001's {@code file_req}, {@code file_req_offset} and {@code
   * aggregate_size}).
   */
  public static RequestCursor of(Request request, long displacement, long aggregateSize) {
    return new RequestCursor(request, displacement, aggregateSize);
  }

  /** A cursor over {@code count} whole instances of {@code request} tiled from {@code displacement}. */
  public static RequestCursor repeated(Request request, long displacement, long count) {
    if (count < 0) {
      throw new IllegalArgumentException("count must not be negative: " + count);
    }
    long aggregate;
    try {
      aggregate = Math.multiplyExact(count, request.size());
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("request repeated " + count + " times is too large", e);
    }
    return new RequestCursor(request, displacement, aggregate);
  }

  public Request request() {
    return request;
  }

  /** Where instance 0 of the request lies (seed 001's {@code file_req_offset}). */
  public long displacement() {
    return displacement;
  }

  /** Length of the data stream in bytes (seed 001's {@code aggregate_size}). */
  public long aggregateSize() {
    return total;
  }

  /** The current position in the data stream. */
  public long position() {
    return pos;
  }

  /** Back to the start of the stream. */
  public void reset() {
    seekTo(0);
  }

  /** Lowest offset of any byte of the stream (negative offsets are fine only for memory). */
  long minOffset() {
    return minOffset;
  }

  /**
   * How many calls started somewhere else than where the cursor stood, so that it had to search
   * for the start offset rather than go on (for tests).
   */
  long seeks() {
    return seeks;
  }

  // ---------------------------------------------------------------- walking

  /** Push frames from {@code n} placed at {@code base} down to its first block. */
  private void descend(Node n, long base) {
    for (; ; ) {
      int d = depth++;
      fNode[d] = n;
      fIdx[d] = 0;
      fBase[d] = base;
      switch (n.kind) {
        case Node.BLOCK:
          {
            Node.Block b = (Node.Block) n;
            curOff = base + b.disp;
            curRem = b.len;
            fastCount = 0;
            return;
          }
        case Node.BLOCKS:
          {
            Node.Blocks b = (Node.Blocks) n;
            curOff = base + b.disp[0];
            curRem = b.len[0];
            fastCount = 0;
            return;
          }
        case Node.REPEAT:
          {
            Node.Repeat r = (Node.Repeat) n;
            if (r.child.kind == Node.BLOCK) {
              Node.Block b = (Node.Block) r.child;
              curOff = base + b.disp;
              curRem = b.len;
              setFast(r, base);
              return;
            }
            n = r.child;
            break;
          }
        default:
          {
            Node.Seq s = (Node.Seq) n;
            base += s.disp[0];
            n = s.parts[0];
            break;
          }
      }
    }
  }

  private void setFast(Node.Repeat r, long base) {
    Node.Block b = (Node.Block) r.child;
    fastBase = base + b.disp;
    fastStride = r.stride;
    fastLen = b.len;
    fastCount = r.count;
  }

  /** Sets the fast path for the leaf frame on top of the stack. */
  private void leafChanged() {
    Node n = depth == 0 ? null : fNode[depth - 1];
    if (n != null && n.kind == Node.REPEAT) {
      setFast((Node.Repeat) n, fBase[depth - 1]);
    } else {
      fastCount = 0;
    }
  }

  /** Move to the next block; only called with {@code curRem == 0} and {@code pos < total}. */
  private void advance() {
    int d = depth - 1;
    Node n = fNode[d];
    long i = ++fIdx[d];
    if (n.kind == Node.REPEAT) {
      Node.Repeat r = (Node.Repeat) n;
      if (i < r.count) {
        Node.Block b = (Node.Block) r.child;
        curOff = fBase[d] + b.disp + i * r.stride;
        curRem = b.len;
        return;
      }
    } else if (n.kind == Node.BLOCKS) {
      Node.Blocks b = (Node.Blocks) n;
      if (i < b.disp.length) {
        curOff = fBase[d] + b.disp[(int) i];
        curRem = b.len[(int) i];
        return;
      }
    }
    depth = d;
    while (depth > 0) {
      d = depth - 1;
      n = fNode[d];
      i = ++fIdx[d];
      if (n.kind == Node.REPEAT) {
        Node.Repeat r = (Node.Repeat) n;
        if (i < r.count) {
          descend(r.child, fBase[d] + i * r.stride);
          return;
        }
      } else {
        Node.Seq s = (Node.Seq) n;
        if (i < s.parts.length) {
          descend(s.parts[(int) i], fBase[d] + s.disp[(int) i]);
          return;
        }
      }
      depth = d;
    }
    throw new IllegalStateException("walked past the end of the request");
  }

  /** Position the cursor at stream byte {@code p}, {@code 0 <= p <= total}. */
  void seekTo(long p) {
    depth = 0;
    if (p >= total) {
      pos = total;
      curRem = 0;
      fastCount = 0;
      return;
    }
    Node n = top;
    long base = displacement;
    long rem = p;
    for (; ; ) {
      int d = depth++;
      fNode[d] = n;
      fBase[d] = base;
      switch (n.kind) {
        case Node.BLOCK:
          {
            Node.Block b = (Node.Block) n;
            fIdx[d] = 0;
            curOff = base + b.disp + rem;
            curRem = b.len - rem;
            pos = p;
            fastCount = 0;
            return;
          }
        case Node.BLOCKS:
          {
            Node.Blocks b = (Node.Blocks) n;
            int i = Node.floorIndex(b.prefix, rem);
            fIdx[d] = i;
            long r = rem - b.prefix[i];
            curOff = base + b.disp[i] + r;
            curRem = b.len[i] - r;
            pos = p;
            fastCount = 0;
            return;
          }
        case Node.REPEAT:
          {
            Node.Repeat r = (Node.Repeat) n;
            long i = rem / r.child.size;
            fIdx[d] = i;
            rem -= i * r.child.size;
            if (r.child.kind == Node.BLOCK) {
              Node.Block b = (Node.Block) r.child;
              curOff = base + b.disp + i * r.stride + rem;
              curRem = b.len - rem;
              pos = p;
              setFast(r, base);
              return;
            }
            base += i * r.stride;
            n = r.child;
            break;
          }
        default:
          {
            Node.Seq s = (Node.Seq) n;
            int i = Node.floorIndex(s.prefix, rem);
            fIdx[d] = i;
            rem -= s.prefix[i];
            base += s.disp[i];
            n = s.parts[i];
            break;
          }
      }
    }
  }

  /**
   * For a monotone stream: position the cursor at the first byte whose offset is {@code >= target}.
   * Returns false (and leaves the cursor at the end) if no byte of the stream is that far.
   */
  private boolean seekFile(long target) {
    depth = 0;
    Node n = top;
    long base = displacement;
    long rel = 0;
    if (target >= base + n.hi) {
      seekTo(total);
      return false;
    }
    for (; ; ) {
      if (target <= base + n.lo) {
        descend(n, base);
        break;
      }
      int d = depth++;
      fNode[d] = n;
      fBase[d] = base;
      if (n.kind == Node.BLOCK) {
        Node.Block b = (Node.Block) n;
        fIdx[d] = 0;
        curOff = target;
        curRem = base + b.disp + b.len - target;
        rel += target - base - b.disp;
        break;
      } else if (n.kind == Node.BLOCKS) {
        Node.Blocks b = (Node.Blocks) n;
        // first block ending after target
        int lo = 0;
        int hi = b.disp.length - 1;
        while (lo < hi) {
          int mid = (lo + hi) >>> 1;
          if (base + b.disp[mid] + b.len[mid] > target) {
            hi = mid;
          } else {
            lo = mid + 1;
          }
        }
        fIdx[d] = lo;
        long start = base + b.disp[lo];
        long o = Math.max(target, start);
        curOff = o;
        curRem = start + b.len[lo] - o;
        rel += b.prefix[lo] + (o - start);
        break;
      } else if (n.kind == Node.REPEAT) {
        Node.Repeat r = (Node.Repeat) n;
        long i = Math.max(0, Math.floorDiv(target - base - r.child.hi, r.stride) + 1);
        fIdx[d] = i;
        rel += i * r.child.size;
        if (r.child.kind == Node.BLOCK) {
          Node.Block b = (Node.Block) r.child;
          long start = base + i * r.stride + b.disp;
          long o = Math.max(target, start);
          curOff = o;
          curRem = start + b.len - o;
          rel += o - start;
          break;
        }
        base += i * r.stride;
        n = r.child;
      } else {
        Node.Seq s = (Node.Seq) n;
        int lo = 0;
        int hi = s.parts.length - 1;
        while (lo < hi) {
          int mid = (lo + hi) >>> 1;
          if (base + s.ends[mid] > target) {
            hi = mid;
          } else {
            lo = mid + 1;
          }
        }
        fIdx[d] = lo;
        rel += s.prefix[lo];
        base += s.disp[lo];
        n = s.parts[lo];
      }
    }
    if (rel >= total) {
      seekTo(total);
      return false;
    }
    pos = rel;
    leafChanged();
    return true;
  }

  private void save() {
    if (sNode == null) {
      sNode = new Node[fNode.length];
      sIdx = new long[fNode.length];
      sBase = new long[fNode.length];
    }
    System.arraycopy(fNode, 0, sNode, 0, depth);
    System.arraycopy(fIdx, 0, sIdx, 0, depth);
    System.arraycopy(fBase, 0, sBase, 0, depth);
  }

  private void restore(int d, long p, long off, long rem) {
    System.arraycopy(sNode, 0, fNode, 0, d);
    System.arraycopy(sIdx, 0, fIdx, 0, d);
    System.arraycopy(sBase, 0, fBase, 0, d);
    depth = d;
    pos = p;
    curOff = off;
    curRem = rem;
    leafChanged();
  }

  // ---------------------------------------------------------------- processing

  /**
   * The file side of {@link RequestProcessor#process}: see there. {@code server} selects datafile
   * offsets (else stream positions); {@code countOnly} is CKSIZE.
   */
  long processFile(
      FileData fd,
      int segmax,
      long bytemax,
      long start,
      Segments out,
      boolean server,
      boolean countOnly) {
    if (start != pos) {
      if (start == RequestProcessor.DONE) {
        out.set(0, 0, false);
        return RequestProcessor.DONE;
      }
      if (start < 0 || start > total) {
        throw new IllegalArgumentException(
            "start offset " + start + " outside [0, " + total + "]");
      }
    }
    if (monotone && minOffset < 0) {
      throw new IllegalArgumentException("request reaches negative file offset " + minOffset);
    }
    final int savedDepth = depth;
    final long savedPos = pos;
    final long savedOff = curOff;
    final long savedRem = curRem;
    if (countOnly) {
      save();
    }
    if (start != pos) {
      seeks++;
      seekTo(start);
    }
    final long[] offs = out.offsets();
    final long[] sizes = out.sizes();
    final int me = fd.serverNr();
    final int n = fd.serverCount();
    final Distribution dist = fd.distribution();
    final boolean extend = fd.extendFlag();
    final long limit = extend ? Long.MAX_VALUE : fd.fsize();
    final long total = this.total;
    if (runDist != dist || runCount != n || runFor != me) {
      runDist = dist;
      runCount = n;
      runFor = me;
      runStart = 0;
      runEnd = 0;
    }
    long runStart = this.runStart;
    long runEnd = this.runEnd;
    int runServer = this.runServer;
    long runPhys = this.runPhys;
    // the walker's hot state, in locals; written back before any call that uses the fields
    long pos = this.pos;
    long curOff = this.curOff;
    long curRem = this.curRem;
    long fastBase = this.fastBase;
    long fastStride = this.fastStride;
    long fastLen = this.fastLen;
    long fastCount = this.fastCount;
    long[] fIdx = this.fIdx;
    int leaf = depth - 1;
    int segs = 0;
    long bytes = 0;
    long lastEnd = Long.MIN_VALUE;
    boolean done = false;
    boolean eof = false;
    while (bytes < bytemax) {
      if (pos >= total) {
        done = true;
        break;
      }
      if (curRem == 0) {
        long i = fIdx[leaf] + 1;
        if (i < fastCount) {
          fIdx[leaf] = i;
          curOff = fastBase + i * fastStride;
          curRem = fastLen;
        } else {
          this.curRem = 0;
          advance();
          curOff = this.curOff;
          curRem = this.curRem;
          leaf = depth - 1;
          fastBase = this.fastBase;
          fastStride = this.fastStride;
          fastLen = this.fastLen;
          fastCount = this.fastCount;
        }
      }
      final long off = curOff;
      if (Long.compareUnsigned(off, limit) >= 0) { // off >= limit, or negative
        if (off < 0) {
          restoreIfCounting(countOnly, savedDepth, savedPos, savedOff, savedRem);
          throw new IllegalArgumentException("request reaches negative file offset " + off);
        }
        done = true;
        eof = true;
        break;
      }
      long avail = Math.min(Math.min(curRem, total - pos), limit - off);
      if (off < runStart || off >= runEnd) {
        runServer = dist.serverOf(off, n);
        long len = dist.contiguousLength(off, n);
        if (len < 1 || runServer < 0 || runServer >= n) {
          restoreIfCounting(countOnly, savedDepth, savedPos, savedOff, savedRem);
          throw new IllegalArgumentException(dist.name() + " maps offset " + off + " to server " + runServer
              + " of " + n + " for " + len + " bytes");
        }
        runStart = off;
        runEnd = len > Long.MAX_VALUE - off ? Long.MAX_VALUE : off + len;
        if (runServer == me) {
          runPhys = dist.logicalToPhysical(off, n);
        }
      }
      if (runServer == me) {
        long take = Math.min(Math.min(avail, runEnd - off), bytemax - bytes);
        if (!countOnly) {
          long o = server ? runPhys + (off - runStart) : pos;
          if (o == lastEnd) {
            sizes[segs - 1] += take;
          } else {
            if (segs == segmax) {
              break;
            }
            offs[segs] = o;
            sizes[segs] = take;
            segs++;
          }
          lastEnd = o + take;
        }
        bytes += take;
        curOff = off + take;
        curRem -= take;
        pos += take;
        if (curRem == 0 && fastCount > 0 && fastStride > fastLen) {
          // the rest of a regular leaf: as many whole blocks as fit this server's run, the limit,
          // bytemax, the stream and segmax, counted first and then written in a counted loop
          final long len = fastLen;
          final long stride = fastStride;
          long j = fIdx[leaf] + 1;
          long blockStart = fastBase + j * stride;
          long k = fastCount - j;
          if (server && !countOnly) {
            k = Math.min(k, segmax - segs);
          }
          k = fit(k, Math.min(runEnd, limit) - len - blockStart, stride);
          k = fit(k, Math.min(bytemax - bytes, total - pos) - len, len);
          if (k > 0) {
            long added = k * len;
            if (countOnly) {
              // nothing to write
            } else if (server) {
              long o = runPhys + (blockStart - runStart);
              final int end = segs + (int) k;
              for (int t = segs; t < end; t++) {
                offs[t] = o;
                sizes[t] = len;
                o += stride;
              }
              segs = end;
              lastEnd = o - stride + len;
            } else {
              // client buffer positions of consecutive blocks touch: one growing segment
              sizes[segs - 1] += added;
              lastEnd += added;
            }
            j += k - 1;
            fIdx[leaf] = j;
            curOff = fastBase + j * stride + len;
            bytes += added;
            pos += added;
            if (server
                && !countOnly
                && segs == segmax
                && j + 1 < fastCount
                && curOff + stride <= Math.min(runEnd, limit)) {
              // full, and the next block is in this run, past a gap: it would need a segment of
              // its own, so stop here rather than load it first
              break;
            }
          }
        }
      } else if (monotone) {
        // jump over the bytes of other servers: straight to the next byte this server holds
        long target = dist.nextMappedOffset(off, me, n);
        if (target <= off) {
          // another server holds off, so the next byte this one holds lies beyond it: a
          // distribution that says otherwise would have this loop go round for ever
          restoreIfCounting(countOnly, savedDepth, savedPos, savedOff, savedRem);
          throw new IllegalArgumentException(dist.name() + " maps offset " + off + " to server " + runServer
              + " but names " + target + " as server " + me + "'s next offset");
        }
        if (target >= limit) {
          done = true;
          eof = !extend && lastOffset >= limit;
          break;
        }
        long delta = target - off;
        if (delta < avail) {
          curOff = target;
          curRem -= delta;
          pos += delta;
        } else {
          boolean found = seekFile(target);
          pos = this.pos;
          curOff = this.curOff;
          curRem = this.curRem;
          leaf = depth - 1;
          fastBase = this.fastBase;
          fastStride = this.fastStride;
          fastLen = this.fastLen;
          fastCount = this.fastCount;
          if (!found) {
            done = true;
            eof = !extend && lastOffset >= limit;
            break;
          }
        }
      } else {
        long skip = Math.min(avail, runEnd - off);
        curOff = off + skip;
        curRem -= skip;
        pos += skip;
      }
    }
    this.pos = pos;
    this.curOff = curOff;
    this.curRem = curRem;
    this.runStart = runStart;
    this.runEnd = runEnd;
    this.runServer = runServer;
    this.runPhys = runPhys;
    if (!done && pos >= total) {
      done = true;
    } else if (!done && !countOnly && bytes >= bytemax) {
      int ahead = lookAhead(dist, n, me, limit, extend);
      done = ahead != MORE;
      eof = ahead == DONE_EOF;
    }
    if (countOnly) {
      restore(savedDepth, savedPos, savedOff, savedRem);
      out.set(0, bytes, eof);
      return start;
    }
    out.set(segs, bytes, eof);
    return done ? RequestProcessor.DONE : pos;
  }

  /**
   * The most of {@code k} steps {@code 0 .. k-1} with {@code t * step <= span}: {@code k} itself
   * when all of them do (checked without dividing when the product cannot overflow), else {@code
   * span / step + 1}; 0 when {@code span} is negative. {@code step > 0}.
   */
  private static long fit(long k, long span, long step) {
    if (k <= 0 || span < 0) {
      return 0;
    }
    long last = k - 1;
    if ((last | step) >>> 31 == 0 && last * step <= span) {
      return k;
    }
    return Math.min(k, span / step + 1);
  }

  private static final int MORE = 0;
  private static final int DONE_NO_EOF = 1;
  private static final int DONE_EOF = 2;

  /**
   * After a call stopped on bytemax: looks at the next byte, so that the call that produces a
   * server's last bytes already says DONE when that is cheap to know.
   */
  private int lookAhead(Distribution dist, int n, int me, long limit, boolean extend) {
    if (curRem == 0) {
      int leaf = depth - 1;
      long i = fIdx[leaf] + 1;
      if (i < fastCount) {
        fIdx[leaf] = i;
        curOff = fastBase + i * fastStride;
        curRem = fastLen;
      } else {
        advance();
      }
    }
    long off = curOff;
    if (off >= limit) {
      return DONE_EOF;
    }
    if (monotone && off >= 0) {
      int owner = off >= runStart && off < runEnd ? runServer : dist.serverOf(off, n);
      if (owner != me) {
        long target = dist.nextMappedOffset(off, me, n);
        if (target >= limit || target > lastOffset) {
          return !extend && lastOffset >= limit ? DONE_EOF : DONE_NO_EOF;
        }
      }
    }
    return MORE;
  }

  private void restoreIfCounting(boolean countOnly, int d, long p, long off, long rem) {
    if (countOnly) {
      restore(d, p, off, rem);
    }
  }

  /** The memory side: see {@link RequestProcessor#processMemory}. */
  long processMemory(int segmax, long bytemax, long start, Segments out) {
    if (start == RequestProcessor.DONE) {
      out.set(0, 0, false);
      return RequestProcessor.DONE;
    }
    if (start < 0 || start > total) {
      throw new IllegalArgumentException("start offset " + start + " outside [0, " + total + "]");
    }
    if (start != pos) {
      seeks++;
      seekTo(start);
    }
    final long[] offs = out.offsets();
    final long[] sizes = out.sizes();
    int segs = 0;
    long bytes = 0;
    long lastEnd = Long.MIN_VALUE;
    while (bytes < bytemax && pos < total) {
      if (curRem == 0) {
        int leaf = depth - 1;
        long i = fIdx[leaf] + 1;
        if (i < fastCount) {
          fIdx[leaf] = i;
          curOff = fastBase + i * fastStride;
          curRem = fastLen;
        } else {
          advance();
        }
      }
      long take = Math.min(curRem, total - pos);
      if (bytemax - bytes < take) {
        take = bytemax - bytes;
      }
      long o = curOff;
      if (o == lastEnd) {
        sizes[segs - 1] += take;
      } else {
        if (segs == segmax) {
          break;
        }
        offs[segs] = o;
        sizes[segs] = take;
        segs++;
      }
      lastEnd = o + take;
      curOff = o + take;
      curRem -= take;
      pos += take;
      bytes += take;
    }
    out.set(segs, bytes, false);
    return pos >= total ? RequestProcessor.DONE : pos;
  }

  @Override
  public String toString() {
    return "RequestCursor[" + request + " at " + displacement + ", " + pos + "/" + total + "]";
  }
}
