package org.flowfs.common.wire;

/**
 * The frame layout, written once: {@code u32 length} (of all that follows), {@code u8 version},
 * {@code u8 kind}, {@code u16 type}, {@code u64 id}, then the message's fields, then its payload.
 */
public final class Frames {
  public static final int VERSION = 1;
  public static final int LENGTH_FIELD = 4;
  /** Bytes after the length field and before the message fields. */
  public static final int HEADER = 1 + 1 + 2 + 8;

  private Frames() {}
}
