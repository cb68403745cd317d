package org.flowfs.client;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.flowfs.common.Attr;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.PosixAcl;

/**
 * The permission check the kernel makes before it opens an existing file ({@code
 * default_permissions}: the owner's, the group's or the others' bits, or the file's access ACL,
 * root passing), for the one
 * open it leaves to FlowFS: a create without {@code O_EXCL} of a name that another client made
 * after this one found nothing there. The caller's supplementary groups are read from {@code
 * /proc/PID/status}, as FUSE reports only the process's user, group and pid.
 */
final class OpenAccess {
  private static final int O_ACCMODE = 03;
  private static final int O_WRONLY = 01;
  private static final int O_RDWR = 02;
  private static final int O_TRUNC = 01000;

  private OpenAccess() {}

  /**
   * @param acl the file's access ACL, null for none
   * @throws FsException EACCES unless {@code c} may open {@code a} with {@code flags}
   */
  static void check(Attr a, PosixAcl acl, Caller c, int flags) {
    int acc = flags & O_ACCMODE;
    boolean read = acc != O_WRONLY;
    boolean write = acc == O_WRONLY || acc == O_RDWR || (flags & O_TRUNC) != 0;
    if (c.uid() == 0) {
      return; // CAP_DAC_OVERRIDE: reading and writing a regular file pass
    }
    int want = (read ? 4 : 0) | (write ? 2 : 0);
    boolean ok;
    if (acl != null) {
      ok = acl.permits(want, c.uid(), g -> inGroup(c, g), a.uid(), a.gid());
    } else {
      int bits = a.uid() == c.uid() ? (a.mode() >> 6) & 7 : inGroup(c, a.gid()) ? (a.mode() >> 3) & 7 : a.mode() & 7;
      ok = (bits & want) == want;
    }
    if (!ok) {
      throw new FsException(Errno.EACCES, "open of an existing file");
    }
  }

  /** Whether {@code c}'s process is in group {@code gid}: its own group or a supplementary one. */
  static boolean inGroup(Caller c, int gid) {
    if (c.gid() == gid) {
      return true;
    }
    if (c.pid() <= 0) {
      return false;
    }
    try {
      for (String line : Files.readAllLines(Path.of("/proc", Integer.toString(c.pid()), "status"))) {
        if (line.startsWith("Groups:")) {
          for (String g : line.substring(7).trim().split("\\s+")) {
            if (!g.isEmpty() && Integer.parseInt(g) == gid) {
              return true;
            }
          }
          return false;
        }
      }
    } catch (IOException | NumberFormatException e) {
      // the process is gone, or the file unreadable: not known to be in the group
    }
    return false;
  }
}
