package org.flowfs.meta;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.NavigableMap;
import org.flowfs.common.Errno;
import org.flowfs.common.FileType;
import org.flowfs.common.FsException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mapdb.DB;
import org.mapdb.DBMaker;

/** Key layout, and that MapDB orders and ranges byte-array keys as the namespace needs. */
class KeysTest {
  @TempDir
  Path dir;

  @Test
  void keysOfOneHandle_sortBetweenFirstAndEnd() {
    long h = 0x0000_1234_5678_9AL;
    byte[] k = Keys.of(h, "name".getBytes(StandardCharsets.UTF_8));
    assertTrue(Arrays.compareUnsigned(Keys.first(h), k) < 0);
    assertTrue(Arrays.compareUnsigned(k, Keys.end(h)) < 0);
    assertTrue(Arrays.compareUnsigned(Keys.end(h), Keys.of(h + 1, new byte[] {0})) < 0);
    assertTrue(Arrays.compareUnsigned(Keys.of(h, new byte[] {(byte) 0xFF}), Keys.end(h)) < 0);
    assertEquals("name", Keys.name(k));
    // UTF-8 has no 0xFF byte, so 0xFF after the last handle is above all its names
    assertTrue(Arrays.compareUnsigned(Keys.of(-1L, Keys.utf8("\uFFFF\uDBFF\uDFFF")), Keys.end(-1L)) < 0);
  }

  @Test
  void entryValue_roundTrips() {
    byte[] v = Keys.entry(0x7FFF_0000_0000_0001L, FileType.SOCKET);
    assertEquals(0x7FFF_0000_0000_0001L, Keys.entryHandle(v));
    assertEquals(FileType.SOCKET, Keys.entryType(v));
  }

  @Test
  void utf8_refusesUnpairedSurrogates() {
    assertArrayEquals("\uD83D\uDE00".getBytes(StandardCharsets.UTF_8), Keys.utf8("\uD83D\uDE00"));
    assertEquals(Errno.EINVAL, assertThrows(FsException.class, () -> Keys.utf8("a\uDE00")).errno());
    assertEquals(Errno.EINVAL, assertThrows(FsException.class, () -> Keys.utf8("\uD83Dz")).errno());
  }

  /** What the design relies on: Serializer.BYTE_ARRAY compares unsigned, and subMap ranges work. */
  @Test
  void mapdbByteArrayKeys_unsignedOrderAndRanges() {
    DB db = DBMaker.fileDB(dir.resolve("k.db").toFile()).transactionEnable().fileChannelEnable().make();
    try {
      Tables t = new MapDbTables(db);
      NavigableMap<byte[], byte[]> m = t.entries();
      List<String> names = List.of("z", "a", "\u00e9", "\u65e5", "B", "\uD83D\uDE00");
      for (long h : new long[] {5, 6, 4}) {
        for (String n : names) {
          m.put(Keys.of(h, Keys.utf8(n)), Keys.entry(h, FileType.REGULAR));
        }
      }
      List<String> got = new ArrayList<>();
      for (byte[] k : m.subMap(Keys.first(5), false, Keys.end(5), false).keySet()) {
        got.add(Keys.name(k));
      }
      List<String> expected = new ArrayList<>(names);
      expected.sort((x, y) -> Arrays.compareUnsigned(Keys.utf8(x), Keys.utf8(y)));
      assertEquals(expected, got);
      assertEquals(List.of("B", "a", "z", "\u00e9", "\u65e5", "\uD83D\uDE00"), got);
      m.subMap(Keys.first(5), false, Keys.end(5), false).clear();
      assertEquals(2 * names.size(), m.size());
      assertTrue(m.subMap(Keys.first(5), false, Keys.end(5), false).isEmpty());
      db.commit();
    } finally {
      db.close();
    }
  }
}
