package org.flowfs.common.datarep;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.HexFormat;
import org.flowfs.common.request.Request;
import org.junit.jupiter.api.Test;

/** external32 conversions against bytes computed by hand from the MPI standard's definition. */
class External32Test {
  private final Datarep ext = new DatarepRegistry().get(Datarep.EXTERNAL32);

  private static byte[] hex(String s) {
    return HexFormat.of().parseHex(s.replace(" ", ""));
  }

  private byte[] write(ByteBuf mem, Request type, int count) {
    ByteBuf file = Unpooled.buffer();
    ext.writeConversion(mem, type, count, file, 0);
    byte[] out = new byte[file.readableBytes()];
    file.readBytes(out);
    return out;
  }

  @Test
  void int32_isBigEndianTwosComplement() {
    ByteBuf mem = Unpooled.buffer(12, 12);
    NativeOrder.setInt(mem, 0, 0x01020304);
    NativeOrder.setInt(mem, 4, -2);
    NativeOrder.setInt(mem, 8, Integer.MIN_VALUE);
    assertArrayEquals(hex("01020304 FFFFFFFE 80000000"), write(mem, Request.INT32, 3));
  }

  @Test
  void int64_isBigEndianTwosComplement() {
    ByteBuf mem = Unpooled.buffer(16, 16);
    NativeOrder.setLong(mem, 0, 0x0102030405060708L);
    NativeOrder.setLong(mem, 8, -256);
    assertArrayEquals(hex("0102030405060708 FFFFFFFFFFFFFF00"), write(mem, Request.INT64, 2));
  }

  @Test
  void float_isBigEndianIeeeSingle() {
    ByteBuf mem = Unpooled.buffer(12, 12);
    NativeOrder.setFloat(mem, 0, 1.0f);
    NativeOrder.setFloat(mem, 4, -2.5f);
    NativeOrder.setFloat(mem, 8, 0.1f);
    // 1.0 = 0x3F800000, -2.5 = 0xC0200000, 0.1f = 0x3DCCCCCD
    assertArrayEquals(hex("3F800000 C0200000 3DCCCCCD"), write(mem, Request.FLOAT, 3));
  }

  @Test
  void double_isBigEndianIeeeDouble() {
    ByteBuf mem = Unpooled.buffer(16, 16);
    NativeOrder.setDouble(mem, 0, 1.0);
    NativeOrder.setDouble(mem, 8, 0.1);
    assertArrayEquals(hex("3FF0000000000000 3FB999999999999A"), write(mem, Request.DOUBLE, 2));
  }

  @Test
  void struct_packsItsFieldsWithoutPadding_andReadsBack() {
    // struct { int32 a; (pad 4) int64 b; float c; (pad 4) double d; } in memory, 32-byte extent
    Request s = Request.struct(new long[] {1, 1, 1, 1}, new long[] {0, 8, 16, 24},
        Request.INT32, Request.INT64, Request.FLOAT, Request.DOUBLE);
    ByteBuf mem = Unpooled.buffer(64, 64);
    for (int k = 0; k < 2; k++) {
      NativeOrder.setInt(mem, 32 * k, 7 + k);
      NativeOrder.setLong(mem, 32 * k + 8, -3 - k);
      NativeOrder.setFloat(mem, 32 * k + 16, 1.5f);
      NativeOrder.setDouble(mem, 32 * k + 24, -0.5);
    }
    byte[] expected = hex("00000007 FFFFFFFFFFFFFFFD 3FC00000 BFE0000000000000"
        + "00000008 FFFFFFFFFFFFFFFC 3FC00000 BFE0000000000000");
    assertArrayEquals(expected, write(mem, s, 8));

    ByteBuf back = Unpooled.buffer(64, 64).writeZero(64);
    ext.readConversion(back, s, 8, Unpooled.wrappedBuffer(expected), 0);
    for (int k = 0; k < 2; k++) {
      assertEquals(7 + k, NativeOrder.getInt(back, 32 * k));
      assertEquals(-3 - k, NativeOrder.getLong(back, 32 * k + 8));
      assertEquals(1.5f, NativeOrder.getFloat(back, 32 * k + 16));
      assertEquals(-0.5, NativeOrder.getDouble(back, 32 * k + 24));
      assertEquals(0, back.getInt(32 * k + 4), "padding is not touched");
    }
  }

  @Test
  void conversionInChunks_resumesAtThePosition() {
    Request s = Request.struct(new long[] {1, 1}, new long[] {0, 4}, Request.INT16, Request.INT32);
    ByteBuf mem = Unpooled.buffer(24, 24);
    for (int k = 0; k < 3; k++) {
      NativeOrder.setShort(mem, 8 * k, 0x0102 + k);
      NativeOrder.setInt(mem, 8 * k + 4, 0x0A0B0C0D + k);
    }
    ByteBuf whole = Unpooled.buffer();
    ext.writeConversion(mem, s, 6, whole, 0);
    ByteBuf chunks = Unpooled.buffer();
    ext.writeConversion(mem, s, 1, chunks, 0);
    ext.writeConversion(mem, s, 3, chunks, 1);
    ext.writeConversion(mem, s, 2, chunks, 4);
    assertEquals(whole, chunks);
    assertEquals(18, whole.readableBytes());
  }
}
