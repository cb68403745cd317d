package org.flowfs.common.dist;

import java.nio.charset.StandardCharsets;
import java.util.Locale;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;

/**
 * A directory's default layout for the regular files created in it (Lustre's {@code setstripe}
 * on a directory, PVFS2's directory hints): stored as the extended attribute {@value #XATTR} of
 * the directory, text {@code strip_size=1048576 servers=2}. A field left out (or 0) means the file
 * system's default ({@code layout.strip-size}, {@code layout.servers}). The metadata server
 * applies it at create time when the request names no distribution and no server count.
 *
 * @param stripSize strip size of {@code simple_stripe} in bytes, a power of two of at least
 *     {@value #MIN_STRIP}, or 0 for the file system's default
 * @param servers datafiles per new file, or 0 for the file system's default
 */
public record DirStripe(long stripSize, int servers) {
  public static final String XATTR = "flowfs.stripe";
  public static final long MIN_STRIP = 4096;
  public static final long MAX_STRIP = 1L << 30;

  public DirStripe {
    if (stripSize != 0 && (stripSize < MIN_STRIP || stripSize > MAX_STRIP || Long.bitCount(stripSize) != 1)) {
      throw new FsException(Errno.EINVAL,
          "strip size " + stripSize + " is not a power of two from " + MIN_STRIP + " to " + MAX_STRIP);
    }
    if (servers < 0) {
      throw new FsException(Errno.EINVAL, "server count " + servers + " is negative");
    }
  }

  /** Parses {@code strip_size=N servers=M} (either may be missing; blanks, commas or newlines between). */
  public static DirStripe parse(String text) {
    long strip = 0;
    int servers = 0;
    boolean any = false;
    for (String field : text.strip().split("[\\s,;]+")) {
      if (field.isEmpty()) {
        continue;
      }
      int eq = field.indexOf('=');
      if (eq <= 0) {
        throw new FsException(Errno.EINVAL, "'" + field + "' is not key=value (keys: strip_size, servers)");
      }
      String key = field.substring(0, eq).toLowerCase(Locale.ROOT).replace('-', '_');
      String value = field.substring(eq + 1);
      try {
        switch (key) {
          case "strip_size" -> strip = org.flowfs.common.config.Values.size(value);
          case "servers" -> servers = Integer.parseInt(value);
          default -> throw new FsException(Errno.EINVAL, "unknown key '" + key + "' (keys: strip_size, servers)");
        }
      } catch (IllegalArgumentException e) { // NumberFormatException too
        throw new FsException(Errno.EINVAL, "'" + value + "' is not a number for " + key);
      }
      any = true;
    }
    if (!any) {
      throw new FsException(Errno.EINVAL, "empty " + XATTR + " (set strip_size=N and/or servers=M)");
    }
    return new DirStripe(strip, servers);
  }

  public static DirStripe parse(byte[] value) {
    return parse(new String(value, StandardCharsets.UTF_8));
  }

  /** Checks the server count against the file system's {@code ioServers}. */
  public DirStripe checkServers(int ioServers) {
    if (servers > ioServers) {
      throw new FsException(Errno.EINVAL, servers + " servers asked for, the file system has " + ioServers + " I/O servers");
    }
    return this;
  }

  /** The stored text, fields that are set only: {@code strip_size=1048576 servers=2}. */
  public String format() {
    StringBuilder sb = new StringBuilder();
    if (stripSize != 0) {
      sb.append("strip_size=").append(stripSize);
    }
    if (servers != 0) {
      sb.append(sb.length() == 0 ? "" : " ").append("servers=").append(servers);
    }
    return sb.length() == 0 ? "strip_size=0 servers=0" : sb.toString();
  }

  public byte[] bytes() {
    return format().getBytes(StandardCharsets.UTF_8);
  }
}
