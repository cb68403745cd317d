package org.flowfs.client.api;

import java.util.Set;

/**
 * How a file is opened (MPI's {@code amode}). Exactly one of {@link #READ_ONLY}, {@link
 * #WRITE_ONLY} and {@link #READ_WRITE}; {@link #READ_ONLY} goes with neither {@link #CREATE} nor
 * {@link #EXCLUSIVE}.
 */
public enum AccessMode {
  /** Create the file if it does not exist. */
  CREATE,
  /** With {@link #CREATE}: fail with {@code EEXIST} if the file exists. */
  EXCLUSIVE,
  /** Reads only; writes fail with {@code EBADF}. */
  READ_ONLY,
  /** Writes only; reads fail with {@code EBADF}. */
  WRITE_ONLY,
  /** Reads and writes. */
  READ_WRITE,
  /** Delete the file when it is closed (by the last member, for a file opened by a group). */
  DELETE_ON_CLOSE,
  /**
   * The individual file pointer starts at the end of the file, and a new view starts it at the
   * end of the file in that view (MPI sets it to 0 on a new view; here append stays append).
   */
  APPEND;

  /** Checks a set of modes; returns it. */
  static Set<AccessMode> check(Set<AccessMode> m) {
    int rw = (m.contains(READ_ONLY) ? 1 : 0) + (m.contains(WRITE_ONLY) ? 1 : 0) + (m.contains(READ_WRITE) ? 1 : 0);
    if (rw != 1) {
      throw new IllegalArgumentException("exactly one of READ_ONLY, WRITE_ONLY, READ_WRITE: " + m);
    }
    if (m.contains(READ_ONLY) && (m.contains(CREATE) || m.contains(EXCLUSIVE))) {
      throw new IllegalArgumentException("READ_ONLY with CREATE or EXCLUSIVE: " + m);
    }
    return m;
  }

  /** The POSIX open flags that correspond (for the client's bookkeeping). */
  static int posixFlags(Set<AccessMode> m) {
    int f = m.contains(READ_WRITE) ? 2 : m.contains(WRITE_ONLY) ? 1 : 0;
    if (m.contains(CREATE)) {
      f |= 0100;
    }
    if (m.contains(EXCLUSIVE)) {
      f |= 0200;
    }
    if (m.contains(APPEND)) {
      f |= 02000;
    }
    return f;
  }
}
