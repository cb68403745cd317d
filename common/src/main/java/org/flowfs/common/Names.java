package org.flowfs.common;

import java.nio.charset.StandardCharsets;

/** Rules for directory entry names and symlink targets. */
public final class Names {
  public static final int NAME_MAX = 255;
  public static final int PATH_MAX = 4096;

  private Names() {}

  /**
   * Checks a directory entry name: 1..255 bytes of UTF-8, no '/' or NUL.
   *
   * @throws FsException ENAMETOOLONG or EINVAL
   */
  public static String check(String name) {
    if (name == null || name.isEmpty()) {
      throw new FsException(Errno.EINVAL, "empty name");
    }
    // a UTF-16 unit becomes at most 3 bytes of UTF-8: short names need no encoding to check
    if (name.length() > NAME_MAX / 3 && name.getBytes(StandardCharsets.UTF_8).length > NAME_MAX) {
      throw new FsException(Errno.ENAMETOOLONG, "name of more than " + NAME_MAX + " bytes");
    }
    if (name.indexOf('/') >= 0 || name.indexOf('\0') >= 0) {
      throw new FsException(Errno.EINVAL, "name contains '/' or NUL");
    }
    return name;
  }

  /** Like {@link #check} and also refuses "." and "..", which cannot be created or removed. */
  public static String checkNew(String name) {
    check(name);
    if (name.equals(".") || name.equals("..")) {
      throw new FsException(Errno.EINVAL, "'" + name + "' is reserved");
    }
    return name;
  }

  public static String checkTarget(String target) {
    if (target == null || target.isEmpty()) {
      throw new FsException(Errno.ENOENT, "empty symlink target");
    }
    if (target.getBytes(StandardCharsets.UTF_8).length >= PATH_MAX) {
      throw new FsException(Errno.ENAMETOOLONG, "symlink target of " + PATH_MAX + " bytes or more");
    }
    if (target.indexOf('\0') >= 0) {
      throw new FsException(Errno.EINVAL, "symlink target contains NUL");
    }
    return target;
  }
}
