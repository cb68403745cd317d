package org.flowfs.common.flow;

import java.util.Arrays;
import org.flowfs.common.request.Segments;

/**
 * The (offset, length) pieces of one flow buffer, gathered from as many request processor calls as
 * it takes to fill the buffer: a strided request yields far more segments than one call returns,
 * and a buffer is worth a message and a disk access only when it is full. Touching pieces are
 * merged, also across calls. Owned by one buffer; not thread safe. Storage reads them ({@link
 * FlowStorage#write(org.flowfs.common.Handle, Pieces, io.netty.buffer.ByteBuf)}); flows fill them.
 */
public final class Pieces {
  private long[] offsets;
  private long[] lengths;
  private int count;
  private long bytes;

  public Pieces(int capacity) {
    offsets = new long[Math.max(1, capacity)];
    lengths = new long[offsets.length];
  }

  /** Appends what the last processor call filled into {@code segs}. */
  void add(Segments segs) {
    int n = segs.count();
    for (int i = 0; i < n; i++) {
      add(segs.offset(i), segs.size(i));
    }
  }

  /** Appends a piece; one that starts where the last ends extends it. */
  public void add(long offset, long length) {
    if (count > 0 && offsets[count - 1] + lengths[count - 1] == offset) {
      lengths[count - 1] += length;
    } else {
      if (count == offsets.length) {
        offsets = Arrays.copyOf(offsets, 2 * count);
        lengths = Arrays.copyOf(lengths, 2 * count);
      }
      offsets[count] = offset;
      lengths[count] = length;
      count++;
    }
    bytes += length;
  }

  public int count() {
    return count;
  }

  public long bytes() {
    return bytes;
  }

  public long offset(int i) {
    return offsets[i];
  }

  /** Length of piece {@code i}; a piece is never longer than a buffer, so it fits an int. */
  public int length(int i) {
    return (int) lengths[i];
  }

  /** Lowest offset of any piece; {@code count() > 0}. */
  long low() {
    long lo = Long.MAX_VALUE;
    for (int i = 0; i < count; i++) {
      lo = Math.min(lo, offsets[i]);
    }
    return lo;
  }

  /** End of the piece reaching furthest; {@code count() > 0}. */
  long high() {
    long hi = Long.MIN_VALUE;
    for (int i = 0; i < count; i++) {
      hi = Math.max(hi, offsets[i] + lengths[i]);
    }
    return hi;
  }
}
