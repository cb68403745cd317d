package org.flowfs.common.dist;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.flowfs.common.DistSpec;

/**
 * Strips of varying sizes cycling over the servers (OrangeFS's {@code varstrip_dist}). The
 * parameters are a list of strip sizes {@code L[0..k-1]}; the file is cut into stripes of {@code
 * L[0] + ... + L[k-1]} bytes, and within every stripe strip {@code j} ({@code L[j]} bytes) lives on
 * server {@code j mod serverCount}. A server keeps its strips of every stripe back to back in its
 * datafile, stripe after stripe. With {@code k == serverCount} every server has one strip per
 * stripe, sized to its share (the usual use: unequal servers); with fewer strips than servers the
 * last servers get nothing; with more, servers hold several strips per stripe.
 *
 * <p>Immutable and thread safe: a value of its strip sizes ({@link #equals} compares them). It
 * keeps a table for the server count last asked about, rebuilt when another count comes (a file
 * always uses one), published through a volatile field.
 */
public final class VarStrip implements Distribution {
  public static final String NAME = "varstrip_dist";

  private final long[] strips;
  /** {@code starts[j]}: offset of strip {@code j} in a stripe; {@code starts[k]} is the stripe. */
  private final long[] starts;

  private final long stripe;
  private volatile Servers servers;

  /** Placement of the strips for one server count. */
  private static final class Servers {
    final int n;
    /** Per server: bytes it holds in each stripe. */
    final long[] perStripe;
    /** Per strip: its offset within its server's share of a stripe. */
    final long[] phys;

    Servers(int n, long[] strips) {
      this.n = n;
      this.perStripe = new long[n];
      this.phys = new long[strips.length];
      for (int j = 0; j < strips.length; j++) {
        phys[j] = perStripe[j % n];
        perStripe[j % n] += strips[j];
      }
    }
  }

  /** Strips of the given sizes, each at least 1 byte, at most {@link DistSpec#MAX_PARAMS}. */
  public VarStrip(List<Long> stripSizes) {
    if (stripSizes.isEmpty() || stripSizes.size() > DistSpec.MAX_PARAMS) {
      throw new IllegalArgumentException(
          "varstrip needs 1.." + DistSpec.MAX_PARAMS + " strip sizes, got " + stripSizes.size());
    }
    strips = new long[stripSizes.size()];
    starts = new long[strips.length + 1];
    long s = 0;
    for (int j = 0; j < strips.length; j++) {
      long l = stripSizes.get(j);
      if (l <= 0) {
        throw new IllegalArgumentException("strip size must be positive: " + l);
      }
      strips[j] = l;
      starts[j] = s;
      s = Math.addExact(s, l);
    }
    starts[strips.length] = s;
    stripe = s;
  }

  public VarStrip(long... stripSizes) {
    this(box(stripSizes));
  }

  private static List<Long> box(long[] a) {
    List<Long> l = new ArrayList<>(a.length);
    for (long v : a) {
      l.add(v);
    }
    return l;
  }

  /** The strip sizes. */
  public List<Long> strips() {
    return List.copyOf(box(strips));
  }

  private Servers servers(int n) {
    Servers t = servers;
    if (t == null || t.n != n) {
      if (n < 1) {
        throw new IllegalArgumentException("server count must be positive: " + n);
      }
      t = new Servers(n, strips);
      servers = t;
    }
    return t;
  }

  /** The strip holding offset {@code r} of a stripe, {@code 0 <= r < stripe}. */
  private int stripAt(long r) {
    int lo = 0;
    int hi = strips.length - 1;
    while (lo < hi) {
      int mid = (lo + hi + 1) >>> 1;
      if (starts[mid] <= r) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public DistSpec spec() {
    return new DistSpec(NAME, strips());
  }

  @Override
  public int serverOf(long logical, int serverCount) {
    return stripAt(logical % stripe) % serverCount;
  }

  @Override
  public long logicalToPhysical(long logical, int serverCount) {
    Servers t = servers(serverCount);
    long r = logical % stripe;
    int j = stripAt(r);
    return (logical / stripe) * t.perStripe[j % serverCount] + t.phys[j] + (r - starts[j]);
  }

  @Override
  public long physicalToLogical(int server, long physical, int serverCount) {
    Servers t = servers(serverCount);
    long share = server < serverCount ? t.perStripe[server] : 0;
    if (share == 0) {
      throw new IllegalArgumentException("server " + server + " holds no data in " + this);
    }
    long q = physical % share;
    // the server's strips are server, server+n, server+2n, ...; find the one holding q
    int lo = 0;
    int hi = (strips.length - 1 - server) / serverCount;
    while (lo < hi) {
      int mid = (lo + hi + 1) >>> 1;
      if (t.phys[server + mid * serverCount] <= q) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    int j = server + lo * serverCount;
    return (physical / share) * stripe + starts[j] + (q - t.phys[j]);
  }

  @Override
  public long contiguousLength(long logical, int serverCount) {
    int k = strips.length;
    if (serverCount == 1 || k == 1) {
      return Math.max(1, Long.MAX_VALUE - logical);
    }
    long r = logical % stripe;
    int j = stripAt(r);
    long rest = starts[j + 1] - r;
    if (j == k - 1 && (k - 1) % serverCount == 0) {
      // the last strip and the next stripe's first one share a server and touch in its datafile
      rest += strips[0];
    }
    return rest;
  }

  @Override
  public long nextMappedOffset(long logical, int server, int serverCount) {
    int k = strips.length;
    if (server >= k) {
      return Long.MAX_VALUE;
    }
    long r = logical % stripe;
    int j = stripAt(r);
    if (j % serverCount == server) {
      return logical;
    }
    long stripeStart = logical - r;
    int next = j + (server - j % serverCount + serverCount) % serverCount;
    if (next < k) {
      return stripeStart + starts[next];
    }
    if (stripeStart > Long.MAX_VALUE - stripe - starts[server]) {
      return Long.MAX_VALUE;
    }
    return stripeStart + stripe + starts[server];
  }

  @Override
  public long physicalSize(long logicalSize, int server, int serverCount) {
    int k = strips.length;
    if (logicalSize <= 0 || server >= k) {
      return 0;
    }
    Servers t = servers(serverCount);
    long last = logicalSize - 1;
    long r = last % stripe;
    int j = stripAt(r);
    long share = t.perStripe[server];
    long inStripe;
    if (j % serverCount == server) {
      inStripe = t.phys[j] + (r - starts[j]) + 1;
    } else {
      int next = j + (server - j % serverCount + serverCount) % serverCount;
      inStripe = next < k ? t.phys[next] : share;
    }
    return (last / stripe) * share + inStripe;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof VarStrip && Arrays.equals(strips, ((VarStrip) o).strips);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(strips);
  }

  @Override
  public String toString() {
    return "VarStrip" + Arrays.toString(strips);
  }
}
