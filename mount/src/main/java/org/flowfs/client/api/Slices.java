package org.flowfs.client.api;

import java.util.Arrays;
import java.util.List;
import org.flowfs.common.request.Request;

/**
 * Pieces of a tiled request's data stream as requests of their own, so a transfer can start
 * anywhere in a view (an etype offset in the middle of a filetype instance) and still be one
 * request, hence one flow per server. Built from the request's description, never from its
 * blocks: a suffix of a vector of a million blocks is a struct of two parts.
 */
final class Slices {
  private Slices() {}

  /** A request to tile from {@code displacement}. */
  record Placed(Request request, long displacement) {}

  /**
   * The bytes {@code from .. from + length - 1} of the data stream of {@code type} tiled from
   * {@code displacement}, as a request whose own stream (tiled from the returned displacement,
   * cut after {@code length} bytes) is exactly those bytes at the same file offsets.
   */
  static Placed slice(Request type, long displacement, long from, long length) {
    long size = type.size();
    if (type.isContiguous()) {
      return new Placed(Request.bytes(Math.max(length, 1)), displacement + type.lb() + from);
    }
    long k = from / size;
    long q = from % size;
    long base = Math.addExact(displacement, Math.multiplyExact(k, type.extent()));
    if (q == 0) {
      return new Placed(type, base);
    }
    Request head = suffix(type, q);
    if (length <= size - q) {
      return new Placed(head, base);
    }
    long tiles = (length - (size - q) + size - 1) / size;
    return new Placed(join(head, 0, Request.contiguous(tiles, type), type.extent()), base);
  }

  /**
   * The data of one instance of {@code t} after its first {@code q} bytes (typemap order), at the
   * same offsets: {@code 0 <= q < t.size()}.
   */
  static Request suffix(Request t, long q) {
    if (q == 0) {
      return t;
    }
    if (q < 0 || q >= t.size()) {
      throw new IllegalArgumentException("suffix from byte " + q + " of " + t.size());
    }
    switch (t.combiner()) {
      case NAMED:
        return Request.hindexed(new long[] {t.size() - q}, new long[] {q}, Request.BYTE);
      case CONTIGUOUS:
        return run(t.types().get(0), t.count(), q);
      case VECTOR:
      case HVECTOR: {
        Request base = t.types().get(0);
        long stride = t.combiner() == Request.Combiner.VECTOR ? t.stride() * base.extent() : t.stride();
        long block = t.blockLength() * base.size();
        long j = q / block;
        Request head = run(base, t.blockLength(), q % block);
        Request rest = Request.hvector(t.count() - j - 1, t.blockLength(), stride, base);
        return join(head, j * stride, rest, (j + 1) * stride);
      }
      case INDEXED:
      case HINDEXED:
      case STRUCT: {
        long[] bl = t.blockLengths();
        long[] d = t.displacements();
        boolean struct = t.combiner() == Request.Combiner.STRUCT;
        long[] bytes = new long[d.length];
        for (int i = 0; i < d.length; i++) {
          Request part = t.types().get(struct ? i : 0);
          bytes[i] = t.combiner() == Request.Combiner.INDEXED ? d[i] * part.extent() : d[i];
        }
        long acc = 0;
        int i = 0;
        for (;; i++) {
          long n = bl[i] * t.types().get(struct ? i : 0).size();
          if (q < acc + n) {
            break;
          }
          acc += n;
        }
        Request part = t.types().get(struct ? i : 0);
        Request head = run(part, bl[i], q - acc);
        long[] restBl = Arrays.copyOfRange(bl, i + 1, bl.length);
        long[] restD = Arrays.copyOfRange(bytes, i + 1, bytes.length);
        Request rest = struct
            ? Request.struct(restBl, restD, t.types().subList(i + 1, bl.length))
            : Request.hindexed(restBl, restD, part);
        return join(head, bytes[i], rest, 0);
      }
      case SUBARRAY:
        return suffix(subarrayAsVectors(t), q);
      case RESIZED:
        return suffix(t.types().get(0), q);
      default:
        throw new AssertionError(t.combiner());
    }
  }

  /** The data of {@code n} copies of {@code base} ({@code base.extent()} apart) after byte {@code r}. */
  private static Request run(Request base, long n, long r) {
    long i = r / base.size();
    Request head = suffix(base, r % base.size());
    Request rest = n - i - 1 > 0 ? Request.contiguous(n - i - 1, base) : null;
    return join(head, i * base.extent(), rest, (i + 1) * base.extent());
  }

  /** {@code a} at {@code da}, then {@code b} (may be null or empty) at {@code db}. */
  private static Request join(Request a, long da, Request b, long db) {
    if (b == null || b.size() == 0) {
      return da == 0 ? a : Request.hindexed(new long[] {1}, new long[] {da}, a);
    }
    return Request.struct(new long[] {1, 1}, new long[] {da, db}, List.of(a, b));
  }

  /** A subarray as nested hvectors at its first element (its typemap, without its bounds). */
  private static Request subarrayAsVectors(Request t) {
    long[] sz = t.sizes();
    long[] sub = t.subsizes();
    long[] st = t.starts();
    int rank = sz.length;
    boolean c = t.order().orElseThrow() == Request.Order.C;
    Request base = t.types().get(0);
    int d0 = c ? rank - 1 : 0;
    Request v = Request.contiguous(sub[d0], base);
    long stride = sz[d0] * base.extent();
    long disp = st[d0] * base.extent();
    for (int k = 1; k < rank; k++) {
      int dim = c ? rank - 1 - k : k;
      v = Request.hvector(sub[dim], 1, stride, v);
      disp += st[dim] * stride;
      stride *= sz[dim];
    }
    return Request.hindexed(new long[] {1}, new long[] {disp}, v);
  }
}
