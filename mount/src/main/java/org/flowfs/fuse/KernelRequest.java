package org.flowfs.fuse;

import jnr.ffi.Pointer;
import org.flowfs.common.Handle;

/**
 * The request the calling FUSE thread has libfuse process, as the mount's callbacks need to know
 * it: libfuse's high-level API hands them paths, not the kernel's node, so the loop notes the
 * request's opcode, node and caller before libfuse takes it ({@link #note}), on the thread that
 * runs the callbacks. One per FUSE thread; {@link KernelAttrs}, {@link PageStore}, {@link
 * LinkNodes}, {@link AbsentXattrs} and {@link StaleNodes} read it.
 */
final class KernelRequest {
  /** fuse_link_in: uint64 oldnodeid, the node of the file linked. */
  private static final int LINK_OLDNODEID = FuseWire.IN_HEADER;
  private static final ThreadLocal<KernelRequest> CURRENT = ThreadLocal.withInitial(KernelRequest::new);

  private int opcode;
  private long node;
  private int pid;
  private long linked;
  /** The file the request found, if a callback said so ({@link #found(Handle)}); null before. */
  private Handle found;

  private KernelRequest() {}

  /** The request the calling FUSE thread is processing (opcode 0 before its first). */
  static KernelRequest current() {
    return CURRENT.get();
  }

  /** Before the calling FUSE thread has libfuse process the request at {@code mem}. */
  static void note(Pointer mem) {
    KernelRequest r = CURRENT.get();
    r.opcode = FuseWire.opcode(mem);
    r.node = mem.getLong(FuseWire.IN_NODEID);
    r.pid = mem.getInt(FuseWire.IN_PID);
    r.linked = r.opcode == FuseWire.FUSE_LINK ? mem.getLong(LINK_OLDNODEID) : 0;
    r.found = null;
  }

  int opcode() {
    return opcode;
  }

  /** The node the request names (its header's nodeid). */
  long node() {
    return node;
  }

  /** The thread (its id) whose system call made the request. */
  int pid() {
    return pid;
  }

  /** The request's node if it is an {@code opcode}, else 0. */
  long nodeIf(int opcode) {
    return this.opcode == opcode ? node : 0;
  }

  /** For a LINK, the node of the file linked (its oldnodeid); else 0. */
  long linked() {
    return linked;
  }

  /** The file the request found, noted by a callback for one that runs after it; null if none. */
  Handle found() {
    return found;
  }

  void found(Handle h) {
    found = h;
  }
}
