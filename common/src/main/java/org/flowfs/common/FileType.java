package org.flowfs.common;

/** The kinds of object the namespace holds, with their {@code S_IFMT} bits. */
public enum FileType {
  REGULAR(0100000),
  DIRECTORY(0040000),
  SYMLINK(0120000),
  FIFO(0010000),
  SOCKET(0140000),
  CHAR_DEVICE(0020000),
  BLOCK_DEVICE(0060000);

  public static final int S_IFMT = 0170000;

  private final int bits;

  FileType(int bits) {
    this.bits = bits;
  }

  public int bits() {
    return bits;
  }

  public static FileType ofMode(int mode) {
    int t = mode & S_IFMT;
    for (FileType f : values()) {
      if (f.bits == t) {
        return f;
      }
    }
    throw new FsException(Errno.EINVAL, "unknown file type in mode " + Integer.toOctalString(mode));
  }
}
