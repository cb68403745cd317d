package org.flowfs.common.dist;

import org.flowfs.common.DistSpec;

/**
 * A file's distribution with its head taken out: the first {@code head} bytes, which the metadata
 * server keeps ({@code Layout#headBytes}), belong to one extra server, numbered after the
 * datafiles ({@code serverCount - 1}), and every other byte stays where {@code inner} puts it,
 * at the same physical offset. Flows of a typed transfer process with it on both ends, so the
 * datafiles never see the head's bytes, and bytes of the extra server never move in a flow (no
 * datafile is asked for them).
 *
 * <p>Never stored: a file's metadata names {@code inner}; a flow request carries the head's size
 * beside it. An immutable record; thread safe if {@code inner} is.
 */
public record PastHead(Distribution inner, long head) implements Distribution {
  public static final String NAME = "past_head";

  public PastHead {
    if (inner == null || head <= 0) {
      throw new IllegalArgumentException("a head of " + head + " bytes over " + inner);
    }
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public DistSpec spec() {
    return DistSpec.of(NAME, head);
  }

  @Override
  public int serverOf(long logical, int serverCount) {
    return logical < head ? serverCount - 1 : inner.serverOf(logical, serverCount - 1);
  }

  @Override
  public long logicalToPhysical(long logical, int serverCount) {
    return logical < head ? logical : inner.logicalToPhysical(logical, serverCount - 1);
  }

  @Override
  public long physicalToLogical(int server, long physical, int serverCount) {
    return server == serverCount - 1 ? physical : inner.physicalToLogical(server, physical, serverCount - 1);
  }

  @Override
  public long contiguousLength(long logical, int serverCount) {
    return logical < head ? head - logical : inner.contiguousLength(logical, serverCount - 1);
  }

  @Override
  public long nextMappedOffset(long logical, int server, int serverCount) {
    if (server == serverCount - 1) {
      return logical < head ? logical : Long.MAX_VALUE;
    }
    return inner.nextMappedOffset(Math.max(logical, head), server, serverCount - 1);
  }

  @Override
  public long physicalSize(long logicalSize, int server, int serverCount) {
    if (server == serverCount - 1) {
      return Math.min(logicalSize, head);
    }
    long p = inner.physicalSize(logicalSize, server, serverCount - 1);
    // the datafile ends where inner says if its last byte below the size lies past the head
    return p > 0 && inner.physicalToLogical(server, p - 1, serverCount - 1) >= head ? p : 0;
  }
}
