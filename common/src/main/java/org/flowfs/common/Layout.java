package org.flowfs.common;

import java.util.List;

/**
 * Where a regular file's bytes live: its distribution and its datafile handles, datafile
 * {@code i} being server number {@code i} of the distribution. Fixed when the file is created.
 */
public record Layout(DistSpec dist, List<Handle> datafiles) {
  public static final int MAX_DATAFILES = 1024;

  public Layout {
    datafiles = List.copyOf(datafiles);
    if (datafiles.isEmpty() || datafiles.size() > MAX_DATAFILES) {
      throw new IllegalArgumentException("a layout has 1.." + MAX_DATAFILES + " datafiles");
    }
  }

  public int serverCount() {
    return datafiles.size();
  }
}
