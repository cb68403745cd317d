package org.flowfs.common;

import java.util.List;

/**
 * Where a regular file's bytes live: its <b>head</b>, the first {@code headBytes} bytes, with its
 * metadata on the metadata server (a small file is all head: its create, write, close and read
 * need no I/O server), and everything from {@code headBytes} on in its datafiles, by its
 * distribution, datafile {@code i} being server number {@code i} of the distribution. Offsets keep
 * their meaning across the boundary: logical byte {@code x >= headBytes} is where the distribution
 * puts {@code x}, so the datafiles simply hold nothing below it. Fixed when the file is created.
 */
public record Layout(DistSpec dist, List<Handle> datafiles, long headBytes) {
  public static final int MAX_DATAFILES = 1024;
  /** The largest head a layout may have. */
  public static final long MAX_HEAD = 1 << 20;

  public Layout {
    datafiles = List.copyOf(datafiles);
    if (datafiles.isEmpty() || datafiles.size() > MAX_DATAFILES) {
      throw new IllegalArgumentException("a layout has 1.." + MAX_DATAFILES + " datafiles");
    }
    if (headBytes < 0 || headBytes > MAX_HEAD) {
      throw new IllegalArgumentException("head of " + headBytes + " bytes, at most " + MAX_HEAD);
    }
  }

  /** A layout with no head: every byte in the datafiles. */
  public Layout(DistSpec dist, List<Handle> datafiles) {
    this(dist, datafiles, 0);
  }

  public int serverCount() {
    return datafiles.size();
  }
}
