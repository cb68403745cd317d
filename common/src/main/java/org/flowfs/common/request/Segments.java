package org.flowfs.common.request;

/**
 * The output of one call of the {@link RequestProcessor}: the caller-owned offset and size arrays
 * (seed 003's {@code offset_array} and {@code size_array}) and the call's results, the number of
 * segments filled, the number of bytes processed and the EOF flag.
 *
 * <p>The arrays belong to the caller: a call overwrites entries {@code 0 .. count()-1} and never
 * reallocates them, so one {@code Segments} is reused for every call of a flow. Segments are never
 * empty, and within one call two consecutive segments never touch (they would have been merged).
 *
 * <p>Mutable and not thread safe: owned by the one thread or flow that calls the processor.
 */
public final class Segments {
  private final long[] offsets;
  private final long[] sizes;
  int count;
  long bytes;
  boolean eof;

  /** Segments with new arrays of {@code capacity} entries. */
  public Segments(int capacity) {
    this(new long[capacity], new long[capacity]);
  }

  /** Segments writing into the caller's arrays, which must have the same length. */
  public Segments(long[] offsets, long[] sizes) {
    if (offsets.length != sizes.length) {
      throw new IllegalArgumentException("offset and size arrays differ in length");
    }
    this.offsets = offsets;
    this.sizes = sizes;
  }

  /** The most segments one call can return. */
  public int capacity() {
    return offsets.length;
  }

  /** The offset array itself (not a copy); entries past {@link #count()} are stale. */
  public long[] offsets() {
    return offsets;
  }

  /** The size array itself (not a copy); entries past {@link #count()} are stale. */
  public long[] sizes() {
    return sizes;
  }

  /** Segments filled by the last call (the seed's {@code segmax} out); 0 in CKSIZE mode. */
  public int count() {
    return count;
  }

  /** Bytes processed by the last call (the seed's {@code bytemax} out). */
  public long bytes() {
    return bytes;
  }

  /**
   * The seed's EOF flag: whether the last byte of the request lies at or past the end of the file,
   * so that processing stopped at {@code fsize} before the end of the request. Only ever set with
   * {@code extendFlag} off, on the call that finishes the request.
   */
  public boolean eof() {
    return eof;
  }

  public long offset(int i) {
    if (i >= count) {
      throw new IndexOutOfBoundsException(i);
    }
    return offsets[i];
  }

  public long size(int i) {
    if (i >= count) {
      throw new IndexOutOfBoundsException(i);
    }
    return sizes[i];
  }

  void set(int count, long bytes, boolean eof) {
    this.count = count;
    this.bytes = bytes;
    this.eof = eof;
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder("Segments[");
    for (int i = 0; i < count; i++) {
      b.append(i == 0 ? "" : ", ").append(offsets[i]).append('+').append(sizes[i]);
    }
    return b.append("; ").append(bytes).append(" bytes").append(eof ? ", eof]" : "]").toString();
  }
}
