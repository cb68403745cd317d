package org.flowfs.common.datarep;

import io.netty.buffer.ByteBuf;
import java.nio.ByteOrder;

/**
 * Reads and writes values in their memory ("native") form: the platform's byte order, as {@link
 * Datarep} defines it. Absolute indices; the buffer's indices do not move. Stateless.
 */
public final class NativeOrder {
  /** Whether native values are little-endian (x86, ARM in its usual mode). */
  public static final boolean LITTLE = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

  private NativeOrder() {}

  public static short getShort(ByteBuf b, int index) {
    return LITTLE ? b.getShortLE(index) : b.getShort(index);
  }

  public static void setShort(ByteBuf b, int index, int v) {
    if (LITTLE) {
      b.setShortLE(index, v);
    } else {
      b.setShort(index, v);
    }
  }

  public static int getInt(ByteBuf b, int index) {
    return LITTLE ? b.getIntLE(index) : b.getInt(index);
  }

  public static void setInt(ByteBuf b, int index, int v) {
    if (LITTLE) {
      b.setIntLE(index, v);
    } else {
      b.setInt(index, v);
    }
  }

  public static long getLong(ByteBuf b, int index) {
    return LITTLE ? b.getLongLE(index) : b.getLong(index);
  }

  public static void setLong(ByteBuf b, int index, long v) {
    if (LITTLE) {
      b.setLongLE(index, v);
    } else {
      b.setLong(index, v);
    }
  }

  public static float getFloat(ByteBuf b, int index) {
    return Float.intBitsToFloat(getInt(b, index));
  }

  public static void setFloat(ByteBuf b, int index, float v) {
    setInt(b, index, Float.floatToRawIntBits(v));
  }

  public static double getDouble(ByteBuf b, int index) {
    return Double.longBitsToDouble(getLong(b, index));
  }

  public static void setDouble(ByteBuf b, int index, double v) {
    setLong(b, index, Double.doubleToRawLongBits(v));
  }
}
