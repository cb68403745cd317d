package org.flowfs.common.request;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * A brute-force reference for {@link Request}: a datatype written down as its MPI definition, whose
 * typemap (data entries and lb/ub markers) is expanded entry by entry, with no cleverness. Tests
 * build the same type with the {@link Request} factories and compare.
 */
sealed interface TypeModel {

  /** One typemap entry: a data value of {@code type} or an lb/ub marker at {@code disp}. */
  record Entry(long disp, Elementary type, int marker) {
    static final int DATA = 0;
    static final int LB = 1;
    static final int UB = 2;
  }

  /** Builds the request with the factories. */
  Request build();

  /** Appends the typemap of one instance at {@code disp}. */
  void entries(long disp, List<Entry> out);

  default List<Entry> entries() {
    List<Entry> out = new ArrayList<>();
    entries(0, out);
    return out;
  }

  // -------------------------------------------------------------- MPI's definitions of the bounds

  default long size() {
    long s = 0;
    for (Entry e : entries()) {
      if (e.marker() == Entry.DATA) {
        s += e.type().size();
      }
    }
    return s;
  }

  /** {lb, ub, trueLb, trueUb} by MPI's rules over the expanded typemap. */
  default long[] bounds() {
    long markLb = Long.MAX_VALUE;
    long markUb = Long.MIN_VALUE;
    long dataLb = Long.MAX_VALUE;
    long dataUb = Long.MIN_VALUE;
    for (Entry e : entries()) {
      switch (e.marker()) {
        case Entry.LB:
          markLb = Math.min(markLb, e.disp());
          break;
        case Entry.UB:
          markUb = Math.max(markUb, e.disp());
          break;
        default:
          dataLb = Math.min(dataLb, e.disp());
          dataUb = Math.max(dataUb, e.disp() + e.type().size());
      }
    }
    boolean data = dataLb != Long.MAX_VALUE;
    long lb = markLb != Long.MAX_VALUE ? markLb : data ? dataLb : 0;
    long ub = markUb != Long.MIN_VALUE ? markUb : data ? dataUb : 0;
    return new long[] {lb, ub, data ? dataLb : 0, data ? dataUb : 0};
  }

  default long extent() {
    long[] b = bounds();
    return b[1] - b[0];
  }

  /** The offsets of the data bytes of one instance at {@code disp}, in order. */
  default void bytes(long disp, List<Long> out) {
    for (Entry e : entries()) {
      if (e.marker() == Entry.DATA) {
        for (int i = 0; i < e.type().size(); i++) {
          out.add(disp + e.disp() + i);
        }
      }
    }
  }

  /** The offsets of the first {@code aggregate} bytes of the type tiled from {@code disp}. */
  default long[] stream(long disp, long aggregate) {
    List<Long> one = new ArrayList<>();
    bytes(0, one);
    long[] out = new long[(int) aggregate];
    long ext = extent();
    for (int i = 0; i < aggregate; i++) {
      out[i] = disp + (i / one.size()) * ext + one.get(i % one.size());
    }
    return out;
  }

  private static void copy(TypeModel base, long disp, List<Entry> out, boolean markers) {
    List<Entry> tmp = new ArrayList<>();
    base.entries(disp, tmp);
    for (Entry e : tmp) {
      if (markers || e.marker() == Entry.DATA) {
        out.add(e);
      }
    }
  }

  // -------------------------------------------------------------- the constructors

  record Named(Elementary type) implements TypeModel {
    public Request build() {
      return Request.of(type);
    }

    public void entries(long disp, List<Entry> out) {
      out.add(new Entry(disp, type, Entry.DATA));
    }

    @Override
    public String toString() {
      return type.typeName();
    }
  }

  record Contig(long count, TypeModel base) implements TypeModel {
    public Request build() {
      return Request.contiguous(count, base.build());
    }

    public void entries(long disp, List<Entry> out) {
      long ext = base.extent();
      for (long i = 0; i < count; i++) {
        copy(base, disp + i * ext, out, true);
      }
    }
  }

  record Vec(long count, long blockLength, long stride, TypeModel base) implements TypeModel {
    public Request build() {
      return Request.vector(count, blockLength, stride, base.build());
    }

    public void entries(long disp, List<Entry> out) {
      long ext = base.extent();
      for (long i = 0; i < count; i++) {
        for (long j = 0; j < blockLength; j++) {
          copy(base, disp + (i * stride + j) * ext, out, true);
        }
      }
    }
  }

  record HVec(long count, long blockLength, long stride, TypeModel base) implements TypeModel {
    public Request build() {
      return Request.hvector(count, blockLength, stride, base.build());
    }

    public void entries(long disp, List<Entry> out) {
      long ext = base.extent();
      for (long i = 0; i < count; i++) {
        for (long j = 0; j < blockLength; j++) {
          copy(base, disp + i * stride + j * ext, out, true);
        }
      }
    }
  }

  record Idx(long[] blockLengths, long[] displacements, TypeModel base) implements TypeModel {
    public Request build() {
      return Request.indexed(blockLengths, displacements, base.build());
    }

    public void entries(long disp, List<Entry> out) {
      long ext = base.extent();
      for (int i = 0; i < blockLengths.length; i++) {
        for (long j = 0; j < blockLengths[i]; j++) {
          copy(base, disp + (displacements[i] + j) * ext, out, true);
        }
      }
    }

    @Override
    public String toString() {
      return "Idx[" + Arrays.toString(blockLengths) + Arrays.toString(displacements) + base + "]";
    }
  }

  record HIdx(long[] blockLengths, long[] displacements, TypeModel base) implements TypeModel {
    public Request build() {
      return Request.hindexed(blockLengths, displacements, base.build());
    }

    public void entries(long disp, List<Entry> out) {
      long ext = base.extent();
      for (int i = 0; i < blockLengths.length; i++) {
        for (long j = 0; j < blockLengths[i]; j++) {
          copy(base, disp + displacements[i] + j * ext, out, true);
        }
      }
    }

    @Override
    public String toString() {
      return "HIdx[" + Arrays.toString(blockLengths) + Arrays.toString(displacements) + base + "]";
    }
  }

  record Struct(long[] blockLengths, long[] displacements, List<TypeModel> types)
      implements TypeModel {
    public Request build() {
      List<Request> t = new ArrayList<>();
      for (TypeModel m : types) {
        t.add(m.build());
      }
      return Request.struct(blockLengths, displacements, t);
    }

    public void entries(long disp, List<Entry> out) {
      for (int i = 0; i < blockLengths.length; i++) {
        long ext = types.get(i).extent();
        for (long j = 0; j < blockLengths[i]; j++) {
          copy(types.get(i), disp + displacements[i] + j * ext, out, true);
        }
      }
    }

    @Override
    public String toString() {
      return "Struct[" + Arrays.toString(blockLengths) + Arrays.toString(displacements) + types
          + "]";
    }
  }

  record Sub(long[] sizes, long[] subsizes, long[] starts, Request.Order order, TypeModel base)
      implements TypeModel {
    public Request build() {
      return Request.subarray(sizes, subsizes, starts, order, base.build());
    }

    public void entries(long disp, List<Entry> out) {
      int rank = sizes.length;
      long ext = base.extent();
      long total = 1;
      for (long s : sizes) {
        total *= s;
      }
      long[] idx = new long[rank];
      long count = 1;
      for (long s : subsizes) {
        count *= s;
      }
      for (long n = 0; n < count; n++) {
        // the n-th element: the fastest dimension varies first
        long rest = n;
        for (int k = 0; k < rank; k++) {
          int dim = order == Request.Order.C ? rank - 1 - k : k;
          idx[dim] = starts[dim] + rest % subsizes[dim];
          rest /= subsizes[dim];
        }
        long linear = 0;
        if (order == Request.Order.C) {
          for (int dim = 0; dim < rank; dim++) {
            linear = linear * sizes[dim] + idx[dim];
          }
        } else {
          for (int dim = rank - 1; dim >= 0; dim--) {
            linear = linear * sizes[dim] + idx[dim];
          }
        }
        copy(base, disp + linear * ext, out, false);
      }
      out.add(new Entry(disp, null, Entry.LB));
      out.add(new Entry(disp + total * ext, null, Entry.UB));
    }

    @Override
    public String toString() {
      return "Sub[" + Arrays.toString(sizes) + Arrays.toString(subsizes) + Arrays.toString(starts)
          + order + " " + base + "]";
    }
  }

  record Resized(long lb, long extent, TypeModel base) implements TypeModel {
    public Request build() {
      return Request.resized(lb, extent, base.build());
    }

    public void entries(long disp, List<Entry> out) {
      copy(base, disp, out, false);
      out.add(new Entry(disp + lb, null, Entry.LB));
      out.add(new Entry(disp + lb + extent, null, Entry.UB));
    }
  }

  // -------------------------------------------------------------- random types

  /**
   * A random type of nesting at most {@code depth}. A tidy type has forward strides and sorted,
   * spread displacements, so it is usually monotone (a valid MPI-IO filetype); an untidy one may go
   * backwards, overlap and shrink its extent.
   */
  static TypeModel random(Random r, int depth, boolean tidy) {
    if (depth == 0 || r.nextInt(6) == 0) {
      return randomNamed(r);
    }
    switch (r.nextInt(8)) {
      case 0:
        return new Contig(count(r), random(r, depth - 1, tidy));
      case 1:
        {
          long bl = count(r);
          long stride = tidy ? bl + r.nextInt(3) : r.nextInt(7) - 3;
          return new Vec(count(r), bl, stride, random(r, depth - 1, tidy));
        }
      case 2:
        {
          TypeModel base = random(r, depth - 1, tidy);
          long bl = count(r);
          long stride =
              tidy ? bl * Math.max(0, base.extent()) + r.nextInt(16) : r.nextInt(48) - 16;
          return new HVec(count(r), bl, stride, base);
        }
      case 3:
        {
          int n = (int) count(r);
          long[] bl = new long[n];
          long[] d = new long[n];
          long at = tidy ? 0 : 0;
          for (int i = 0; i < n; i++) {
            bl[i] = r.nextInt(3);
            d[i] = tidy ? at + r.nextInt(3) : r.nextInt(12) - 3;
            at = d[i] + bl[i];
          }
          return new Idx(bl, d, random(r, depth - 1, tidy));
        }
      case 4:
        {
          TypeModel base = random(r, depth - 1, tidy);
          int n = (int) count(r);
          long[] bl = new long[n];
          long[] d = new long[n];
          long at = 0;
          for (int i = 0; i < n; i++) {
            bl[i] = r.nextInt(3);
            d[i] = tidy ? at + r.nextInt(10) : r.nextInt(70) - 10;
            at = d[i] + bl[i] * Math.max(0, base.extent()) + Math.max(0, base.bounds()[3]);
          }
          return new HIdx(bl, d, base);
        }
      case 5:
        {
          int n = 1 + r.nextInt(3);
          long[] bl = new long[n];
          long[] d = new long[n];
          List<TypeModel> types = new ArrayList<>();
          long at = 0;
          for (int i = 0; i < n; i++) {
            TypeModel t = random(r, depth - 1, tidy);
            bl[i] = r.nextInt(3);
            d[i] = tidy ? at + r.nextInt(8) : r.nextInt(70) - 10;
            at = d[i] + bl[i] * Math.max(0, t.extent()) + Math.max(0, t.bounds()[3]);
            types.add(t);
          }
          return new Struct(bl, d, types);
        }
      case 6:
        {
          int rank = 1 + r.nextInt(3);
          long[] sizes = new long[rank];
          long[] sub = new long[rank];
          long[] st = new long[rank];
          for (int k = 0; k < rank; k++) {
            sizes[k] = 1 + r.nextInt(4);
            sub[k] = r.nextInt((int) sizes[k] + 1);
            st[k] = r.nextInt((int) (sizes[k] - sub[k]) + 1);
          }
          Request.Order order = r.nextBoolean() ? Request.Order.C : Request.Order.FORTRAN;
          return new Sub(sizes, sub, st, order, random(r, depth - 1, tidy));
        }
      case 7:
        {
          TypeModel base = random(r, depth - 1, tidy);
          long[] b = base.bounds();
          if (tidy) {
            long lb = b[2] - r.nextInt(4);
            return new Resized(lb, b[3] - lb + r.nextInt(8), base);
          }
          return new Resized(r.nextInt(17) - 8, r.nextInt(41), base);
        }
      default:
        return randomNamed(r);
    }
  }

  /** A count, rarely 0. */
  private static long count(Random r) {
    return r.nextInt(10) == 0 ? 0 : 1 + r.nextInt(4);
  }

  private static TypeModel randomNamed(Random r) {
    switch (r.nextInt(4)) {
      case 0:
        return new Named(Elementary.BYTE);
      case 1:
        return new Named(Elementary.INT32);
      case 2:
        return new Named(Elementary.DOUBLE);
      default:
        return new Named(Elementary.values()[r.nextInt(Elementary.values().length)]);
    }
  }

  /** A random type with at least one and at most {@code maxBytes} data bytes. */
  static TypeModel randomWithData(Random r, int depth, boolean tidy, int maxBytes) {
    for (; ; ) {
      TypeModel t = random(r, depth, tidy);
      long size = t.size();
      if (depth > 0 && t instanceof Named && r.nextInt(10) != 0) {
        continue;
      }
      if (size > 0 && size <= maxBytes) {
        return t;
      }
    }
  }
}
