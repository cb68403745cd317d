package org.flowfs.common;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * POSIX record locks ({@code fcntl(2)}'s {@code F_SETLK}) of one owner on one file, as the
 * kernel's {@code posix_lock_file} keeps them: byte ranges, each read (shared) or write
 * (exclusive). A new lock replaces what the owner held in its range (converting, splitting a
 * larger range, merging with neighbours of the same type); an unlock punches its range out.
 * The metadata server keeps every owner's this way, and a client the ones it holds (to claim them
 * again after a server restart). Immutable lists in, new lists out.
 */
public final class RecordLocks {
  public static final int READ = 1;
  public static final int WRITE = 2;
  public static final int UNLOCK = 3;
  /** The end of a range that runs to the end of the file, however long it grows. */
  public static final long EOF = Long.MAX_VALUE;

  private RecordLocks() {}

  /** Bytes {@code [start, end]} (both inclusive) locked {@link #READ} or {@link #WRITE}. */
  public record Range(long start, long end, int type) {
    public Range {
      if (start < 0 || end < start) {
        throw new IllegalArgumentException("lock range " + start + ".." + end);
      }
      if (type != READ && type != WRITE) {
        throw new IllegalArgumentException("lock type " + type);
      }
    }

    /** Whether this range shares a byte with {@code [s, e]}. */
    public boolean overlaps(long s, long e) {
      return start <= e && s <= end;
    }

    /** Whether another owner's lock of {@code type} on {@code [s, e]} must wait for this one. */
    public boolean conflicts(int type, long s, long e) {
      return overlaps(s, e) && (type == WRITE || this.type == WRITE);
    }
  }

  /** Checks a request's type and range: EINVAL unless a type and {@code 0 <= start <= end}. */
  public static void check(int type, long start, long end) {
    if (type < READ || type > UNLOCK || start < 0 || end < start) {
      throw new FsException(Errno.EINVAL, "lock type " + type + " on bytes " + start + ".." + end);
    }
  }

  /**
   * What an owner holding {@code held} holds after locking {@code [start, end]} as {@code type}
   * ({@link #UNLOCK}: releasing it), sorted by start.
   */
  public static List<Range> apply(List<Range> held, int type, long start, long end) {
    check(type, start, end);
    List<Range> out = new ArrayList<>(held.size() + 2);
    for (Range r : held) {
      if (!r.overlaps(start, end)) {
        out.add(r);
        continue;
      }
      if (r.start < start) {
        out.add(new Range(r.start, start - 1, r.type));
      }
      if (r.end > end) {
        out.add(new Range(end + 1, r.end, r.type));
      }
    }
    if (type != UNLOCK) {
      out.add(new Range(start, end, type));
    }
    out.sort(Comparator.comparingLong(Range::start));
    List<Range> merged = new ArrayList<>(out.size());
    for (Range r : out) {
      Range last = merged.isEmpty() ? null : merged.get(merged.size() - 1);
      if (last != null && last.type == r.type && last.end != EOF && last.end + 1 >= r.start) {
        merged.set(merged.size() - 1, new Range(last.start, Math.max(last.end, r.end), r.type));
      } else {
        merged.add(r);
      }
    }
    return List.copyOf(merged);
  }
}
