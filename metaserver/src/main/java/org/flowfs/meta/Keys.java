package org.flowfs.meta;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.flowfs.common.Errno;
import org.flowfs.common.FileType;
import org.flowfs.common.FsException;

/**
 * Keys of the ordered tables: an 8-byte big-endian handle followed by the UTF-8 bytes of a name
 * (a directory entry's or an extended attribute's). Compared as unsigned bytes, all keys of one
 * handle form one contiguous range, in byte order of the UTF-8 names, between {@link #first} and
 * {@link #end}. A directory entry's value is the child's handle (8 bytes) and type code (1 byte),
 * so a readdir without attributes reads no object.
 *
 * <p>Thread safe: stateless.
 */
final class Keys {
  private static final int HANDLE_BYTES = 8;

  private Keys() {}

  /**
   * The UTF-8 bytes of a name or target; EINVAL if it holds an unpaired surrogate, which has no
   * UTF-8 form and would not read back as written.
   */
  static byte[] utf8(String s) {
    for (int i = 0; i < s.length(); i++) {
      if (Character.isSurrogate(s.charAt(i))) {
        return strictUtf8(s);
      }
    }
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] strictUtf8(String s) {
    try {
      ByteBuffer b = StandardCharsets.UTF_8.newEncoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .encode(CharBuffer.wrap(s));
      return Arrays.copyOfRange(b.array(), b.arrayOffset() + b.position(), b.arrayOffset() + b.limit());
    } catch (CharacterCodingException e) {
      throw new FsException(Errno.EINVAL, "name is not valid Unicode");
    }
  }

  /** The key of {@code name} under {@code handle}. */
  static byte[] of(long handle, byte[] name) {
    byte[] k = new byte[HANDLE_BYTES + name.length];
    putLong(k, handle);
    System.arraycopy(name, 0, k, HANDLE_BYTES, name.length);
    return k;
  }

  /** Below every key of {@code handle} (exclusive bound: no name is empty). */
  static byte[] first(long handle) {
    byte[] k = new byte[HANDLE_BYTES];
    putLong(k, handle);
    return k;
  }

  /** Above every key of {@code handle} (exclusive bound; UTF-8 has no 0xFF byte). */
  static byte[] end(long handle) {
    if (handle == -1L) {
      byte[] k = new byte[HANDLE_BYTES + 1];
      Arrays.fill(k, (byte) 0xFF);
      return k;
    }
    return first(handle + 1);
  }

  /** The name part of a key. */
  static String name(byte[] key) {
    return new String(key, HANDLE_BYTES, key.length - HANDLE_BYTES, StandardCharsets.UTF_8);
  }

  static byte[] entry(long child, FileType type) {
    byte[] v = new byte[HANDLE_BYTES + 1];
    putLong(v, child);
    v[HANDLE_BYTES] = InodeCodec.code(type);
    return v;
  }

  static long entryHandle(byte[] value) {
    return ByteBuffer.wrap(value).getLong(0);
  }

  static FileType entryType(byte[] value) {
    return InodeCodec.type(value[HANDLE_BYTES]);
  }

  private static void putLong(byte[] b, long v) {
    for (int i = 0; i < HANDLE_BYTES; i++) {
      b[i] = (byte) (v >>> (56 - 8 * i));
    }
  }
}
