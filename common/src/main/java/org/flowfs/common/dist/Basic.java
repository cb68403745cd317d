package org.flowfs.common.dist;

import org.flowfs.common.DistSpec;

/**
 * Everything on server 0 (OrangeFS's {@code basic_dist}): the datafile of server 0 holds the file
 * byte for byte, the other datafiles stay empty. No parameters.
 *
 * <p>An immutable record; thread safe.
 */
public record Basic() implements Distribution {
  public static final String NAME = "basic_dist";

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public DistSpec spec() {
    return DistSpec.of(NAME);
  }

  @Override
  public int serverOf(long logical, int serverCount) {
    return 0;
  }

  @Override
  public long logicalToPhysical(long logical, int serverCount) {
    return logical;
  }

  @Override
  public long physicalToLogical(int server, long physical, int serverCount) {
    if (server != 0) {
      throw new IllegalArgumentException("server " + server + " holds no data in " + NAME);
    }
    return physical;
  }

  @Override
  public long contiguousLength(long logical, int serverCount) {
    return Math.max(1, Long.MAX_VALUE - logical);
  }

  @Override
  public long nextMappedOffset(long logical, int server, int serverCount) {
    return server == 0 ? logical : Long.MAX_VALUE;
  }

  @Override
  public long physicalSize(long logicalSize, int server, int serverCount) {
    return server == 0 ? Math.max(0, logicalSize) : 0;
  }
}
