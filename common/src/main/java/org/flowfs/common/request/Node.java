package org.flowfs.common.request;

import java.util.ArrayList;
import java.util.List;

/**
 * The compact walking form of a {@link Request}: a small tree of four kinds of nodes, computed once
 * when the request is built and shared by every {@link RequestCursor} over it. It keeps only what
 * the request processor needs (where the data bytes are, in typemap order) and forgets elementary
 * types and bounds markers.
 *
 * <ul>
 *   <li>{@link Block}: one contiguous run of bytes at a displacement;
 *   <li>{@link Repeat}: a child repeated {@code count} times, copy {@code i} at {@code i*stride};
 *   <li>{@link Blocks}: an irregular list of contiguous runs (flattened indexed types);
 *   <li>{@link Seq}: an irregular list of children at displacements (structs of mixed parts).
 * </ul>
 *
 * <p>Regular patterns stay loops: a vector of a million blocks is one {@code Repeat} over one
 * {@code Block}, never a million entries. The factories normalize as they build: empty parts
 * vanish ({@code null} stands for "no data"), a repeat whose copies touch becomes one block,
 * nested repeats with matching strides fold into one, and lists of blocks are merged where they
 * touch. Every node holds at least one data byte.
 *
 * <p>Immutable and thread safe (all fields final, arrays never exposed or modified).
 */
abstract class Node {
  static final int BLOCK = 0;
  static final int REPEAT = 1;
  static final int BLOCKS = 2;
  static final int SEQ = 3;

  /** Lists of blocks or parts are flattened into their parent only up to this many entries. */
  static final int FLATTEN_LIMIT = 1 << 16;

  final int kind;
  /** Number of data bytes, at least 1. */
  final long size;
  /** True lower bound: the lowest offset of a data byte, relative to the node's origin. */
  final long lo;
  /** True upper bound: one past the highest offset of a data byte. */
  final long hi;
  /**
   * Whether the data bytes, in typemap order, have strictly increasing offsets (no byte is visited
   * twice and the walk never goes back). Such a node can be searched by file offset.
   */
  final boolean monotone;
  /** Walker frames needed to reach a leaf: a block, a list of blocks, a repeat of a block is 1. */
  final int depth;

  Node(int kind, long size, long lo, long hi, boolean monotone, int depth) {
    this.kind = kind;
    this.size = size;
    this.lo = lo;
    this.hi = hi;
    this.monotone = monotone;
    this.depth = depth;
  }

  /** The offset of data byte number {@code rel} ({@code 0 <= rel < size}) of this node. */
  abstract long offsetAt(long rel);

  /** This node moved by {@code d} bytes. */
  abstract Node shift(long d);

  // ---------------------------------------------------------------- factories

  /** {@code len} bytes at {@code disp}, or null if {@code len == 0}. */
  static Node block(long disp, long len) {
    return len == 0 ? null : new Block(disp, len);
  }

  /** {@code count} copies of {@code child}, copy {@code i} at {@code i * stride}. */
  static Node repeat(long count, long stride, Node child) {
    if (child == null || count == 0) {
      return null;
    }
    if (count == 1) {
      return child;
    }
    if (child instanceof Block) {
      Block b = (Block) child;
      if (stride == b.len) {
        return new Block(b.disp, Math.multiplyExact(count, b.len));
      }
    }
    if (child instanceof Repeat) {
      Repeat r = (Repeat) child;
      if (Math.multiplyHigh(r.count, r.stride) == (r.count * r.stride >> 63)
          && stride == r.count * r.stride) {
        return repeat(Math.multiplyExact(count, r.count), r.stride, r.child);
      }
    }
    return new Repeat(count, stride, child);
  }

  /** The node at {@code disp}, or null. */
  static Node shifted(Node n, long disp) {
    return n == null || disp == 0 ? n : n.shift(disp);
  }

  /**
   * Parts {@code nodes[i]} at {@code disps[i]}, in this order (null parts are skipped). Nested
   * lists are inlined and runs of consecutive blocks are merged into one list of blocks while the
   * result stays below {@link #FLATTEN_LIMIT} entries.
   */
  static Node seq(long[] disps, Node[] nodes) {
    List<Long> d = new ArrayList<>();
    List<Node> n = new ArrayList<>();
    long inlined = 0;
    for (int i = 0; i < nodes.length; i++) {
      Node part = nodes[i];
      if (part == null) {
        continue;
      }
      if (part instanceof Seq && inlined + ((Seq) part).parts.length <= FLATTEN_LIMIT) {
        Seq s = (Seq) part;
        inlined += s.parts.length;
        for (int j = 0; j < s.parts.length; j++) {
          d.add(Math.addExact(disps[i], s.disp[j]));
          n.add(s.parts[j]);
        }
      } else {
        d.add(disps[i]);
        n.add(part);
      }
    }
    // merge runs of consecutive Block/Blocks parts into single Blocks parts
    List<Long> md = new ArrayList<>();
    List<Node> mn = new ArrayList<>();
    long copied = 0;
    int i = 0;
    while (i < n.size()) {
      if (!isFlat(n.get(i))) {
        md.add(d.get(i));
        mn.add(n.get(i));
        i++;
        continue;
      }
      int j = i;
      long entries = 0;
      while (j < n.size() && isFlat(n.get(j))) {
        long e = flatCount(n.get(j));
        if (j > i && copied + entries + e > FLATTEN_LIMIT) {
          break;
        }
        entries += e;
        j++;
      }
      if (j == i + 1) {
        md.add(d.get(i));
        mn.add(n.get(i));
      } else {
        copied += entries;
        BlockList list = new BlockList((int) entries);
        for (int k = i; k < j; k++) {
          list.addAll(n.get(k), d.get(k));
        }
        md.add(0L);
        mn.add(list.toNode());
      }
      i = j;
    }
    if (mn.isEmpty()) {
      return null;
    }
    if (mn.size() == 1) {
      return shifted(mn.get(0), md.get(0));
    }
    long[] sd = new long[md.size()];
    for (int k = 0; k < sd.length; k++) {
      sd[k] = md.get(k);
    }
    return new Seq(sd, mn.toArray(new Node[0]));
  }

  /** Blocks {@code lens[i]} bytes long at {@code disps[i]} (zero lengths skipped, touching runs merged). */
  static Node blocks(long[] disps, long[] lens) {
    BlockList list = new BlockList(disps.length);
    for (int i = 0; i < disps.length; i++) {
      list.add(disps[i], lens[i]);
    }
    return list.toNode();
  }

  private static boolean isFlat(Node n) {
    return n instanceof Block || n instanceof Blocks;
  }

  private static long flatCount(Node n) {
    return n instanceof Block ? 1 : ((Blocks) n).disp.length;
  }

  /** Binary search: the largest {@code i} with {@code a[i] <= x}, for {@code a[0] <= x}. */
  static int floorIndex(long[] a, long x) {
    int lo = 0;
    int hi = a.length - 1;
    while (lo < hi) {
      int mid = (lo + hi + 1) >>> 1;
      if (a[mid] <= x) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }

  /** Accumulates blocks, merging a block into the previous one when they touch. */
  private static final class BlockList {
    long[] disp;
    long[] len;
    int n;

    BlockList(int capacity) {
      disp = new long[Math.max(1, capacity)];
      len = new long[Math.max(1, capacity)];
    }

    void add(long d, long l) {
      if (l < 0) {
        throw new IllegalArgumentException("negative block length");
      }
      if (l == 0) {
        return;
      }
      if (n > 0 && disp[n - 1] + len[n - 1] == d) {
        len[n - 1] = Math.addExact(len[n - 1], l);
        return;
      }
      if (n == disp.length) {
        disp = java.util.Arrays.copyOf(disp, n * 2);
        len = java.util.Arrays.copyOf(len, n * 2);
      }
      disp[n] = d;
      len[n] = l;
      n++;
    }

    void addAll(Node node, long shift) {
      if (node instanceof Block) {
        Block b = (Block) node;
        add(Math.addExact(b.disp, shift), b.len);
      } else {
        Blocks b = (Blocks) node;
        for (int i = 0; i < b.disp.length; i++) {
          add(Math.addExact(b.disp[i], shift), b.len[i]);
        }
      }
    }

    Node toNode() {
      if (n == 0) {
        return null;
      }
      if (n == 1) {
        return new Block(disp[0], len[0]);
      }
      return new Blocks(java.util.Arrays.copyOf(disp, n), java.util.Arrays.copyOf(len, n));
    }
  }

  // ---------------------------------------------------------------- kinds

  /** {@code len} contiguous bytes at {@code disp}. */
  static final class Block extends Node {
    final long disp;
    final long len;

    Block(long disp, long len) {
      super(BLOCK, len, disp, Math.addExact(disp, len), true, 1);
      this.disp = disp;
      this.len = len;
    }

    @Override
    long offsetAt(long rel) {
      return disp + rel;
    }

    @Override
    Node shift(long d) {
      return new Block(Math.addExact(disp, d), len);
    }

    @Override
    public String toString() {
      return "Block(" + disp + "+" + len + ")";
    }
  }

  /** {@code count >= 2} copies of {@code child}, copy {@code i} at {@code i * stride}. */
  static final class Repeat extends Node {
    final long count;
    final long stride;
    final Node child;

    Repeat(long count, long stride, Node child) {
      super(
          REPEAT,
          Math.multiplyExact(count, child.size),
          Math.addExact(child.lo, Math.min(0, Math.multiplyExact(count - 1, stride))),
          Math.addExact(child.hi, Math.max(0, Math.multiplyExact(count - 1, stride))),
          child.monotone && stride >= child.hi - child.lo,
          child instanceof Block ? 1 : 1 + child.depth);
      this.count = count;
      this.stride = stride;
      this.child = child;
    }

    @Override
    long offsetAt(long rel) {
      long i = rel / child.size;
      return i * stride + child.offsetAt(rel - i * child.size);
    }

    @Override
    Node shift(long d) {
      return new Repeat(count, stride, child.shift(d));
    }

    @Override
    public String toString() {
      return "Repeat(" + count + "x" + stride + ", " + child + ")";
    }
  }

  /** At least two non-touching runs of bytes, {@code len[i]} bytes at {@code disp[i]}. */
  static final class Blocks extends Node {
    final long[] disp;
    final long[] len;
    /** {@code prefix[i]}: data bytes before block {@code i}. */
    final long[] prefix;

    Blocks(long[] disp, long[] len) {
      super(BLOCKS, sum(len), min(disp, len, null), max(disp, len, null), sorted(disp, len), 1);
      this.disp = disp;
      this.len = len;
      this.prefix = prefix(len);
    }

    private static long sum(long[] len) {
      long s = 0;
      for (long l : len) {
        s = Math.addExact(s, l);
      }
      return s;
    }

    private static boolean sorted(long[] disp, long[] len) {
      for (int i = 1; i < disp.length; i++) {
        if (disp[i] < disp[i - 1] + len[i - 1]) {
          return false;
        }
      }
      return true;
    }

    @Override
    long offsetAt(long rel) {
      int i = floorIndex(prefix, rel);
      return disp[i] + rel - prefix[i];
    }

    @Override
    Node shift(long d) {
      long[] nd = new long[disp.length];
      for (int i = 0; i < nd.length; i++) {
        nd[i] = Math.addExact(disp[i], d);
      }
      return new Blocks(nd, len);
    }

    @Override
    public String toString() {
      return "Blocks(" + disp.length + ")";
    }
  }

  /** At least two parts, {@code parts[i]} at {@code disp[i]}. */
  static final class Seq extends Node {
    final long[] disp;
    final Node[] parts;
    /** {@code prefix[i]}: data bytes before part {@code i}. */
    final long[] prefix;
    /** {@code ends[i] = disp[i] + parts[i].hi}; increasing when the node is monotone. */
    final long[] ends;

    Seq(long[] disp, Node[] parts) {
      super(
          SEQ,
          sizeOf(parts),
          min(disp, null, parts),
          max(disp, null, parts),
          monotone(disp, parts),
          depthOf(parts));
      this.disp = disp;
      this.parts = parts;
      long[] sizes = new long[parts.length];
      this.ends = new long[parts.length];
      for (int i = 0; i < parts.length; i++) {
        sizes[i] = parts[i].size;
        ends[i] = disp[i] + parts[i].hi;
      }
      this.prefix = prefix(sizes);
    }

    private static long sizeOf(Node[] parts) {
      long s = 0;
      for (Node p : parts) {
        s = Math.addExact(s, p.size);
      }
      return s;
    }

    private static int depthOf(Node[] parts) {
      int d = 0;
      for (Node p : parts) {
        d = Math.max(d, p.depth);
      }
      return d + 1;
    }

    private static boolean monotone(long[] disp, Node[] parts) {
      for (int i = 0; i < parts.length; i++) {
        if (!parts[i].monotone) {
          return false;
        }
        if (i > 0 && disp[i] + parts[i].lo < disp[i - 1] + parts[i - 1].hi) {
          return false;
        }
      }
      return true;
    }

    @Override
    long offsetAt(long rel) {
      int i = floorIndex(prefix, rel);
      return disp[i] + parts[i].offsetAt(rel - prefix[i]);
    }

    @Override
    Node shift(long d) {
      long[] nd = new long[disp.length];
      for (int i = 0; i < nd.length; i++) {
        nd[i] = Math.addExact(disp[i], d);
      }
      return new Seq(nd, parts);
    }

    @Override
    public String toString() {
      return "Seq(" + parts.length + ")";
    }
  }

  private static long[] prefix(long[] sizes) {
    long[] p = new long[sizes.length];
    long s = 0;
    for (int i = 0; i < sizes.length; i++) {
      p[i] = s;
      s += sizes[i];
    }
    return p;
  }

  private static long min(long[] disp, long[] len, Node[] parts) {
    long m = Long.MAX_VALUE;
    for (int i = 0; i < disp.length; i++) {
      m = Math.min(m, parts == null ? disp[i] : Math.addExact(disp[i], parts[i].lo));
    }
    return m;
  }

  private static long max(long[] disp, long[] len, Node[] parts) {
    long m = Long.MIN_VALUE;
    for (int i = 0; i < disp.length; i++) {
      m = Math.max(m, Math.addExact(disp[i], parts == null ? len[i] : parts[i].hi));
    }
    return m;
  }
}
