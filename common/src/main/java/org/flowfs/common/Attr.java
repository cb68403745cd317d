package org.flowfs.common;

/**
 * The attributes of one object, as the metadata server keeps them.
 *
 * @param mode permission bits only ({@code 07777}); the type is {@link #type()}
 * @param size logical size: for a regular file the size last recorded by a writer's flush, close
 *     or truncate; for a symlink the target length; for a directory a nominal block
 * @param atimeNs times in nanoseconds since the epoch
 * @param layout the datafiles of a regular file; null for other types
 */
public record Attr(
    Handle handle,
    FileType type,
    int mode,
    int uid,
    int gid,
    int nlink,
    long size,
    long atimeNs,
    long mtimeNs,
    long ctimeNs,
    int rdev,
    Layout layout) {

  public static final int PERM_MASK = 07777;
  /** The nominal size of a directory. */
  public static final long DIR_SIZE = 4096;
  public static final int S_ISUID = 04000;
  public static final int S_ISGID = 02000;
  public static final int S_ISVTX = 01000;
  private static final int S_IXGRP = 0010;

  public Attr {
    if ((mode & ~PERM_MASK) != 0) {
      throw new IllegalArgumentException("mode has bits outside 07777: " + Integer.toOctalString(mode));
    }
    if (size < 0 || nlink < 0) {
      throw new IllegalArgumentException("negative size or nlink");
    }
  }

  /** {@code st_mode}: type bits and permission bits. */
  public int stMode() {
    return type.bits() | mode;
  }

  public boolean isDir() {
    return type == FileType.DIRECTORY;
  }

  public boolean isRegular() {
    return type == FileType.REGULAR;
  }

  /**
   * {@code mode} as a write, truncate or chown by someone without the privilege to keep them
   * leaves it: set-user-ID cleared, and set-group-ID when group execute is set (without it,
   * set-group-ID means mandatory locking and stays).
   */
  public static int withoutSetid(int mode) {
    int killed = mode & ~S_ISUID;
    return (mode & S_IXGRP) != 0 ? killed & ~S_ISGID : killed;
  }

  public Attr withMode(int newMode) {
    return new Attr(handle, type, newMode, uid, gid, nlink, size, atimeNs, mtimeNs, ctimeNs, rdev, layout);
  }

  public Attr withSize(long newSize) {
    return new Attr(handle, type, mode, uid, gid, nlink, newSize, atimeNs, mtimeNs, ctimeNs, rdev, layout);
  }

  /**
   * This directory as a change of its entries left it: mtime and ctime {@code nowNs}, and {@code
   * nlinkDelta} more links (a subdirectory's "..").
   */
  public Attr withEntriesChanged(long nowNs, int nlinkDelta) {
    return new Attr(handle, type, mode, uid, gid, nlink + nlinkDelta, size, atimeNs, nowNs, nowNs, rdev, layout);
  }

  public Attr withSizeAndTimes(long newSize, long mtime, long ctime) {
    return new Attr(handle, type, mode, uid, gid, nlink, newSize, atimeNs, mtime, ctime, rdev, layout);
  }
}
