package org.flowfs.it.api;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.flowfs.client.Caller;
import org.flowfs.client.api.AccessMode;
import org.flowfs.client.api.FlowFile;
import org.flowfs.client.api.FlowIo;
import org.flowfs.client.api.Hints;
import org.flowfs.client.api.Memory;
import org.flowfs.client.api.View;
import org.flowfs.common.datarep.Datarep;
import org.flowfs.common.datarep.DuplicateDatarepException;
import org.flowfs.common.datarep.NativeOrder;
import org.flowfs.common.request.Request;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Datareps through real files: external32's exact bytes, a user datarep, chunked conversion. */
class DatarepIoTest {
  static ApiCluster c;
  static final AtomicInteger files = new AtomicInteger();
  static final EnumSet<AccessMode> NEW = EnumSet.of(AccessMode.CREATE, AccessMode.READ_WRITE, AccessMode.DELETE_ON_CLOSE);
  static final DecimalDatarep.Log decimalLog = new DecimalDatarep.Log();

  @BeforeAll
  static void up(@TempDir Path dir) throws Exception {
    c = new ApiCluster(dir);
    DecimalDatarep.register(c.io.datareps(), "decimal", decimalLog);
  }

  @AfterAll
  static void down() {
    if (c != null) {
      c.close();
    }
  }

  static byte[] hex(String s) {
    return HexFormat.of().parseHex(s.replace(" ", ""));
  }

  /** The whole file, raw. */
  static byte[] raw(FlowFile f) {
    View v = f.view();
    f.setView(View.BYTES);
    byte[] out = new byte[(int) f.size()];
    f.readAt(0, Memory.of(out, out.length, Request.BYTE));
    f.setView(v);
    return out;
  }

  FlowFile create() {
    return c.io.open("/rep-" + files.incrementAndGet(), NEW, Hints.of(Hints.STRIPING_UNIT, "16"));
  }

  @Test
  void external32_int32_int64_float_double_haveTheStandardsBytes() {
    try (FlowFile f = create()) {
      f.setView(View.of(0, Request.BYTE, Request.BYTE, Datarep.EXTERNAL32));
      ByteBuf m = Unpooled.buffer(48, 48).writeZero(48);
      NativeOrder.setInt(m, 0, 0x01020304);
      NativeOrder.setInt(m, 4, -2);
      NativeOrder.setLong(m, 8, 0x0102030405060708L);
      NativeOrder.setLong(m, 16, -256);
      NativeOrder.setFloat(m, 24, 1.0f);
      NativeOrder.setFloat(m, 28, -2.5f);
      NativeOrder.setDouble(m, 32, 1.0);
      NativeOrder.setDouble(m, 40, 0.1);
      f.write(Memory.of(m.slice(0, 8), 2, Request.INT32));
      f.write(Memory.of(m.slice(8, 16), 2, Request.INT64));
      f.write(Memory.of(m.slice(24, 8), 2, Request.FLOAT));
      f.write(Memory.of(m.slice(32, 16), 2, Request.DOUBLE));
      byte[] want = hex("01020304 FFFFFFFE"                             // int32 1020304h, -2
          + "0102030405060708 FFFFFFFFFFFFFF00"                          // int64, -256
          + "3F800000 C0200000"                                           // float 1.0, -2.5
          + "3FF0000000000000 3FB999999999999A");                        // double 1.0, 0.1
      assertArrayEquals(want, raw(f));

      ByteBuf back = Unpooled.buffer(48, 48).writeZero(48);
      f.readAt(0, Memory.of(back.slice(0, 8), 2, Request.INT32));
      f.readAt(8, Memory.of(back.slice(8, 16), 2, Request.INT64));
      f.readAt(24, Memory.of(back.slice(24, 8), 2, Request.FLOAT));
      f.readAt(32, Memory.of(back.slice(32, 16), 2, Request.DOUBLE));
      assertEquals(m, back, "external32 reads back to the native values");
    }
  }

  @Test
  void external32_structOfThem_isPackedBigEndianWithoutMemoryPadding() {
    // struct { int32 a; /* 4 bytes padding */ int64 b; float c; /* 4 */ double d; }: 32 bytes in memory
    Request s = Request.struct(new long[] {1, 1, 1, 1}, new long[] {0, 8, 16, 24},
        Request.INT32, Request.INT64, Request.FLOAT, Request.DOUBLE);
    ByteBuf m = Unpooled.buffer(64, 64).writeZero(64);
    for (int k = 0; k < 2; k++) {
      NativeOrder.setInt(m, 32 * k, 7 + k);
      NativeOrder.setLong(m, 32 * k + 8, -3 - k);
      NativeOrder.setFloat(m, 32 * k + 16, 1.5f);
      NativeOrder.setDouble(m, 32 * k + 24, -0.5);
      m.setInt(32 * k + 4, 0xDEADBEEF); // padding must not reach the file
    }
    try (FlowFile f = create()) {
      f.setView(View.of(0, Request.BYTE, Request.BYTE, Datarep.EXTERNAL32));
      assertEquals(48, f.writeAt(0, Memory.of(m, 2, s)), "data bytes: no padding");
      byte[] want = hex(
          "00000007 FFFFFFFFFFFFFFFD 3FC00000 BFE0000000000000"    // 7, -3, 1.5f, -0.5
        + "00000008 FFFFFFFFFFFFFFFC 3FC00000 BFE0000000000000");  // 8, -4, 1.5f, -0.5
      assertArrayEquals(want, raw(f));
      ByteBuf back = Unpooled.buffer(64, 64).writeZero(64);
      assertEquals(48, f.readAt(0, Memory.of(back, 2, s)));
      for (int k = 0; k < 2; k++) {
        assertEquals(7 + k, NativeOrder.getInt(back, 32 * k));
        assertEquals(-3 - k, NativeOrder.getLong(back, 32 * k + 8));
        assertEquals(1.5f, NativeOrder.getFloat(back, 32 * k + 16));
        assertEquals(-0.5, NativeOrder.getDouble(back, 32 * k + 24));
        assertEquals(0, back.getInt(32 * k + 4));
      }
    }
  }

  @Test
  void userDatarep_decimalText_roundTrips_andLaysTheViewOutInFileExtents() {
    int[] values = {1, -42, Integer.MAX_VALUE, Integer.MIN_VALUE, 0, 12345};
    ByteBuf m = Unpooled.buffer(24, 24).writeZero(24);
    for (int i = 0; i < values.length; i++) {
      NativeOrder.setInt(m, 4 * i, values[i]);
    }
    try (FlowFile f = create()) {
      // every other int: in the file, every other 11-byte field (vector strides scale with the extent)
      f.setView(View.of(5, Request.INT32, Request.vector(2, 1, 2, Request.INT32), "decimal"));
      assertEquals(24, f.write(Memory.of(m, 6, Request.INT32)));
      assertEquals(6, f.position());
      byte[] file = raw(f);
      // tiles of 33 bytes from byte 5; fields at 0 and 22 of each
      StringBuilder text = new StringBuilder();
      for (int k = 0; k < 6; k++) {
        int at = 5 + 33 * (k / 2) + 22 * (k % 2);
        text.append(new String(file, at, 11, StandardCharsets.US_ASCII)).append('|');
      }
      assertEquals("          1|        -42| 2147483647|-2147483648|          0|      12345|", text.toString());
      assertEquals(0, file[5 + 11], "the gaps of the view are holes");
      assertEquals(5 + 33 * 2 + 22 + 11, file.length);

      ByteBuf back = Unpooled.buffer(24, 24).writeZero(24);
      assertEquals(24, f.readAt(0, Memory.of(back, 6, Request.INT32)));
      assertEquals(m, back);
      assertEquals(8, f.readAt(4, Memory.of(back, 6, Request.INT32)), "a read stops at the end: whole values only");
    }
  }

  @Test
  void userDatarep_withASmallBuffer_convertsInChunksAtIncreasingPositions() {
    DecimalDatarep.Log log = new DecimalDatarep.Log();
    FlowIo io = FlowIo.over(c.client, Caller.ROOT);
    try {
      DecimalDatarep.register(io.datareps(), "decimal", log);
      int n = 20;
      // noncontiguous memory: the ints are every other int of the buffer
      Request memType = Request.resized(0, 8, Request.INT32);
      ByteBuf m = Unpooled.buffer(8 * n, 8 * n).writeZero(8 * n);
      for (int i = 0; i < n; i++) {
        NativeOrder.setInt(m, 8 * i, i * i - 50);
      }
      try (FlowFile f = io.open("/rep-" + files.incrementAndGet(), NEW, Hints.of(Hints.DATAREP_BUFFER_SIZE, "50"))) {
        f.setView(View.of(0, Request.INT32, Request.INT32, "decimal"));
        f.writeAt(3, Memory.of(m, n, memType));
        ByteBuf back = Unpooled.buffer(8 * n, 8 * n).writeZero(8 * n);
        assertEquals(4L * n, f.readAtAsync(3, Memory.of(back, n, memType)).join());
        for (int i = 0; i < n; i++) {
          assertEquals(i * i - 50, NativeOrder.getInt(back, 8 * i));
        }
        assertEquals(11 * (3 + n), f.size());
      }
      for (boolean write : new boolean[] {true, false}) {
        List<DecimalDatarep.Call> calls = new ArrayList<>();
        log.calls.stream().filter(k -> k.write() == write).forEach(calls::add);
        assertTrue(calls.size() >= 5, "a 50-byte buffer holds 4 values: " + calls);
        long next = 0;
        for (DecimalDatarep.Call k : calls) {
          assertEquals(next, k.position(), "each call continues where the last stopped: " + calls);
          assertTrue(k.count() >= 1 && k.count() * 11 <= 50, "each chunk fits the buffer: " + k);
          next += k.count();
        }
        assertEquals(n, next, "every value converted once");
      }
      assertTrue(decimalLog.calls.stream().noneMatch(k -> k.count() == 0));
    } finally {
      io.close();
    }
  }

  @Test
  void registeringANameTwice_failsWithTheDuplicateDatarepError_andRegistriesAreSeparate() {
    DuplicateDatarepException e = assertThrows(DuplicateDatarepException.class,
        () -> DecimalDatarep.register(c.io.datareps(), "decimal", new DecimalDatarep.Log()));
    assertEquals("decimal", e.datarep());
    assertThrows(DuplicateDatarepException.class, () -> c.io.datareps().register("native", null, null, (t, s) -> (long) t.size(), null));
    FlowIo other = FlowIo.over(c.client, Caller.ROOT);
    try (FlowFile f = other.open("/rep-" + files.incrementAndGet(), NEW, Hints.NONE)) {
      assertFalse(other.datareps().contains("decimal"));
      assertThrows(IllegalArgumentException.class, () -> f.setView(View.of(0, Request.INT32, Request.INT32, "decimal")));
      assertEquals(View.BYTES, f.view(), "a failed setView leaves the view");
    } finally {
      other.close();
    }
  }
}
