package org.flowfs.common.dist;

import org.flowfs.common.DistSpec;

/**
 * Round-robin strips of {@code stripSize} bytes over the file's datafiles: strip {@code k} lives on
 * server {@code k mod n} at physical strip {@code k / n}. The default distribution.
 */
public record SimpleStripe(long stripSize) implements Distribution {
  public static final String NAME = "simple_stripe";
  public static final long DEFAULT_STRIP_SIZE = 64 * 1024;

  public SimpleStripe {
    if (stripSize <= 0) {
      throw new IllegalArgumentException("strip size must be positive: " + stripSize);
    }
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public DistSpec spec() {
    return DistSpec.of(NAME, stripSize);
  }

  @Override
  public int serverOf(long logical, int serverCount) {
    return (int) ((logical / stripSize) % serverCount);
  }

  @Override
  public long logicalToPhysical(long logical, int serverCount) {
    long strip = logical / stripSize;
    return (strip / serverCount) * stripSize + logical % stripSize;
  }

  @Override
  public long physicalToLogical(int server, long physical, int serverCount) {
    long pstrip = physical / stripSize;
    if (pstrip > (Long.MAX_VALUE - server) / serverCount) {
      return Long.MAX_VALUE; // its strip number alone is past every strip
    }
    return saturated(pstrip * serverCount + server, physical % stripSize);
  }

  @Override
  public long contiguousLength(long logical, int serverCount) {
    if (serverCount == 1) {
      return Long.MAX_VALUE - logical;
    }
    return stripSize - logical % stripSize;
  }

  @Override
  public long nextMappedOffset(long logical, int server, int serverCount) {
    long strip = logical / stripSize;
    int owner = (int) (strip % serverCount);
    if (owner == server) {
      return logical;
    }
    long delta = ((long) server - owner + serverCount) % serverCount;
    return saturated(strip + delta, 0);
  }

  @Override
  public long physicalSize(long logicalSize, int server, int serverCount) {
    if (logicalSize <= 0) {
      return 0;
    }
    long last = logicalSize - 1;
    long strip = last / stripSize;
    int owner = (int) (strip % serverCount);
    long round = strip / serverCount;
    if (server == owner) {
      return round * stripSize + last % stripSize + 1;
    }
    // servers before the owner in this round hold a full strip of it; those after, none
    return server < owner ? saturated(round + 1, 0) : round * stripSize;
  }

  /**
   * {@code strip * stripSize + within}, or {@link Long#MAX_VALUE} where that is past every
   * offset: strips as large as the offsets themselves are a valid choice, and the strips after
   * them do not exist. {@code strip} and {@code within} are not negative.
   */
  private long saturated(long strip, long within) {
    long hi = Math.multiplyHigh(strip, stripSize);
    long lo = strip * stripSize;
    if (hi != 0 || lo < 0 || lo > Long.MAX_VALUE - within) {
      return Long.MAX_VALUE;
    }
    return lo + within;
  }
}
