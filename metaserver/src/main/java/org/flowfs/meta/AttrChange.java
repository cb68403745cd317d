package org.flowfs.meta;

import static org.flowfs.common.wire.MetaOp.SetattrReq.ATIME;
import static org.flowfs.common.wire.MetaOp.SetattrReq.ATIME_NOW;
import static org.flowfs.common.wire.MetaOp.SetattrReq.GID;
import static org.flowfs.common.wire.MetaOp.SetattrReq.KILL_SUID;
import static org.flowfs.common.wire.MetaOp.SetattrReq.MODE;
import static org.flowfs.common.wire.MetaOp.SetattrReq.MTIME;
import static org.flowfs.common.wire.MetaOp.SetattrReq.MTIME_NOW;
import static org.flowfs.common.wire.MetaOp.SetattrReq.SIZE;
import static org.flowfs.common.wire.MetaOp.SetattrReq.SIZE_GROW;
import static org.flowfs.common.wire.MetaOp.SetattrReq.UID;

import org.flowfs.common.Attr;
import org.flowfs.common.Errno;
import org.flowfs.common.FileType;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.meta.MetadataStore.SetAttr;

/**
 * The rules of a {@link SetAttr}, as its Javadoc lists them: which masks and
 * values are valid, for which objects, and which times each bit moves.
 *
 * <ul>
 *   <li>MODE, UID, GID: set; ctime = now.
 *   <li>SIZE: regular files only (EISDIR for a directory, EINVAL for others); mtime = ctime =
 *       now.
 *   <li>SIZE_GROW: size = max(size, value); with MTIME (and without MTIME_NOW) mtime = the value;
 *       ctime = now only if the size or the mtime changed (a flush that changed nothing leaves
 *       the times alone).
 *   <li>ATIME/MTIME: set to the value; ATIME_NOW/MTIME_NOW: set to now (they win over the
 *       value bits); ctime = now.
 *   <li>KILL_SUID: clear S_ISUID, and S_ISGID if group execute is set (without it S_ISGID means
 *       mandatory locking); ctime = now if the mode changed. Not on a directory, where the bits
 *       mean inheritance, as Linux leaves them on a chown.
 * </ul>
 *
 * <p>Bits apply in the order above, so SIZE's mtime gives way to an explicit MTIME in the same
 * change, and KILL_SUID acts on the mode MODE set. Thread safe: stateless.
 */
final class AttrChange {
  private static final int ALL_BITS = MODE | UID | GID | SIZE | SIZE_GROW | ATIME | MTIME | ATIME_NOW
      | MTIME_NOW | KILL_SUID;

  private AttrChange() {}

  /** What can be checked without the object. @throws FsException EINVAL */
  static void check(SetAttr c) {
    int m = c.mask();
    if ((m & ~ALL_BITS) != 0) {
      throw new FsException(Errno.EINVAL, "setattr mask " + Integer.toHexString(m));
    }
    if (has(m, MODE) && (c.mode() & ~Attr.PERM_MASK) != 0) {
      throw new FsException(Errno.EINVAL, "mode " + Integer.toOctalString(c.mode()));
    }
    if (sizes(m) && c.size() < 0) {
      throw new FsException(Errno.EINVAL, "negative size");
    }
  }

  /** Whether the change fits the object. @throws FsException EISDIR, EINVAL */
  static void checkTarget(SetAttr c, Inode n) {
    if (sizes(c.mask()) && n.isDir()) {
      throw new FsException(Errno.EISDIR, new Handle(n.handle) + " is a directory");
    }
    if (sizes(c.mask()) && n.type != FileType.REGULAR) {
      throw new FsException(Errno.EINVAL, new Handle(n.handle) + " is no regular file");
    }
  }

  /** Applies a checked change to {@code n}. */
  static void apply(SetAttr c, Inode n, long nowNs) {
    int m = c.mask();
    boolean ctime = false;
    if (has(m, MODE)) {
      n.mode = c.mode();
      ctime = true;
    }
    if (has(m, UID)) {
      n.uid = c.uid();
      ctime = true;
    }
    if (has(m, GID)) {
      n.gid = c.gid();
      ctime = true;
    }
    if (has(m, SIZE)) {
      n.size = c.size();
      n.mtimeNs = nowNs;
      ctime = true;
    }
    if (has(m, SIZE_GROW)) {
      boolean changed = false;
      if (c.size() > n.size) {
        n.size = c.size();
        changed = true;
      }
      if (has(m, MTIME) && !has(m, MTIME_NOW) && n.mtimeNs != c.mtimeNs()) {
        n.mtimeNs = c.mtimeNs();
        changed = true;
      }
      ctime |= changed;
    }
    if (has(m, ATIME_NOW) || has(m, ATIME)) {
      n.atimeNs = has(m, ATIME_NOW) ? nowNs : c.atimeNs();
      ctime = true;
    }
    if (has(m, MTIME_NOW) || (has(m, MTIME) && !has(m, SIZE_GROW))) {
      n.mtimeNs = has(m, MTIME_NOW) ? nowNs : c.mtimeNs();
      ctime = true;
    }
    if (has(m, KILL_SUID) && !n.isDir()) {
      int killed = Attr.withoutSetid(n.mode);
      ctime |= killed != n.mode;
      n.mode = killed;
    }
    if (ctime) {
      n.ctimeNs = nowNs;
    }
  }

  private static boolean sizes(int mask) {
    return has(mask, SIZE) || has(mask, SIZE_GROW);
  }

  private static boolean has(int mask, int bit) {
    return (mask & bit) != 0;
  }
}
