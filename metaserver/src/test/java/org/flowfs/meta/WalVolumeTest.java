package org.flowfs.meta;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

class WalVolumeTest {
  @Test
  void reusedMemory_readsAsZeroes_likeANewArray() throws Exception {
    WalVolume.Spare spare = new WalVolume.Spare();
    WalVolume first = spare.newVolume();
    first.ensureAvailable(16);
    assertEquals(WalVolume.UNIT, first.length());
    first.putLong(0, 0x0102030405060708L);
    first.putInt(100, 7);
    first.putData(200, new byte[] {1, 2, 3}, 0, 3);
    first.putData(300, ByteBuffer.wrap(new byte[] {4, 5}));
    first.putByte(WalVolume.UNIT - 1, (byte) 9);
    assertEquals(0x0102030405060708L, first.getLong(0));
    assertEquals(7, first.getInt(100));
    byte[] three = new byte[3];
    first.getData(200, three, 0, 3);
    assertEquals(2, three[1]);
    assertEquals(5, first.getDataInput(301, 1).readByte());
    first.truncate(0); // what MapDB does before it closes a log
    assertEquals(0, first.getLong(0));
    first.close();
    assertTrue(first.isClosed());

    WalVolume second = spare.newVolume();
    assertEquals(0, second.length());
    second.ensureAvailable(WalVolume.UNIT);
    for (long o = 0; o < WalVolume.UNIT; o += 8) {
      assertEquals(0, second.getLong(o), "offset " + o);
    }
  }

  @Test
  void growsInWholeUnits_keepingWhatWasWritten() {
    WalVolume v = new WalVolume.Spare().newVolume();
    v.ensureAvailable(10);
    v.putLong(8, 42);
    v.ensureAvailable(3L * WalVolume.UNIT + 1);
    assertEquals(4L * WalVolume.UNIT, v.length());
    assertEquals(42, v.getLong(8));
    v.putLong(3L * WalVolume.UNIT, 43);
    v.truncate(WalVolume.UNIT + 5);
    assertEquals(2L * WalVolume.UNIT, v.length());
    assertEquals(42, v.getLong(8));
    v.ensureAvailable(4L * WalVolume.UNIT);
    assertEquals(0, v.getLong(3L * WalVolume.UNIT), "truncated bytes come back as zeroes");
  }
}
