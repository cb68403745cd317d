package org.flowfs.fuse;

import jnr.ffi.Pointer;

/**
 * The few pieces of the FUSE device protocol ({@code fuse_kernel.h}) that the loop reads and writes
 * beside libfuse: the request header's fields, the opcodes the loop looks at, and the header of a
 * notification the mount writes to the device on its own. One place for the kernel's layout; the
 * classes that use it ({@link InitChannel}, {@link SetidKill}, {@link KernelRequest}, {@link
 * KernelAttrs}, {@link PageStore}, {@link OpenStore}, {@link LinkNodes}, {@link AbsentXattrs},
 * {@link ReaddirPlus}, {@link StaleNodes}) say what they do with it.
 */
final class FuseWire {
  /**
   * fuse_in_header: uint32 len, uint32 opcode, uint64 unique, uint64 nodeid, uint32 uid, uint32
   * gid, uint32 pid (the calling thread's id), ...; 40 bytes.
   */
  static final int IN_LEN = 0;
  static final int IN_OPCODE = 4;
  static final int IN_UNIQUE = 8;
  static final int IN_NODEID = 16;
  static final int IN_PID = 32;
  static final int IN_HEADER = 40;

  /** fuse_read_in (READ, READDIR, READDIRPLUS): uint64 fh, uint64 offset, uint32 size, ...; 40 bytes. */
  static final int READ_IN_FH = IN_HEADER;
  static final int READ_IN_OFFSET = IN_HEADER + 8;
  static final int READ_IN_SIZE = IN_HEADER + 16;
  static final int READ_IN = 40;

  static final int FUSE_LOOKUP = 1;
  static final int FUSE_FORGET = 2;
  static final int FUSE_GETATTR = 3;
  static final int FUSE_SETATTR = 4;
  static final int FUSE_READLINK = 5;
  static final int FUSE_LINK = 13;
  static final int FUSE_OPEN = 14;
  static final int FUSE_READ = 15;
  static final int FUSE_WRITE = 16;
  static final int FUSE_GETXATTR = 22;
  static final int FUSE_INIT = 26;
  static final int FUSE_READDIR = 28;
  static final int FUSE_READDIRPLUS = 44;

  /** fuse_out_header: uint32 len, int32 error (a notification's code), uint64 unique (0 for a notification). */
  static final int OUT_HEADER = 16;
  static final int OUT_ERROR = 4;
  static final int NOTIFY_INVAL_INODE = 2;
  static final int NOTIFY_STORE = 4;

  private FuseWire() {}

  static int opcode(Pointer request) {
    return request.getInt(IN_OPCODE);
  }

  /** Writes the header of notification {@code code}, {@code length} bytes in all, at the start of {@code out}. */
  static void notifyHeader(Pointer out, int length, int code) {
    out.putInt(0, length);
    out.putInt(4, code);
    out.putLong(8, 0);
  }
}
