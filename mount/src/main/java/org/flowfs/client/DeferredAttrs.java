package org.flowfs.client;

import org.flowfs.common.Attr;
import org.flowfs.common.Handle;
import org.flowfs.common.wire.MetaOp.SetattrReq;

/**
 * Changes of a new file's mode, owner and times that wait for the recording of its size (see
 * {@link FileState#defer}): a {@link SetattrReq} mask of MODE, UID, GID, ATIME, MTIME and
 * KILL_SUID, and the values of those it names. Later changes of the same attribute win.
 */
record DeferredAttrs(int mask, int mode, int uid, int gid, long atimeNs, long mtimeNs) {
  static final DeferredAttrs NONE = new DeferredAttrs(0, 0, 0, 0, 0, 0);

  /**
   * Whether a change of {@code mask} (setting {@code mode} when it has MODE) may be kept for
   * later: mode, owner and explicit times only, and no set-ID mode.
   */
  static boolean deferrable(int mask, int mode) {
    return (mask & ~SetattrReq.ATTRIBUTES) == 0
        && ((mask & SetattrReq.MODE) == 0 || (mode & (Attr.S_ISUID | Attr.S_ISGID)) == 0);
  }

  /** These changes as one change of {@code h}, sizes untouched. */
  SetattrReq change(Handle h) {
    return new SetattrReq(h, mask, mode, uid, gid, 0, atimeNs, mtimeNs);
  }

  /** These changes, then {@code m}'s (with its values). */
  DeferredAttrs and(int m, int newMode, int newUid, int newGid, long newAtime, long newMtime) {
    return new DeferredAttrs(mask | m,
        (m & SetattrReq.MODE) != 0 ? newMode : mode,
        (m & SetattrReq.UID) != 0 ? newUid : uid,
        (m & SetattrReq.GID) != 0 ? newGid : gid,
        (m & SetattrReq.ATIME) != 0 ? newAtime : atimeNs,
        (m & SetattrReq.MTIME) != 0 ? newMtime : mtimeNs);
  }

  /** These changes without those of {@code bits}. */
  DeferredAttrs without(int bits) {
    return new DeferredAttrs(mask & ~bits, mode, uid, gid, atimeNs, mtimeNs);
  }

  /** {@code a} as these changes will leave it. */
  Attr appliedTo(Attr a) {
    return new Attr(a.handle(), a.type(),
        (mask & SetattrReq.MODE) != 0 ? mode : a.mode(),
        (mask & SetattrReq.UID) != 0 ? uid : a.uid(),
        (mask & SetattrReq.GID) != 0 ? gid : a.gid(),
        a.nlink(), a.size(),
        (mask & SetattrReq.ATIME) != 0 ? atimeNs : a.atimeNs(),
        (mask & SetattrReq.MTIME) != 0 ? mtimeNs : a.mtimeNs(),
        a.ctimeNs(), a.rdev(), a.layout());
  }

  /**
   * The change that records {@code size} (SIZE_GROW) with these changes, {@code times} (a mask of
   * ATIME, MTIME and their _NOW bits, with their values; they win over these) and {@code
   * writesMtimeNs}, the mtime of the writes, unless a time set here or in {@code times} replaces it.
   */
  SetattrReq record(Handle h, long size, boolean killSetid, int times, long atime, long mtime, long writesMtimeNs) {
    int m = SetattrReq.SIZE_GROW | (killSetid ? SetattrReq.KILL_SUID : 0) | (mask & ~(SetattrReq.ATIME | SetattrReq.MTIME)) | times;
    long at = atime;
    long mt = mtime;
    if ((times & (SetattrReq.ATIME | SetattrReq.ATIME_NOW)) == 0 && (mask & SetattrReq.ATIME) != 0) {
      m |= SetattrReq.ATIME;
      at = atimeNs;
    }
    if ((times & (SetattrReq.MTIME | SetattrReq.MTIME_NOW)) == 0) {
      m |= SetattrReq.MTIME;
      mt = (mask & SetattrReq.MTIME) != 0 ? mtimeNs : writesMtimeNs;
    }
    return new SetattrReq(h, m, mode, uid, gid, size, at, mt);
  }
}
