package org.flowfs.meta;

import org.flowfs.common.Attr;
import org.flowfs.common.FileType;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;

/**
 * The working copy of one stored object while an operation reads or changes it: attributes,
 * layout (regular files), target (symlinks) and parent (directories, for the subtree check of
 * rename and for "..").
 *
 * <p>Not thread safe: an operation loads it, changes it and stores it back through
 * {@link InodeCodec}; nothing keeps it afterwards.
 */
final class Inode {
  final long handle;
  final FileType type;
  int mode;
  int uid;
  int gid;
  int nlink;
  long size;
  long atimeNs;
  long mtimeNs;
  long ctimeNs;
  int rdev;
  /** Regular files only; may be null (datafiles created lazily). */
  Layout layout;
  /** Symlinks only. */
  String target;
  /** Directories only: the handle of the directory holding this one (the root's is its own). */
  long parent;
  /** The verifier of the create that made it (0: none), see {@code CreateReq#verifier}. */
  long verifier;

  Inode(long handle, FileType type) {
    this.handle = handle;
    this.type = type;
  }

  boolean isDir() {
    return type == FileType.DIRECTORY;
  }

  /** Sets all three times. */
  void stampAll(long nowNs) {
    atimeNs = nowNs;
    mtimeNs = nowNs;
    ctimeNs = nowNs;
  }

  /**
   * A directory's contents changed: mtime and ctime become {@code nowNs}; the ctime one nanosecond
   * past the one it had when that is not earlier (two changes stamped with the same clock reading,
   * or a clock set back). Every change of a directory's entries leaves it a ctime of its own, so a
   * client that saw the ctime before its change knows whether another change came between.
   */
  void touchContents(long nowNs) {
    mtimeNs = nowNs;
    ctimeNs = Math.max(nowNs, ctimeNs + 1);
  }

  Attr toAttr() {
    return new Attr(new Handle(handle), type, mode, uid, gid, nlink, size, atimeNs, mtimeNs, ctimeNs, rdev, layout);
  }
}
