package org.flowfs.fuse;

import jnr.ffi.LibraryLoader;
import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.Delegate;
import jnr.ffi.types.size_t;
import jnr.ffi.types.ssize_t;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The libfuse channel that carries the kernel's INIT and libfuse's answer to it, and nothing else
 * (see {@link FuseLoop}). Its buffer size is what libfuse offers as {@code max_write}; its send
 * function, called by libfuse with the answer, adds what libfuse 2 cannot say, when the kernel's
 * INIT offered it:
 *
 * <ul>
 *   <li>{@code FUSE_MAX_PAGES} and the page count: requests of up to 1 MiB;
 *   <li>{@code FUSE_HANDLE_KILLPRIV_V2}: FlowFS clears set-user-ID and set-group-ID on write,
 *       truncate and chown itself, told by the kernel when ({@link SetidKill}), so the kernel
 *       need not ask for a file's {@code security.capability} before every write to see whether
 *       it must: one FUSE round trip less per write (4 KiB random writes on the process shape,
 *       same build with and without: about 6,100 -> 8,000-8,600 IOPS).
 *   <li>{@code FUSE_DO_READDIRPLUS} with {@code FUSE_READDIRPLUS_AUTO}, when the loop answers
 *       READDIRPLUS ({@link ReaddirPlus}).
 *   <li>{@code FUSE_POSIX_ACL} with {@code FUSE_DONT_MASK} ({@code client.posix-acl}): the kernel
 *       checks permissions against the ACLs it reads from {@code system.posix_acl_access} (and
 *       caches with the attributes), and sends the mode of a create with the caller's umask
 *       beside it rather than applied, for the metadata server to apply unless the directory's
 *       default ACL replaces it. Keeping the mode and the ACL in step is the metadata server's
 *       part ({@code org.flowfs.common.PosixAcl}).
 * </ul>
 *
 * An OPEN for reading only is answered on a {@link NoFlushChannel}; every other request on
 * libfuse's own channel, straight to {@code /dev/fuse}.
 */
final class InitChannel {
  private static final Logger LOG = LoggerFactory.getLogger(InitChannel.class);

  /** fuse_init_in.flags follows major, minor and max_readahead. */
  private static final int IN_INIT_FLAGS = FuseWire.IN_HEADER + 12;
  private static final int OUT_HEADER = FuseWire.OUT_HEADER;
  /** fuse_init_out, from its start: flags, max_write, max_pages (protocol 7.28). */
  private static final int OUT_FLAGS = 12;
  private static final int OUT_MAX_WRITE = 20;
  private static final int OUT_MAX_PAGES = 28;
  /** fuse_init_out through max_pages and map_alignment. */
  private static final int OUT_LENGTH_WITH_MAX_PAGES = 32;
  private static final int FUSE_MAX_PAGES = 1 << 22;
  /** fuse_kernel.h: the file system clears set-ID bits on write, truncate and chown. */
  private static final int FUSE_HANDLE_KILLPRIV_V2 = 1 << 28;
  /** fuse_kernel.h: the kernel sends the umask of a create beside its mode and leaves it to the file system. */
  private static final int FUSE_DONT_MASK = 1 << 6;
  /** fuse_kernel.h: the kernel enforces POSIX ACLs, which the file system keeps as extended attributes. */
  private static final int FUSE_POSIX_ACL = 1 << 20;
  private static final int PAGE = 4096;

  /** libfuse 2's send operation of a channel: 0, or -errno. */
  public interface Send {
    @Delegate
    int send(Pointer ch, Pointer iov, @size_t long count);
  }

  /** write(2), writev(2); gettid(2), sched_setscheduler(2) and setpriority(2) for the workers' priority. */
  public interface LibC {
    @ssize_t
    long write(int fd, Pointer buf, @size_t long count);

    @ssize_t
    long writev(int fd, Pointer iov, int iovcnt);

    int gettid();

    int sched_setscheduler(int pid, int policy, Pointer param);

    /** On Linux, {@code which} PRIO_PROCESS (0) and a thread id set that thread's nice value alone. */
    int setpriority(int which, int who, int prio);
  }

  private final Runtime rt;
  private final LibC libc;
  private final int fd;
  private final SendChannel channel;
  private volatile boolean kernelOffersMaxPages;
  private volatile boolean kernelOffersKillpriv;
  private volatile boolean kernelOffersReaddirPlus;
  private volatile boolean kernelOffersAcl;
  private final boolean readdirPlus;
  private final boolean posixAcl;

  /**
   * A channel on {@code fd} (/dev/fuse) whose buffer size {@code bufsize} sets libfuse's
   * max_write; with {@code readdirPlus} the kernel is asked for READDIRPLUS when it offers it, with
   * {@code posixAcl} for POSIX ACLs.
   */
  InitChannel(FuseLoop.LibFuseLoop lib, Runtime rt, int fd, long bufsize, boolean readdirPlus, boolean posixAcl) {
    this.rt = rt;
    this.readdirPlus = readdirPlus;
    this.posixAcl = posixAcl;
    this.libc = LibraryLoader.create(LibC.class).load("c");
    this.fd = fd;
    this.channel = new SendChannel(lib, rt, fd, bufsize, this::answer);
  }

  LibC libc() {
    return libc;
  }

  /** Has libfuse process the INIT request in {@code buf} (its bytes at {@code mem}), answering here. */
  void process(FuseLoop.LibFuseLoop lib, Pointer se, Pointer buf, Pointer mem) {
    kernelOffersMaxPages = (mem.getInt(IN_INIT_FLAGS) & FUSE_MAX_PAGES) != 0;
    kernelOffersKillpriv = (mem.getInt(IN_INIT_FLAGS) & FUSE_HANDLE_KILLPRIV_V2) != 0;
    kernelOffersReaddirPlus = (mem.getInt(IN_INIT_FLAGS) & ReaddirPlus.FUSE_DO_READDIRPLUS) != 0;
    int acl = FUSE_POSIX_ACL | FUSE_DONT_MASK;
    kernelOffersAcl = (mem.getInt(IN_INIT_FLAGS) & acl) == acl;
    lib.fuse_session_process_buf(se, buf, channel.pointer());
  }

  /** libfuse's answer to INIT: gathered, completed and written to /dev/fuse. */
  private int answer(Pointer ch, Pointer iov, long count) {
    long length = SendChannel.length(iov, count);
    int error = 0;
    long size = Math.max(length, OUT_HEADER + OUT_LENGTH_WITH_MAX_PAGES);
    Pointer out = Memory.allocateDirect(rt, (int) size, true);
    SendChannel.gather(rt, iov, count, out, length);
    if (length >= OUT_HEADER) {
      error = out.getInt(4);
    }
    if (error == 0 && length >= OUT_HEADER + OUT_MAX_WRITE + 4) {
      if (kernelOffersMaxPages) {
        int maxWrite = out.getInt(OUT_HEADER + OUT_MAX_WRITE);
        int pages = Math.max(1, Math.min(maxWrite, FuseLoop.MAX_REQUEST) / PAGE);
        out.putInt(OUT_HEADER + OUT_FLAGS, out.getInt(OUT_HEADER + OUT_FLAGS) | FUSE_MAX_PAGES);
        out.putShort(OUT_HEADER + OUT_MAX_PAGES, (short) pages);
        out.putInt(0, (int) size);
        length = size;
        LOG.info("FUSE requests of up to {} KiB ({} pages)", pages * PAGE / 1024, pages);
      } else {
        LOG.info("the kernel does not offer FUSE_MAX_PAGES: FUSE requests of up to 128 KiB");
      }
      if (kernelOffersKillpriv) {
        out.putInt(OUT_HEADER + OUT_FLAGS, out.getInt(OUT_HEADER + OUT_FLAGS) | FUSE_HANDLE_KILLPRIV_V2);
      }
      if (readdirPlus && kernelOffersReaddirPlus) {
        int plus = ReaddirPlus.FUSE_DO_READDIRPLUS | ReaddirPlus.FUSE_READDIRPLUS_AUTO;
        out.putInt(OUT_HEADER + OUT_FLAGS, out.getInt(OUT_HEADER + OUT_FLAGS) | plus);
      }
      if (posixAcl && kernelOffersAcl) {
        out.putInt(OUT_HEADER + OUT_FLAGS, out.getInt(OUT_HEADER + OUT_FLAGS) | FUSE_POSIX_ACL | FUSE_DONT_MASK);
      } else if (posixAcl) {
        LOG.info("the kernel does not offer FUSE_POSIX_ACL: ACLs are kept, not enforced");
      }
    }
    long wrote = libc.write(fd, out, length);
    if (wrote < 0) {
      int errno = rt.getLastError();
      LOG.warn("answering the kernel's INIT failed: errno {}", errno);
      return -errno;
    }
    return 0;
  }
}
