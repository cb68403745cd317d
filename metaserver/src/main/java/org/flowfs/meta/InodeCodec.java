package org.flowfs.meta;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.flowfs.common.DistSpec;
import org.flowfs.common.FileType;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;

/**
 * The stored form of an {@link Inode}: a compact, versioned binary record. The handle is the key
 * and is not repeated in the value.
 *
 * <pre>
 * byte    format (1)
 * byte    type code (see {@link #code})
 * varint  mode, uid, gid (unsigned 32 bit), nlink
 * varlong size
 * long    atime, mtime, ctime (fixed 8 bytes, big endian)
 * varint  rdev
 * then by type:
 *   directory: long parent handle
 *   symlink:   varint length, UTF-8 target
 *   regular:   byte 0 (no layout) | 1 (a layout without a head) | 2 (a layout with a head),
 *              then varint name length, UTF-8 name, varint parameter count, zigzag varlong each,
 *              varint datafile count, long each; after a 2, varlong head bytes (above 0)
 * then, for an object made by a create with a verifier only:
 *   long    verifier (not 0)
 * </pre>
 *
 * <p>A layout with no head is written with a 1, as before heads existed, so records of either
 * age read the same.
 *
 * <p>Thread safe: stateless.
 */
final class InodeCodec {
  static final byte FORMAT = 1;
  /** What follows a regular file's attributes. */
  private static final byte NO_LAYOUT = 0;
  private static final byte LAYOUT = 1;
  private static final byte LAYOUT_WITH_HEAD = 2;

  private InodeCodec() {}

  /** The stable one-byte code of a type, used in object records and directory entries. */
  static byte code(FileType type) {
    return switch (type) {
      case REGULAR -> 1;
      case DIRECTORY -> 2;
      case SYMLINK -> 3;
      case FIFO -> 4;
      case SOCKET -> 5;
      case CHAR_DEVICE -> 6;
      case BLOCK_DEVICE -> 7;
    };
  }

  static FileType type(byte code) {
    return switch (code) {
      case 1 -> FileType.REGULAR;
      case 2 -> FileType.DIRECTORY;
      case 3 -> FileType.SYMLINK;
      case 4 -> FileType.FIFO;
      case 5 -> FileType.SOCKET;
      case 6 -> FileType.CHAR_DEVICE;
      case 7 -> FileType.BLOCK_DEVICE;
      default -> throw new IllegalStateException("unknown type code " + code + " in the metadata store");
    };
  }

  static byte[] encode(Inode n) {
    Out out = new Out();
    out.write(FORMAT);
    out.write(code(n.type));
    out.varint(n.mode);
    out.varint(n.uid);
    out.varint(n.gid);
    out.varint(n.nlink);
    out.varlong(n.size);
    out.fixed(n.atimeNs);
    out.fixed(n.mtimeNs);
    out.fixed(n.ctimeNs);
    out.varint(n.rdev);
    switch (n.type) {
      case DIRECTORY -> out.fixed(n.parent);
      case SYMLINK -> out.string(n.target);
      case REGULAR -> {
        if (n.layout == null) {
          out.write(NO_LAYOUT);
        } else {
          out.write(n.layout.headBytes() > 0 ? LAYOUT_WITH_HEAD : LAYOUT);
          out.string(n.layout.dist().name());
          out.varint(n.layout.dist().params().size());
          for (long p : n.layout.dist().params()) {
            out.varlong((p << 1) ^ (p >> 63));
          }
          out.varint(n.layout.datafiles().size());
          for (Handle h : n.layout.datafiles()) {
            out.fixed(h.id());
          }
          if (n.layout.headBytes() > 0) {
            out.varlong(n.layout.headBytes());
          }
        }
      }
      default -> { }
    }
    if (n.verifier != 0) {
      out.fixed(n.verifier);
    }
    return out.toByteArray();
  }

  static Inode decode(long handle, byte[] bytes) {
    ByteBuffer in = ByteBuffer.wrap(bytes);
    byte format = in.get();
    if (format != FORMAT) {
      throw new IllegalStateException("object " + new Handle(handle) + " has unknown format " + format);
    }
    Inode n = new Inode(handle, type(in.get()));
    n.mode = varint(in);
    n.uid = varint(in);
    n.gid = varint(in);
    n.nlink = varint(in);
    n.size = varlong(in);
    n.atimeNs = in.getLong();
    n.mtimeNs = in.getLong();
    n.ctimeNs = in.getLong();
    n.rdev = varint(in);
    switch (n.type) {
      case DIRECTORY -> n.parent = in.getLong();
      case SYMLINK -> n.target = string(in);
      case REGULAR -> {
        byte layout = in.get();
        if (layout < NO_LAYOUT || layout > LAYOUT_WITH_HEAD) {
          throw new IllegalStateException("object " + new Handle(handle) + " has unknown layout kind " + layout);
        }
        if (layout != NO_LAYOUT) {
          String dist = string(in);
          int count = varint(in);
          List<Long> params = new ArrayList<>(count);
          for (int i = 0; i < count; i++) {
            long z = varlong(in);
            params.add((z >>> 1) ^ -(z & 1));
          }
          int files = varint(in);
          List<Handle> datafiles = new ArrayList<>(files);
          for (int i = 0; i < files; i++) {
            datafiles.add(new Handle(in.getLong()));
          }
          long head = layout == LAYOUT_WITH_HEAD ? varlong(in) : 0;
          n.layout = new Layout(new DistSpec(dist, params), datafiles, head);
        }
      }
      default -> { }
    }
    if (in.remaining() >= Long.BYTES) {
      n.verifier = in.getLong();
    }
    return n;
  }

  private static int varint(ByteBuffer in) {
    return (int) varlong(in);
  }

  private static long varlong(ByteBuffer in) {
    long v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      byte b = in.get();
      v |= (long) (b & 0x7F) << shift;
      if (b >= 0) {
        return v;
      }
    }
    throw new IllegalStateException("varint longer than 64 bits in the metadata store");
  }

  private static String string(ByteBuffer in) {
    byte[] b = new byte[varint(in)];
    in.get(b);
    return new String(b, StandardCharsets.UTF_8);
  }

  /** A growable output with the few primitives the format uses. */
  private static final class Out extends ByteArrayOutputStream {
    Out() {
      super(64);
    }

    /** An int as unsigned 32 bits (uid -1 takes 5 bytes, small values one). */
    void varint(int v) {
      varlong(Integer.toUnsignedLong(v));
    }

    void varlong(long v) {
      while ((v & ~0x7FL) != 0) {
        write((int) ((v & 0x7F) | 0x80));
        v >>>= 7;
      }
      write((int) v);
    }

    void fixed(long v) {
      for (int s = 56; s >= 0; s -= 8) {
        write((int) (v >>> s));
      }
    }

    void string(String s) {
      byte[] b = s.getBytes(StandardCharsets.UTF_8);
      varint(b.length);
      write(b, 0, b.length);
    }
  }
}
