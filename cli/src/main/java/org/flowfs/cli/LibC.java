package org.flowfs.cli;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import jnr.ffi.LibraryLoader;
import jnr.ffi.annotations.In;
import jnr.ffi.annotations.Out;
import jnr.ffi.types.size_t;
import jnr.ffi.types.ssize_t;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;

/**
 * The few libc calls the JDK lacks, through jnr-ffi (already on the classpath for FUSE): a Unix
 * datagram to systemd's notify socket, and extended attributes of any name (the JDK's
 * {@code UserDefinedFileAttributeView} only reaches {@code user.*}). Loaded on first use; every
 * method throws {@link FsException} with the call's errno.
 */
final class LibC {
  static final int AF_UNIX = 1;
  static final int SOCK_DGRAM = 2;
  static final int SOCK_CLOEXEC = 0x80000;
  static final int MSG_NOSIGNAL = 0x4000;
  static final int XATTR_MAX = 65536;
  /** {@code sizeof(sockaddr_un.sun_path)} on Linux. */
  static final int SUN_PATH = 108;

  /** The libc functions used, as jnr-ffi binds them. */
  public interface Native {
    int socket(int domain, int type, int protocol);

    @ssize_t long sendto(int fd, @In byte[] buf, @size_t long len, int flags, @In byte[] addr, int addrlen);

    int close(int fd);

    @ssize_t long getxattr(String path, String name, @Out byte[] value, @size_t long size);

    int setxattr(String path, String name, @In byte[] value, @size_t long size, int flags);

    int removexattr(String path, String name);
  }

  private static final class Holder {
    static final Native C = LibraryLoader.create(Native.class).load("c");
    static final jnr.ffi.Runtime RUNTIME = jnr.ffi.Runtime.getRuntime(C);
  }

  private LibC() {}

  private static FsException error(String call, String what) {
    int e = Holder.RUNTIME.getLastError();
    return new FsException(Errno.ofCode(e), call + " " + what + " (errno " + e + ")");
  }

  /**
   * {@code struct sockaddr_un} for a socket path; a leading '@' names an abstract socket (its
   * name starts with a NUL byte and is not NUL-terminated). Returns the bytes, sized to pass as
   * {@code addrlen}.
   */
  static byte[] sockaddrUn(String path) {
    byte[] name = path.getBytes(StandardCharsets.UTF_8);
    boolean abstractName = name.length > 0 && name[0] == '@';
    int len = abstractName ? name.length : name.length + 1; // a path ends with NUL
    if (name.length == 0 || len > SUN_PATH) {
      throw new IllegalArgumentException("socket path of " + name.length + " bytes (1.." + (SUN_PATH - 1) + ")");
    }
    ByteBuffer b = ByteBuffer.allocate(2 + len).order(ByteOrder.nativeOrder());
    b.putShort((short) AF_UNIX);
    b.put(name);
    byte[] a = b.array();
    if (abstractName) {
      a[2] = 0;
    }
    return a;
  }

  /** Sends one datagram to the Unix socket at {@code path} ('@' for an abstract name). */
  static void sendDatagram(String path, byte[] message) {
    byte[] addr = sockaddrUn(path);
    Native c = Holder.C;
    int fd = c.socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      throw error("socket", "AF_UNIX");
    }
    try {
      long n = c.sendto(fd, message, message.length, MSG_NOSIGNAL, addr, addr.length);
      if (n < 0) {
        throw error("sendto", path);
      }
    } finally {
      c.close(fd);
    }
  }

  /** The value of extended attribute {@code name} of {@code path} (following symlinks). */
  static byte[] getxattr(String path, String name) {
    byte[] buf = new byte[XATTR_MAX];
    long n = Holder.C.getxattr(path, name, buf, buf.length);
    if (n < 0) {
      throw error("getxattr", path + " " + name);
    }
    return java.util.Arrays.copyOf(buf, (int) n);
  }

  static void setxattr(String path, String name, byte[] value) {
    if (Holder.C.setxattr(path, name, value, value.length, 0) != 0) {
      throw error("setxattr", path + " " + name);
    }
  }

  static void removexattr(String path, String name) {
    if (Holder.C.removexattr(path, name) != 0) {
      throw error("removexattr", path + " " + name);
    }
  }
}
