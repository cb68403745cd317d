package org.flowfs.fuse;

import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;

/**
 * Answers the kernel's READDIRPLUS: a piece of a directory's listing in which every entry carries
 * what a LOOKUP of its name would have answered, its node and its attributes, so that an {@code
 * ls -l}, a {@code diff -r} or an {@code rm -rf} of a directory needs no LOOKUP and no GETATTR per
 * entry: one round trip through the kernel for a page of entries instead of one per entry.
 *
 * <p>libfuse 2's high-level API has no READDIRPLUS: it numbers the kernel's nodes itself, one per
 * name, and counts how often the kernel was told each, so that it can forget the node when the
 * kernel does (FORGET). So the answer is made of what libfuse answers anyway: a READDIR of the
 * directory, asked of libfuse for the same open directory ({@code fh}) and offset, and for each
 * entry in it a LOOKUP of the name in the directory, with the caller's credentials, as the kernel
 * would have sent it. Both are processed by libfuse on this thread, on a channel of their own that
 * keeps the answers here ({@link SendChannel}) instead of writing them to {@code /dev/fuse}; they
 * take no round trip through the kernel, and libfuse counts each node it answers, as for the
 * kernel's own LOOKUPs. The kernel counts every entry of an answer it gets as a lookup (also those
 * past the end of the caller's buffer), so the counts agree; if the answer cannot be written (the
 * request was interrupted), libfuse is told to forget each node once, as the kernel would have.
 *
 * <p>The entries come in the READDIR's order with its offsets, so the kernel's next READDIRPLUS
 * goes on from the offset of the last entry it used. "." and ".." carry no node (the kernel links
 * neither), nor does an entry whose lookup failed (gone meanwhile): the kernel then lists it
 * without attributes, as a READDIR would.
 *
 * <p>The kernel asks for READDIRPLUS only when the INIT answer said so ({@link InitChannel}):
 * {@code FUSE_DO_READDIRPLUS} with {@code FUSE_READDIRPLUS_AUTO}, so that it asks for the first
 * page of a listing and for the next pages only when the caller looked up entries of the
 * directory since (a {@code find} that only reads names keeps plain READDIRs).
 *
 * <p>The answer is built in the worker's receive buffer, which the request no longer needs.
 * One object per mount; each FUSE thread answers with its own memory.
 */
final class ReaddirPlus {
  /** Has libfuse process a request the mount made, answering on {@link #channel()}. */
  @FunctionalInterface
  interface Libfuse {
    void process(Pointer request);
  }

  /** fuse_kernel.h, INIT flags: READDIRPLUS, and only when it looks useful (adaptive). */
  static final int FUSE_DO_READDIRPLUS = 1 << 13;
  static final int FUSE_READDIRPLUS_AUTO = 1 << 14;

  /** fuse_dirent: uint64 ino, uint64 off, uint32 namelen, uint32 type, char name[] (8-byte aligned). */
  private static final int DIRENT_OFF = 8;
  private static final int DIRENT_NAMELEN = 16;
  private static final int DIRENT_NAME = 24;
  /** fuse_entry_out: nodeid, generation, timeouts, fuse_attr; the head of a fuse_direntplus. */
  private static final int ENTRY_OUT = 128;
  private static final int NAME_MAX = 255;
  /** The largest dirent: a READDIR asked for this much answers at least one entry if any is left. */
  private static final int DIRENT_MAX = align(DIRENT_NAME + NAME_MAX);
  /** The smallest direntplus (a name of one byte). */
  private static final int PLUS_MIN = ENTRY_OUT + align(DIRENT_NAME + 1);
  /**
   * A direntplus is at most this many times as large as its dirent (a name of up to 8 bytes:
   * 160 / 32): a READDIR asked for 1/5 of the room left fills no more than that room.
   */
  private static final int PLUS_PER_DIRENT = 5;

  /** In the receive buffer: the READDIR asked of libfuse, the LOOKUP, the answer being built. */
  private static final int AT_READDIR = 128;
  private static final int AT_LOOKUP = AT_READDIR + FuseWire.IN_HEADER + FuseWire.READ_IN;
  private static final int AT_ANSWER = 1024;

  /** Where the channel puts what libfuse answers on the calling thread. */
  private static final class Scratch {
    Pointer target;
    long limit;
    long length;
    Pointer dirents;
    final Pointer entry;

    Scratch(Runtime rt) {
      this.entry = Memory.allocateDirect(rt, FuseWire.OUT_HEADER + ENTRY_OUT, true);
    }
  }

  private final InitChannel.LibC libc;
  private final Runtime rt;
  private final int fd;
  private final FuseOps ops;
  private final Counters counters;
  /** Learns the file of each node answered (null: none to teach). */
  private final AbsentXattrs absent;
  private final SendChannel channel;
  private final ThreadLocal<Scratch> scratch;

  ReaddirPlus(FuseLoop.LibFuseLoop lib, InitChannel.LibC libc, Runtime rt, int fd, long bufsize, Counters counters,
      AbsentXattrs absent) {
    this.libc = libc;
    this.rt = rt;
    this.fd = fd;
    this.ops = new FuseOps(counters);
    this.counters = counters;
    this.absent = absent;
    this.scratch = ThreadLocal.withInitial(() -> new Scratch(rt));
    this.channel = new SendChannel(lib, rt, fd, bufsize, this::keep);
  }

  /** The channel libfuse answers this class's READDIRs, LOOKUPs and FORGETs on. */
  Pointer channel() {
    return channel.pointer();
  }

  /** libfuse's answer on {@link #channel()}: gathered into the calling thread's target, up to its limit. */
  private int keep(Pointer ch, Pointer iov, long count) {
    Scratch s = scratch.get();
    s.length = SendChannel.gather(rt, iov, count, s.target, s.limit);
    return 0;
  }

  /**
   * Answers the READDIRPLUS at {@code request}, whose buffer holds {@code room} bytes; {@code
   * libfuse} processes the READDIRs, LOOKUPs and FORGETs it makes.
   */
  void answer(Pointer request, long room, Libfuse libfuse) {
    Scratch s = scratch.get();
    long unique = request.getLong(FuseWire.IN_UNIQUE);
    long asked = Integer.toUnsignedLong(request.getInt(FuseWire.READ_IN_SIZE));
    int size = (int) Math.min(asked, room - AT_ANSWER - FuseWire.OUT_HEADER);
    Pointer readdir = request.slice(AT_READDIR);
    request.transferTo(0, readdir, 0, FuseWire.IN_HEADER + FuseWire.READ_IN);
    readdir.putInt(FuseWire.IN_OPCODE, FuseWire.FUSE_READDIR);
    Pointer lookup = request.slice(AT_LOOKUP);
    request.transferTo(0, lookup, 0, FuseWire.IN_HEADER);
    lookup.putInt(FuseWire.IN_OPCODE, FuseWire.FUSE_LOOKUP);
    Pointer records = request.slice(AT_ANSWER + FuseWire.OUT_HEADER);

    int built = 0;
    int error = 0;
    long next = request.getLong(FuseWire.READ_IN_OFFSET);
    boolean more = true;
    while (more && size - built >= PLUS_MIN) {
      int ask = Math.max(DIRENT_MAX, ((size - built) / PLUS_PER_DIRENT) & ~7);
      readdir.putLong(FuseWire.READ_IN_OFFSET, next);
      readdir.putInt(FuseWire.READ_IN_SIZE, ask);
      if (s.dirents == null || s.dirents.size() < FuseWire.OUT_HEADER + ask) {
        s.dirents = Memory.allocateDirect(rt, FuseWire.OUT_HEADER + Math.max(ask, 64 << 10), true);
      }
      Pointer dirents = s.dirents;
      s.target = dirents;
      s.limit = dirents.size();
      s.length = 0;
      libfuse.process(readdir);
      int err = s.length >= FuseWire.OUT_HEADER ? dirents.getInt(4) : -Errno.EIO.code();
      if (err != 0) {
        if (built == 0) {
          error = err;
        }
        break;
      }
      long end = s.length;
      if (end == FuseWire.OUT_HEADER) {
        break; // the end of the directory
      }
      long at = FuseWire.OUT_HEADER;
      while (at + DIRENT_NAME <= end) {
        int namelen = dirents.getInt(at + DIRENT_NAMELEN);
        int reclen = align(DIRENT_NAME + namelen);
        if (namelen <= 0 || namelen > NAME_MAX || at + reclen > end) {
          more = false; // not libfuse's layout: answer what is built
          break;
        }
        if (built + ENTRY_OUT + reclen > size) {
          // the next answer's first entry (the kernel asks for a page at least, which holds any one)
          more = false;
          break;
        }
        long record = built;
        if (dot(dirents, at + DIRENT_NAME, namelen)) {
          records.setMemory(record, ENTRY_OUT, (byte) 0);
        } else {
          lookup(lookup, dirents, at + DIRENT_NAME, namelen, records, record, s, libfuse);
        }
        dirents.transferTo(at, records, record + ENTRY_OUT, reclen);
        built += ENTRY_OUT + reclen;
        next = dirents.getLong(at + DIRENT_OFF);
        at += reclen;
      }
    }

    Pointer out = request.slice(AT_ANSWER);
    int length = FuseWire.OUT_HEADER + (error == 0 ? built : 0);
    out.putInt(0, length);
    out.putInt(4, error);
    out.putLong(8, unique);
    if (libc.write(fd, out, length) < 0 && error == 0) {
      // the request is gone (interrupted), and with it what it told the kernel: libfuse forgets it too
      forgetAll(lookup, records, built, libfuse);
      counters.increment("fuse.readdirplus.unanswered");
    }
    ops.counted("readdirplus", Errno.ofCode(-error));
  }

  /**
   * Has libfuse look up the name of {@code namelen} bytes at {@code nameAt} of {@code dirents} and
   * puts its fuse_entry_out at {@code record} of {@code records} (zeros if the lookup failed).
   */
  private void lookup(Pointer lookup, Pointer dirents, long nameAt, int namelen, Pointer records, long record,
      Scratch s, Libfuse libfuse) {
    lookup.putInt(FuseWire.IN_LEN, FuseWire.IN_HEADER + namelen + 1);
    dirents.transferTo(nameAt, lookup, FuseWire.IN_HEADER, namelen);
    lookup.putByte(FuseWire.IN_HEADER + namelen, (byte) 0);
    s.target = s.entry;
    s.limit = FuseWire.OUT_HEADER + ENTRY_OUT;
    s.length = 0;
    libfuse.process(lookup);
    long node = 0;
    if (s.length == FuseWire.OUT_HEADER + ENTRY_OUT && s.entry.getInt(4) == 0) {
      node = s.entry.getLong(FuseWire.OUT_HEADER);
    }
    if (node == 0) {
      records.setMemory(record, ENTRY_OUT, (byte) 0); // listed without a node: the kernel looks it up if asked
      return;
    }
    s.entry.transferTo(FuseWire.OUT_HEADER, records, record, ENTRY_OUT);
    if (absent != null) {
      absent.lookedUp(node);
    }
  }

  /** Has libfuse forget once each node in the {@code built} bytes of records. */
  private static void forgetAll(Pointer forget, Pointer records, int built, Libfuse libfuse) {
    forget.putInt(FuseWire.IN_LEN, FuseWire.IN_HEADER + 8);
    forget.putInt(FuseWire.IN_OPCODE, FuseWire.FUSE_FORGET);
    forget.putLong(FuseWire.IN_HEADER, 1); // fuse_forget_in.nlookup
    for (long at = 0; at < built; ) {
      long node = records.getLong(at);
      if (node != 0) {
        forget.putLong(FuseWire.IN_NODEID, node);
        libfuse.process(forget);
      }
      at += ENTRY_OUT + align(DIRENT_NAME + records.getInt(at + ENTRY_OUT + DIRENT_NAMELEN));
    }
  }

  /** Whether the name is "." or "..". */
  private static boolean dot(Pointer p, long at, int namelen) {
    return (namelen == 1 && p.getByte(at) == '.') || (namelen == 2 && p.getByte(at) == '.' && p.getByte(at + 1) == '.');
  }

  private static int align(int n) {
    return (n + 7) & ~7;
  }
}
