package org.flowfs.common;

/**
 * A 64-bit object id (PVFS2's handle). Every directory, metafile, symlink and datafile has one.
 *
 * <p>The top 16 bits name the server that owns the handle's range: {@link #META_SERVER} for the
 * metadata server, {@code 1 + id} for I/O server {@code id}. So a handle says which server holds
 * its object, and a second metadata server would only need a range of its own.
 */
public record Handle(long id) implements Comparable<Handle> {
  public static final int META_SERVER = 0;
  public static final int LOCAL_BITS = 48;
  public static final long LOCAL_MASK = (1L << LOCAL_BITS) - 1;
  /** The root directory of the file system. */
  public static final Handle ROOT = of(META_SERVER, 1);
  private static final java.util.HexFormat HEX = java.util.HexFormat.of();

  public Handle {
    if (id == 0) {
      throw new IllegalArgumentException("handle 0 is reserved");
    }
  }

  public static Handle of(int server, long local) {
    if (server < 0 || server > 0xFFFF) {
      throw new IllegalArgumentException("server " + server);
    }
    if (local <= 0 || local > LOCAL_MASK) {
      throw new IllegalArgumentException("local " + local);
    }
    return new Handle(((long) server << LOCAL_BITS) | local);
  }

  /** The server number of the range this handle is in. */
  public int server() {
    return (int) (id >>> LOCAL_BITS);
  }

  /** The I/O server id owning this handle, or -1 for a metadata handle. */
  public int ioServer() {
    return server() - 1;
  }

  public long local() {
    return id & LOCAL_MASK;
  }

  /** The server number owning the handles of I/O server {@code ioServerId}. */
  public static int serverOfIo(int ioServerId) {
    return ioServerId + 1;
  }

  @Override
  public int compareTo(Handle o) {
    return Long.compareUnsigned(id, o.id);
  }

  public String hex() {
    return hex(id);
  }

  /** {@code n} as 16 lower-case hex digits, zero-padded (what {@code %016x} prints, without a formatter). */
  public static String hex(long n) {
    return HEX.toHexDigits(n);
  }

  @Override
  public String toString() {
    return server() + ":" + local();
  }
}
