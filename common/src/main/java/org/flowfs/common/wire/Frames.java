package org.flowfs.common.wire;

/**
 * The frame layout, written once: {@code u32 length} (of all that follows), {@code u8 version},
 * {@code u8 kind}, {@code u16 type}, {@code u64 id}, then the message's fields, then its payload.
 * A kind with {@link #SHM_PAYLOAD} set has, in place of the payload's bytes, the {@code u32} number
 * of the shared-memory slot that holds them ({@link ShmSlots}).
 */
public final class Frames {
  public static final int VERSION = 1;
  public static final int LENGTH_FIELD = 4;
  /** Bytes after the length field and before the message fields. */
  public static final int HEADER = 1 + 1 + 2 + 8;
  /** The kind's flag for a payload in a shared-memory slot. */
  public static final int SHM_PAYLOAD = 0x80;

  private Frames() {}
}
