package org.flowfs.fuse;

import jnr.ffi.Pointer;

/**
 * The kernel's word that a write or truncate must clear the file's set-user-ID and set-group-ID
 * bits. With {@code FUSE_HANDLE_KILLPRIV_V2} (see {@link InitChannel}) the kernel no longer clears
 * them itself: it decides, as for any file system (the caller lacks CAP_FSETID; set-group-ID only
 * with group execute or outside the file's group), and says so in the request, a flag libfuse 2's
 * high-level API does not pass on. The loop reads it from the request before libfuse processes it
 * on the same thread, and the FUSE operation that acts on it {@link #take() takes} it:
 *
 * <ul>
 *   <li>a write with {@code FUSE_WRITE_KILL_SUIDGID}: the write clears the bits;
 *   <li>a truncate (a setattr of the size) with {@code FATTR_KILL_SUIDGID}: the truncate does;
 *   <li>a setattr that changes nothing: the kernel sends one only when all it had to do was clear
 *       the bits (a chown to -1 -1, which Linux makes clear them; an unprivileged writer's first
 *       write to a set-ID file, before the write itself), and libfuse answers it with a getattr,
 *       which clears them first. (The one other such setattr, a privileged write to a file with
 *       a {@code security.capability} attribute, clears them too, where Linux would keep them.)
 *       A chown that changes owner or group clears them on its own, as on Linux, and takes the
 *       kernel's word (which comes with every chown of a file): the getattr libfuse answers it
 *       with then costs no second setattr.
 * </ul>
 *
 * <p>The kernel keeps the mode it cached before the write until its attribute timeout, and would
 * show (and exec with) bits that are gone: after such a write the loop tells it to drop the
 * inode's cached attributes ({@link KernelAttrs}). A truncate's
 * answer carries the new mode, so it needs none.
 */
final class SetidKill {
  /** fuse_setattr_in.valid, its first field; FATTR_FH (names the open file, changes nothing); FATTR_KILL_SUIDGID. */
  private static final int SETATTR_VALID = FuseWire.IN_HEADER;
  private static final int FATTR_FH = 1 << 6;
  private static final int FATTR_KILL_SUIDGID = 1 << 11;
  /** fuse_write_in: fh, offset, size, then write_flags; FUSE_WRITE_KILL_SUIDGID. */
  private static final int WRITE_FLAGS = FuseWire.IN_HEADER + 20;
  private static final int FUSE_WRITE_KILL_SUIDGID = 1 << 2;

  private static final ThreadLocal<Boolean> REQUESTED = ThreadLocal.withInitial(() -> Boolean.FALSE);

  private final KernelAttrs attrs;

  SetidKill(KernelAttrs attrs) {
    this.attrs = attrs;
  }

  /**
   * Whether the request the calling FUSE thread is processing asks to clear set-ID bits; the
   * first operation to ask acts on it, so it answers true once per request.
   */
  static boolean take() {
    if (!REQUESTED.get()) {
      return false;
    }
    REQUESTED.set(false);
    return true;
  }

  /**
   * Notes what the request at {@code mem} asks, for the operations about to run on this thread
   * (what the last request asked, taken or not, goes). Returns whether it is a write that clears
   * set-ID bits: then call {@link #written} once it is answered.
   */
  static boolean before(Pointer mem) {
    int opcode = FuseWire.opcode(mem);
    boolean write = opcode == FuseWire.FUSE_WRITE && (mem.getInt(WRITE_FLAGS) & FUSE_WRITE_KILL_SUIDGID) != 0;
    boolean kill = write || opcode == FuseWire.FUSE_SETATTR && ((mem.getInt(SETATTR_VALID) & FATTR_KILL_SUIDGID) != 0
        || (mem.getInt(SETATTR_VALID) & ~FATTR_FH) == 0);
    if (kill || REQUESTED.get()) {
      REQUESTED.set(kill);
    }
    return write;
  }

  /** After the clearing write at {@code mem} was answered: drops the kernel's cached mode of its inode. */
  void written(Pointer mem) {
    attrs.drop(mem.getLong(FuseWire.IN_NODEID));
  }
}
