package org.flowfs.client;

import java.util.ArrayList;
import java.util.List;
import org.flowfs.common.Layout;
import org.flowfs.common.dist.Distribution;
import org.flowfs.common.dist.Distributions;

/**
 * Splits a logical byte range of a file over its datafiles with the file's distribution, merging
 * pieces that are contiguous in a datafile into one {@link Run}: with {@code simple_stripe} a
 * contiguous logical range is one run per server however many strips it crosses.
 */
final class StripeMap {
  /** A piece of the caller's buffer, at {@code bufferOffset}, and where it goes in a datafile. */
  record Piece(int bufferOffset, int length) {}

  /** Bytes contiguous in one datafile: starting at {@code physical}, made of these pieces. */
  record Run(int server, long physical, long length, List<Piece> pieces) {}

  private StripeMap() {}

  /** The runs of {@code [offset, offset + length)}, at most {@code maxRun} bytes each. */
  static List<Run> runs(Layout layout, long offset, int length, long maxRun) {
    Distribution dist = Distributions.of(layout.dist());
    int n = layout.serverCount();
    List<Run> done = new ArrayList<>();
    Run[] open = new Run[n];
    long pos = offset;
    long end = offset + length;
    while (pos < end) {
      int s = dist.serverOf(pos, n);
      long run = Math.min(Math.min(dist.contiguousLength(pos, n), end - pos), maxRun);
      long phys = dist.logicalToPhysical(pos, n);
      Run r = open[s];
      Piece p = new Piece((int) (pos - offset), (int) run);
      if (r != null && r.physical() + r.length() == phys && r.length() + run <= maxRun) {
        r.pieces().add(p);
        open[s] = new Run(s, r.physical(), r.length() + run, r.pieces());
      } else {
        if (r != null) {
          done.add(r);
        }
        List<Piece> ps = new ArrayList<>();
        ps.add(p);
        open[s] = new Run(s, phys, run, ps);
      }
      pos += run;
    }
    for (Run r : open) {
      if (r != null) {
        done.add(r);
      }
    }
    return done;
  }
}
