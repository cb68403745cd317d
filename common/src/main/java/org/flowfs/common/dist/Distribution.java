package org.flowfs.common.dist;

import org.flowfs.common.DistSpec;

/**
 * Maps logical file offsets onto the datafiles of a file (seed 003's {@code PINT_dist_methods}).
 * Server numbers are {@code 0 .. serverCount-1}, the index of a datafile in the file's layout.
 *
 * <p>Implementations are immutable values of their parameters (records where they can be),
 * registered by name in {@link Distributions}; they are thread safe and never block. The built-in
 * ones are {@link SimpleStripe} (the default), {@link Basic} and {@link VarStrip}.
 */
public interface Distribution {
  /** The registered name, stored in a file's metadata. */
  String name();

  /** Name and parameters, as stored in a file's metadata. */
  DistSpec spec();

  /** The server number holding logical byte {@code logical}. */
  int serverOf(long logical, int serverCount);

  /** The offset of logical byte {@code logical} in the datafile of {@link #serverOf}. */
  long logicalToPhysical(long logical, int serverCount);

  /** The logical offset of byte {@code physical} of server {@code server}'s datafile. */
  long physicalToLogical(int server, long physical, int serverCount);

  /**
   * How many bytes from {@code logical} on stay on the same server and are contiguous in its
   * datafile (at least 1). The built-in distributions return the longest such run; {@code
   * Long.MAX_VALUE - logical} stands for "to the end of all offsets".
   */
  long contiguousLength(long logical, int serverCount);

  /**
   * The smallest logical offset {@code >= logical} that server {@code server} holds, or {@link
   * Long#MAX_VALUE} if it holds none (a server a distribution gives no data to).
   */
  long nextMappedOffset(long logical, int server, int serverCount);

  /**
   * The size a datafile must have so that the file's logical size is {@code logicalSize}: the
   * physical offset just past the last logical byte below {@code logicalSize} held by {@code
   * server}, or 0.
   */
  long physicalSize(long logicalSize, int server, int serverCount);

  /** The logical size of a file whose datafiles have these physical sizes. */
  default long logicalSize(long[] physicalSizes) {
    long size = 0;
    for (int s = 0; s < physicalSizes.length; s++) {
      if (physicalSizes[s] > 0) {
        size = Math.max(size, physicalToLogical(s, physicalSizes[s] - 1, physicalSizes.length) + 1);
      }
    }
    return size;
  }
}
