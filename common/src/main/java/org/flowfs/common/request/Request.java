package org.flowfs.common.request;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A datatype in the sense of MPI (seed 003's {@code PVFS_Request}): an immutable description of
 * where the data bytes of one instance lie relative to an origin, in a fixed order (its typemap).
 * Built from the named {@link Elementary} types by the factory methods {@link #contiguous},
 * {@link #vector}, {@link #hvector}, {@link #indexed}, {@link #hindexed}, {@link #struct},
 * {@link #subarray} and {@link #resized}, nested to any depth.
 *
 * <p>Every request knows, as MPI defines them:
 *
 * <ul>
 *   <li>{@link #size()}: the number of data bytes in one instance;
 *   <li>{@link #lb()}, {@link #ub()}, {@link #extent()}: the bounds that space consecutive
 *       instances; for a type without an explicit bound they are the lowest and highest data
 *       offsets; {@link #resized} sets them explicitly, and explicit bounds propagate to enclosing
 *       types (MPI's "sticky" lower and upper bound markers: an enclosing type's bound is the
 *       extreme of its parts' explicit bounds if any part has them). No alignment padding is
 *       added to structs (MPI's epsilon); ask for it with {@link #resized};
 *   <li>{@link #trueLb()}, {@link #trueExtent()}: the span of the data bytes themselves, ignoring
 *       explicit bounds (MPI's {@code MPI_Type_get_true_extent}).
 * </ul>
 *
 * <p>A request has no identity beyond its structure but is compared by reference, as MPI handles
 * are. The constructor parameters can be read back (MPI's {@code MPI_Type_get_contents}), which is
 * what a wire codec needs; parameters that do not apply to the {@link #combiner()} are 0 or empty.
 * Its typemap can be walked element by element with {@link #forEachElement} (its type signature,
 * for datareps) or as merged byte blocks with a {@link RequestCursor}.
 *
 * <p>Building a request costs time and memory proportional to its description, never to the number
 * of blocks it describes: a vector of a million blocks is one loop, not a million entries. A
 * request is immutable and thread safe; any number of cursors may walk it at once.
 */
public final class Request {

  /** How a request was built (MPI's combiner). */
  public enum Combiner {
    NAMED,
    CONTIGUOUS,
    VECTOR,
    HVECTOR,
    INDEXED,
    HINDEXED,
    STRUCT,
    SUBARRAY,
    RESIZED
  }

  /** Array storage order for {@link #subarray}: C (row-major) or Fortran (column-major). */
  public enum Order {
    C,
    FORTRAN
  }

  /** Visitor of a typemap, see {@link #forEachElement}. */
  @FunctionalInterface
  public interface ElementVisitor {
    /**
     * One elementary value at byte {@code offset}; return false to stop the walk.
     *
     * @return whether to go on
     */
    boolean visit(long offset, Elementary type);
  }

  private static final long[] NONE = new long[0];
  private static final Request[] NAMED_TYPES = new Request[Elementary.values().length];

  static {
    for (Elementary e : Elementary.values()) {
      NAMED_TYPES[e.ordinal()] = new Request(e);
    }
  }

  public static final Request BYTE = of(Elementary.BYTE);
  public static final Request CHAR = of(Elementary.CHAR);
  public static final Request INT8 = of(Elementary.INT8);
  public static final Request UINT8 = of(Elementary.UINT8);
  public static final Request INT16 = of(Elementary.INT16);
  public static final Request UINT16 = of(Elementary.UINT16);
  public static final Request INT32 = of(Elementary.INT32);
  public static final Request UINT32 = of(Elementary.UINT32);
  public static final Request INT64 = of(Elementary.INT64);
  public static final Request UINT64 = of(Elementary.UINT64);
  public static final Request FLOAT = of(Elementary.FLOAT);
  public static final Request DOUBLE = of(Elementary.DOUBLE);

  // ------------------------------------------------------------------ construction parameters
  private final Combiner combiner;
  private final Elementary named;
  private final long count;
  private final long blockLength;
  private final long stride;
  private final long[] blockLengths;
  private final long[] displacements;
  private final List<Request> types;
  private final long[] sizes;
  private final long[] subsizes;
  private final long[] starts;
  private final Order order;

  // ------------------------------------------------------------------ derived
  private final long size;
  private final long lb;
  private final long ub;
  private final boolean explicitBounds;
  private final long trueLb;
  private final long trueUb;
  private final Elementary elementType;
  private final int nesting;
  /** The walking form; null when the request has no data byte. */
  final Node node;

  private Request(Elementary e) {
    this.combiner = Combiner.NAMED;
    this.named = e;
    this.count = 0;
    this.blockLength = 0;
    this.stride = 0;
    this.blockLengths = NONE;
    this.displacements = NONE;
    this.types = List.of();
    this.sizes = NONE;
    this.subsizes = NONE;
    this.starts = NONE;
    this.order = null;
    this.size = e.size();
    this.lb = 0;
    this.ub = e.size();
    this.explicitBounds = false;
    this.trueLb = 0;
    this.trueUb = e.size();
    this.elementType = e;
    this.nesting = 0;
    this.node = Node.block(0, e.size());
  }

  /** A derived request whose layout is that of {@code shape}, computed by {@link Shape}. */
  private Request(
      Combiner combiner,
      long count,
      long blockLength,
      long stride,
      long[] blockLengths,
      long[] displacements,
      List<Request> types,
      long[] sizes,
      long[] subsizes,
      long[] starts,
      Order order,
      Shape shape) {
    this.combiner = combiner;
    this.named = null;
    this.count = count;
    this.blockLength = blockLength;
    this.stride = stride;
    this.blockLengths = blockLengths;
    this.displacements = displacements;
    this.types = types;
    this.sizes = sizes;
    this.subsizes = subsizes;
    this.starts = starts;
    this.order = order;
    this.size = shape.size;
    this.lb = shape.lb();
    this.ub = shape.ub();
    this.explicitBounds = shape.explicit;
    this.trueLb = shape.anyData ? shape.tlb : 0;
    this.trueUb = shape.anyData ? shape.tub : 0;
    this.elementType = shape.mixed ? null : shape.element;
    int depth = 0;
    for (Request t : types) {
      depth = Math.max(depth, t.nesting);
    }
    this.nesting = depth + 1;
    this.node = shape.node;
  }

  /**
   * Bounds, size and walking form of a derived request, accumulated over groups of copies of its
   * parts. A group places copies of one part at displacements between {@code dmin} and {@code
   * dmax}; only the extremes matter for the bounds.
   */
  private static final class Shape {
    long size;
    boolean anyPlain;
    long plainLb = Long.MAX_VALUE;
    long plainUb = Long.MIN_VALUE;
    boolean explicit;
    long markLb = Long.MAX_VALUE;
    long markUb = Long.MIN_VALUE;
    boolean anyData;
    long tlb = Long.MAX_VALUE;
    long tub = Long.MIN_VALUE;
    Elementary element;
    boolean mixed;
    Node node;

    /** {@code copies} copies of {@code part} at displacements within [dmin, dmax]. */
    void add(Request part, long copies, long dmin, long dmax) {
      if (copies == 0) {
        return;
      }
      size = Math.addExact(size, Math.multiplyExact(copies, part.size));
      if (part.size > 0) {
        anyData = true;
        tlb = Math.min(tlb, Math.addExact(dmin, part.trueLb));
        tub = Math.max(tub, Math.addExact(dmax, part.trueUb));
        if (part.elementType == null) {
          mixed = true;
        } else if (element == null) {
          element = part.elementType;
        } else if (element != part.elementType) {
          mixed = true;
        }
      }
      if (part.explicitBounds) {
        explicit = true;
        markLb = Math.min(markLb, Math.addExact(dmin, part.lb));
        markUb = Math.max(markUb, Math.addExact(dmax, part.ub));
      } else if (part.size > 0) {
        anyPlain = true;
        plainLb = Math.min(plainLb, Math.addExact(dmin, part.lb));
        plainUb = Math.max(plainUb, Math.addExact(dmax, part.ub));
      }
    }

    /** Copies of {@code part} at {@code i*a + j*b}, {@code i < n}, {@code j < m}. */
    void addGrid(Request part, long n, long a, long m, long b) {
      if (n == 0 || m == 0) {
        return;
      }
      long span1 = Math.multiplyExact(n - 1, a);
      long span2 = Math.multiplyExact(m - 1, b);
      long dmin = Math.addExact(Math.min(0, span1), Math.min(0, span2));
      long dmax = Math.addExact(Math.max(0, span1), Math.max(0, span2));
      add(part, Math.multiplyExact(n, m), dmin, dmax);
    }

    long lb() {
      return explicit ? markLb : anyPlain ? plainLb : 0;
    }

    long ub() {
      return explicit ? markUb : anyPlain ? plainUb : 0;
    }
  }

  // ------------------------------------------------------------------ factories

  /** The request of one value of elementary type {@code e}. */
  public static Request of(Elementary e) {
    return NAMED_TYPES[e.ordinal()];
  }

  /** {@code n} contiguous bytes: {@code contiguous(n, BYTE)}. */
  public static Request bytes(long n) {
    return contiguous(n, BYTE);
  }

  /** {@code count} copies of {@code base}, each {@code base.extent()} after the previous. */
  public static Request contiguous(long count, Request base) {
    requireNonNegative(count, "count");
    Objects.requireNonNull(base, "base");
    return build(
        () -> {
          Shape s = new Shape();
          s.addGrid(base, count, base.extent(), 1, 0);
          s.node = Node.repeat(count, base.extent(), base.node);
          return new Request(
              Combiner.CONTIGUOUS, count, 0, 0, NONE, NONE, List.of(base), NONE, NONE, NONE, null,
              s);
        });
  }

  /**
   * {@code count} blocks of {@code blockLength} copies of {@code base}, block starts {@code stride}
   * extents of {@code base} apart (MPI_Type_vector). The stride may be negative.
   */
  public static Request vector(long count, long blockLength, long stride, Request base) {
    requireNonNegative(count, "count");
    requireNonNegative(blockLength, "blockLength");
    Objects.requireNonNull(base, "base");
    return build(
        () -> {
          long strideBytes = Math.multiplyExact(stride, base.extent());
          Shape s = vectorShape(count, blockLength, strideBytes, base);
          return new Request(
              Combiner.VECTOR, count, blockLength, stride, NONE, NONE, List.of(base), NONE, NONE,
              NONE, null, s);
        });
  }

  /** As {@link #vector} with the stride in bytes (MPI_Type_create_hvector). */
  public static Request hvector(long count, long blockLength, long strideBytes, Request base) {
    requireNonNegative(count, "count");
    requireNonNegative(blockLength, "blockLength");
    Objects.requireNonNull(base, "base");
    return build(
        () -> {
          Shape s = vectorShape(count, blockLength, strideBytes, base);
          return new Request(
              Combiner.HVECTOR, count, blockLength, strideBytes, NONE, NONE, List.of(base), NONE,
              NONE, NONE, null, s);
        });
  }

  private static Shape vectorShape(long count, long blockLength, long strideBytes, Request base) {
    Shape s = new Shape();
    s.addGrid(base, count, strideBytes, blockLength, base.extent());
    s.node =
        Node.repeat(count, strideBytes, Node.repeat(blockLength, base.extent(), base.node));
    return s;
  }

  /**
   * Blocks of {@code blockLengths[i]} copies of {@code base} at {@code displacements[i]} extents of
   * {@code base} (MPI_Type_indexed).
   */
  public static Request indexed(long[] blockLengths, long[] displacements, Request base) {
    long[] bl = blockLengths.clone();
    long[] d = displacements.clone();
    checkLists(bl, d.length);
    Objects.requireNonNull(base, "base");
    return build(
        () -> {
          long[] bytes = new long[d.length];
          for (int i = 0; i < d.length; i++) {
            bytes[i] = Math.multiplyExact(d[i], base.extent());
          }
          Shape s = indexedShape(bl, bytes, base);
          return new Request(
              Combiner.INDEXED, 0, 0, 0, bl, d, List.of(base), NONE, NONE, NONE, null, s);
        });
  }

  /** As {@link #indexed} with displacements in bytes (MPI_Type_create_hindexed). */
  public static Request hindexed(long[] blockLengths, long[] byteDisplacements, Request base) {
    long[] bl = blockLengths.clone();
    long[] d = byteDisplacements.clone();
    checkLists(bl, d.length);
    Objects.requireNonNull(base, "base");
    return build(
        () -> {
          Shape s = indexedShape(bl, d, base);
          return new Request(
              Combiner.HINDEXED, 0, 0, 0, bl, d, List.of(base), NONE, NONE, NONE, null, s);
        });
  }

  private static Shape indexedShape(long[] bl, long[] bytes, Request base) {
    Shape s = new Shape();
    for (int i = 0; i < bl.length; i++) {
      if (bl[i] > 0) {
        long span = Math.multiplyExact(bl[i] - 1, base.extent());
        s.add(base, bl[i], bytes[i] + Math.min(0, span), bytes[i] + Math.max(0, span));
      }
    }
    s.node = indexedNode(bl, bytes, base);
    return s;
  }

  private static Node indexedNode(long[] bl, long[] bytes, Request base) {
    Node bn = base.node;
    if (bn instanceof Node.Block && ((Node.Block) bn).len == base.extent()) {
      Node.Block blk = (Node.Block) bn;
      long[] d = new long[bl.length];
      long[] l = new long[bl.length];
      for (int i = 0; i < bl.length; i++) {
        d[i] = Math.addExact(bytes[i], blk.disp);
        l[i] = Math.multiplyExact(bl[i], blk.len);
      }
      return Node.blocks(d, l);
    }
    Node[] parts = new Node[bl.length];
    for (int i = 0; i < bl.length; i++) {
      parts[i] = Node.repeat(bl[i], base.extent(), bn);
    }
    return Node.seq(bytes, parts);
  }

  /**
   * Blocks of {@code blockLengths[i]} copies of {@code types[i]} at byte {@code
   * byteDisplacements[i]} (MPI_Type_create_struct).
   */
  public static Request struct(long[] blockLengths, long[] byteDisplacements, List<Request> types) {
    long[] bl = blockLengths.clone();
    long[] d = byteDisplacements.clone();
    List<Request> t = List.copyOf(types);
    checkLists(bl, d.length);
    if (t.size() != bl.length) {
      throw new IllegalArgumentException("struct needs one type per block");
    }
    return build(
        () -> {
          Shape s = new Shape();
          Node[] parts = new Node[bl.length];
          for (int i = 0; i < bl.length; i++) {
            Request part = t.get(i);
            if (bl[i] > 0) {
              long span = Math.multiplyExact(bl[i] - 1, part.extent());
              s.add(part, bl[i], d[i] + Math.min(0, span), d[i] + Math.max(0, span));
            }
            parts[i] = Node.repeat(bl[i], part.extent(), part.node);
          }
          s.node = Node.seq(d, parts);
          return new Request(Combiner.STRUCT, 0, 0, 0, bl, d, t, NONE, NONE, NONE, null, s);
        });
  }

  /** {@link #struct(long[], long[], List)} with an array of types. */
  public static Request struct(long[] blockLengths, long[] byteDisplacements, Request... types) {
    return struct(blockLengths, byteDisplacements, Arrays.asList(types));
  }

  /**
   * The elements {@code starts[k] .. starts[k]+subsizes[k]-1} in every dimension {@code k} of an
   * array of {@code sizes} elements of type {@code base}, stored in {@code order}
   * (MPI_Type_create_subarray). Its lower bound is 0 and its extent that of the whole array.
   */
  public static Request subarray(
      long[] sizes, long[] subsizes, long[] starts, Order order, Request base) {
    long[] sz = sizes.clone();
    long[] sub = subsizes.clone();
    long[] st = starts.clone();
    Objects.requireNonNull(order, "order");
    Objects.requireNonNull(base, "base");
    if (sz.length == 0 || sub.length != sz.length || st.length != sz.length) {
      throw new IllegalArgumentException("subarray needs sizes, subsizes and starts of one rank >= 1");
    }
    for (int k = 0; k < sz.length; k++) {
      if (sz[k] < 1 || sub[k] < 0 || sub[k] > sz[k] || st[k] < 0 || st[k] > sz[k] - sub[k]) {
        throw new IllegalArgumentException(
            "subarray dimension " + k + ": size " + sz[k] + ", subsize " + sub[k] + ", start "
                + st[k]);
      }
    }
    return build(
        () -> {
          Request eq = subarrayEquivalent(sz, sub, st, order, base);
          Shape s = new Shape();
          s.add(eq, 1, 0, 0);
          s.node = eq.node;
          return new Request(
              Combiner.SUBARRAY, 0, 0, 0, NONE, NONE, List.of(base), sz, sub, st, order, s);
        });
  }

  /** Nested hvectors, moved to the start element, resized to the whole array. */
  private static Request subarrayEquivalent(
      long[] sz, long[] sub, long[] st, Order order, Request base) {
    int rank = sz.length;
    // dims[0] varies fastest
    int[] dims = new int[rank];
    for (int k = 0; k < rank; k++) {
      dims[k] = order == Order.C ? rank - 1 - k : k;
    }
    long ext = base.extent();
    Request t = contiguous(sub[dims[0]], base);
    long strideBytes = Math.multiplyExact(sz[dims[0]], ext);
    long disp = Math.multiplyExact(st[dims[0]], ext);
    for (int k = 1; k < rank; k++) {
      int dim = dims[k];
      t = hvector(sub[dim], 1, strideBytes, t);
      disp = Math.addExact(disp, Math.multiplyExact(st[dim], strideBytes));
      strideBytes = Math.multiplyExact(strideBytes, sz[dim]);
    }
    t = hindexed(new long[] {1}, new long[] {disp}, t);
    return resized(0, strideBytes, t);
  }

  /**
   * {@code base} with lower bound {@code lb} and extent {@code extent} (MPI_Type_create_resized):
   * the data is unchanged; instances of it are spaced {@code extent} bytes apart.
   */
  public static Request resized(long lb, long extent, Request base) {
    Objects.requireNonNull(base, "base");
    return build(
        () -> {
          Shape s = new Shape();
          s.add(base, 1, 0, 0);
          s.explicit = true;
          s.markLb = lb;
          s.markUb = Math.addExact(lb, extent);
          s.node = base.node;
          return new Request(
              Combiner.RESIZED, 0, 0, 0, NONE, new long[] {lb, extent}, List.of(base), NONE, NONE,
              NONE, null, s);
        });
  }

  private interface Builder {
    Request build();
  }

  private static Request build(Builder b) {
    try {
      return b.build();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("request too large: offsets overflow 64 bits", e);
    }
  }

  private static void requireNonNegative(long v, String what) {
    if (v < 0) {
      throw new IllegalArgumentException(what + " must not be negative: " + v);
    }
  }

  private static void checkLists(long[] blockLengths, int displacements) {
    if (blockLengths.length != displacements) {
      throw new IllegalArgumentException("one displacement per block length");
    }
    for (long b : blockLengths) {
      requireNonNegative(b, "block length");
    }
  }

  // ------------------------------------------------------------------ properties

  /** Number of data bytes in one instance. */
  public long size() {
    return size;
  }

  /** Lower bound: explicit (see {@link #resized}) or the lowest data offset; 0 without data. */
  public long lb() {
    return lb;
  }

  /** Upper bound: explicit, or one past the highest data offset; 0 without data. */
  public long ub() {
    return ub;
  }

  /** {@code ub() - lb()}: the distance between consecutive instances. */
  public long extent() {
    return ub - lb;
  }

  /** Lowest offset of a data byte, explicit bounds ignored; 0 without data. */
  public long trueLb() {
    return trueLb;
  }

  /** One past the highest offset of a data byte; 0 without data. */
  public long trueUb() {
    return trueUb;
  }

  /** {@code trueUb() - trueLb()}. */
  public long trueExtent() {
    return trueUb - trueLb;
  }

  /** Whether bounds were set by {@link #resized} somewhere inside (MPI's sticky markers). */
  public boolean hasExplicitBounds() {
    return explicitBounds;
  }

  /** Whether the data fills {@code [lb, ub)} exactly, in order, each byte once. */
  public boolean isContiguous() {
    return node instanceof Node.Block
        && ((Node.Block) node).disp == lb
        && ((Node.Block) node).len == extent();
  }

  /**
   * Whether the data bytes of one instance lie at strictly increasing offsets in typemap order, as
   * MPI-IO requires of filetypes.
   */
  public boolean isMonotone() {
    return node == null || node.monotone;
  }

  /** The single elementary type all data of this request is made of, if there is one. */
  public Optional<Elementary> elementType() {
    return Optional.ofNullable(elementType);
  }

  /** How many constructors deep this request is (0 for a named type). */
  public int nesting() {
    return nesting;
  }

  // ------------------------------------------------------------------ construction parameters

  public Combiner combiner() {
    return combiner;
  }

  /** The elementary type of a {@link Combiner#NAMED} request. */
  public Optional<Elementary> named() {
    return Optional.ofNullable(named);
  }

  /** Count of a contiguous, vector or hvector request. */
  public long count() {
    return count;
  }

  /** Block length of a vector or hvector request. */
  public long blockLength() {
    return blockLength;
  }

  /** Stride of a vector (in extents of the base) or hvector (in bytes) request. */
  public long stride() {
    return stride;
  }

  /** Block lengths of an indexed, hindexed or struct request (a copy). */
  public long[] blockLengths() {
    return blockLengths.clone();
  }

  /**
   * Displacements of an indexed (in extents of the base), hindexed or struct (in bytes) request;
   * for a resized request, {@code {lb, extent}} (a copy).
   */
  public long[] displacements() {
    return displacements.clone();
  }

  /** The parts: the base type of every derived request, the types of a struct. */
  public List<Request> types() {
    return Collections.unmodifiableList(types);
  }

  /** Array sizes of a subarray request (a copy). */
  public long[] sizes() {
    return sizes.clone();
  }

  /** Subarray sizes of a subarray request (a copy). */
  public long[] subsizes() {
    return subsizes.clone();
  }

  /** Start indices of a subarray request (a copy). */
  public long[] starts() {
    return starts.clone();
  }

  /** Storage order of a subarray request. */
  public Optional<Order> order() {
    return Optional.ofNullable(order);
  }

  // ------------------------------------------------------------------ typemap

  /**
   * Walks the typemap of one instance placed at {@code displacement}: every elementary value with
   * its offset, in typemap order, which is the order of the request's data bytes (its type
   * signature, for datarep conversions). Takes time proportional to the number of values; stops
   * early when the visitor returns false.
   *
   * @return false if the visitor stopped the walk
   */
  public boolean forEachElement(long displacement, ElementVisitor visitor) {
    switch (combiner) {
      case NAMED:
        return visitor.visit(displacement, named);
      case CONTIGUOUS:
        return copies(types.get(0), displacement, count, types.get(0).extent(), 1, 0, visitor);
      case VECTOR:
        return copies(
            types.get(0),
            displacement,
            count,
            stride * types.get(0).extent(),
            blockLength,
            types.get(0).extent(),
            visitor);
      case HVECTOR:
        return copies(
            types.get(0), displacement, count, stride, blockLength, types.get(0).extent(), visitor);
      case INDEXED:
      case HINDEXED:
      case STRUCT:
        for (int i = 0; i < blockLengths.length; i++) {
          Request part = types.get(combiner == Combiner.STRUCT ? i : 0);
          long d =
              combiner == Combiner.INDEXED ? displacements[i] * part.extent() : displacements[i];
          if (!copies(part, displacement + d, 1, 0, blockLengths[i], part.extent(), visitor)) {
            return false;
          }
        }
        return true;
      case SUBARRAY:
        return subarrayEquivalent(sizes, subsizes, starts, order, types.get(0))
            .forEachElement(displacement, visitor);
      case RESIZED:
        return types.get(0).forEachElement(displacement, visitor);
      default:
        throw new AssertionError(combiner);
    }
  }

  private static boolean copies(
      Request part, long base, long n, long a, long m, long b, ElementVisitor visitor) {
    if (part.size == 0) {
      return true;
    }
    for (long i = 0; i < n; i++) {
      for (long j = 0; j < m; j++) {
        if (!part.forEachElement(base + i * a + j * b, visitor)) {
          return false;
        }
      }
    }
    return true;
  }

  /** The elementary values of one instance, in typemap order (for tests and small types). */
  List<Elementary> signature() {
    List<Elementary> out = new ArrayList<>();
    forEachElement(0, (o, t) -> out.add(t));
    return out;
  }

  @Override
  public String toString() {
    switch (combiner) {
      case NAMED:
        return named.typeName();
      case CONTIGUOUS:
        return "contiguous(" + count + ", " + types.get(0) + ")";
      case VECTOR:
      case HVECTOR:
        return combiner.name().toLowerCase()
            + "("
            + count
            + ", "
            + blockLength
            + ", "
            + stride
            + ", "
            + types.get(0)
            + ")";
      case INDEXED:
      case HINDEXED:
        return combiner.name().toLowerCase()
            + "("
            + Arrays.toString(blockLengths)
            + ", "
            + Arrays.toString(displacements)
            + ", "
            + types.get(0)
            + ")";
      case STRUCT:
        return "struct("
            + Arrays.toString(blockLengths)
            + ", "
            + Arrays.toString(displacements)
            + ", "
            + types
            + ")";
      case SUBARRAY:
        return "subarray("
            + Arrays.toString(sizes)
            + ", "
            + Arrays.toString(subsizes)
            + ", "
            + Arrays.toString(starts)
            + ", "
            + order
            + ", "
            + types.get(0)
            + ")";
      case RESIZED:
        return "resized(" + displacements[0] + ", " + displacements[1] + ", " + types.get(0) + ")";
      default:
        throw new AssertionError(combiner);
    }
  }
}
