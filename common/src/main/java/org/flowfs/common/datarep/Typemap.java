package org.flowfs.common.datarep;

import java.util.Optional;
import org.flowfs.common.request.Elementary;
import org.flowfs.common.request.Request;
import org.flowfs.common.request.RequestCursor;
import org.flowfs.common.request.RequestProcessor;
import org.flowfs.common.request.Segments;

/**
 * The values of a datatype tiled contiguously over a buffer (instance {@code k} at {@code k *
 * extent}), numbered in typemap order: what a conversion's {@code position} and {@code count}
 * count (seed 002: "position is an index into this typemap"). Lets a conversion find its place
 * for any position without walking from the start when the datatype is made of one elementary
 * type (the request processor seeks there); mixed datatypes are walked from the start of the
 * instance holding the position.
 *
 * <p>Stateless and thread safe.
 */
public final class Typemap {
  private static final int SEGMAX = 64;

  private Typemap() {}

  /** The number of values (typemap entries) in one instance of {@code type}; O(description). */
  public static long items(Request type) {
    if (type.size() == 0) {
      return 0;
    }
    switch (type.combiner()) {
      case NAMED:
        return 1;
      case CONTIGUOUS:
        return Math.multiplyExact(type.count(), items(type.types().get(0)));
      case VECTOR:
      case HVECTOR:
        return Math.multiplyExact(Math.multiplyExact(type.count(), type.blockLength()), items(type.types().get(0)));
      case INDEXED:
      case HINDEXED: {
        long n = 0;
        for (long b : type.blockLengths()) {
          n = Math.addExact(n, b);
        }
        return Math.multiplyExact(n, items(type.types().get(0)));
      }
      case STRUCT: {
        long n = 0;
        long[] bl = type.blockLengths();
        for (int i = 0; i < bl.length; i++) {
          n = Math.addExact(n, Math.multiplyExact(bl[i], items(type.types().get(i))));
        }
        return n;
      }
      case SUBARRAY: {
        long n = 1;
        for (long s : type.subsizes()) {
          n = Math.multiplyExact(n, s);
        }
        return Math.multiplyExact(n, items(type.types().get(0)));
      }
      case RESIZED:
        return items(type.types().get(0));
      default:
        throw new AssertionError(type.combiner());
    }
  }

  /**
   * Visits the values {@code position .. position + count - 1} of {@code type} tiled from offset 0,
   * in typemap order, with their offsets; stops early when the visitor returns false.
   *
   * @return false if the visitor stopped the walk
   * @throws IllegalArgumentException if {@code type} has no data or an argument is negative
   */
  public static boolean forEach(Request type, long position, long count, Request.ElementVisitor visitor) {
    if (position < 0 || count < 0) {
      throw new IllegalArgumentException("negative position or count");
    }
    if (count == 0) {
      return true;
    }
    if (type.size() == 0) {
      throw new IllegalArgumentException("a datatype without data has no values");
    }
    Optional<Elementary> one = type.elementType();
    if (one.isPresent()) {
      return uniform(type, one.get(), position, count, visitor);
    }
    long per = items(type);
    long tile = position / per;
    long[] skip = {position % per};
    long[] left = {count};
    boolean[] stopped = {false};
    while (left[0] > 0) {
      type.forEachElement(tile * type.extent(), (off, e) -> {
        if (skip[0] > 0) {
          skip[0]--;
          return true;
        }
        if (!visitor.visit(off, e)) {
          stopped[0] = true;
          return false;
        }
        return --left[0] > 0;
      });
      if (stopped[0]) {
        return false;
      }
      tile++;
    }
    return true;
  }

  /** All values of one type: seek in the data stream with the request processor. */
  private static boolean uniform(Request type, Elementary e, long position, long count, Request.ElementVisitor visitor) {
    int size = e.size();
    long at = Math.multiplyExact(position, size);
    long left = Math.multiplyExact(count, size);
    RequestCursor cursor = RequestCursor.of(type, 0, Math.addExact(at, left));
    Segments segs = new Segments(SEGMAX);
    while (left > 0) {
      RequestProcessor.processMemory(cursor, SEGMAX, segs, at, left);
      if (segs.bytes() == 0) {
        throw new IllegalStateException("request processor made no progress at " + at);
      }
      for (int i = 0; i < segs.count(); i++) {
        long end = segs.offset(i) + segs.size(i);
        for (long o = segs.offset(i); o < end; o += size) {
          if (!visitor.visit(o, e)) {
            return false;
          }
        }
      }
      at += segs.bytes();
      left -= segs.bytes();
    }
    return true;
  }
}
