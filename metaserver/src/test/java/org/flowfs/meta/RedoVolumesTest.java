package org.flowfs.meta;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mapdb.DB;
import org.mapdb.DBException;
import org.mapdb.Serializer;

/** MapDB's transactional store over the redo volume: commits, rollback, and its header. */
class RedoVolumesTest {
  @TempDir
  Path dir;

  private Path file() {
    return dir.resolve("meta.db");
  }

  private static Map<String, String> table(DB db) {
    return db.treeMap("t", Serializer.STRING, Serializer.STRING).createOrOpen();
  }

  private static int headerChecksum(RedoVolumes.Opened o) {
    return o.volume().getInt(RedoVolumes.HEADER_CHECKSUM);
  }

  private static int features(RedoVolumes.Opened o) {
    return o.volume().getInt(RedoVolumes.HEADER_FEATURES);
  }

  /** A store holding a=1, with header checksums, as earlier versions wrote it. */
  private void writeLegacyStore() throws IOException {
    RedoVolumes.Opened legacy = RedoVolumes.open(file(), Duration.ZERO, true);
    table(legacy.db()).put("a", "1");
    legacy.db().commit();
    assertNotEquals(0, headerChecksum(legacy), "a store as earlier versions wrote it");
    assertEquals(1, features(legacy) & 1);
    legacy.db().close();
  }

  @Test
  void commitsAndRollbacks_surviveReopen_withoutAHeaderChecksum() throws IOException {
    RedoVolumes.Opened o = RedoVolumes.open(file(), Duration.ZERO);
    Map<String, String> t = table(o.db());
    for (int i = 0; i < 100; i++) {
      t.put("k" + i, "v" + i);
      o.db().commit();
    }
    t.put("gone", "x");
    t.put("k0", "changed");
    o.db().rollback(); // MapDB's log in memory still takes a rollback back to the last commit
    assertNull(t.get("gone"));
    assertEquals("v0", t.get("k0"));
    assertEquals(0, headerChecksum(o));
    assertEquals(0, features(o) & 1);
    o.db().close();

    RedoVolumes.Opened again = RedoVolumes.open(file(), Duration.ZERO);
    Map<String, String> back = table(again.db());
    assertEquals(100, back.size());
    assertEquals("v99", back.get("k99"));
    again.db().close();
  }

  @Test
  void storeWithHeaderChecksum_isVerifiedOnce_thenOpensWithout() throws IOException {
    writeLegacyStore();

    RedoVolumes.Opened o = RedoVolumes.open(file(), Duration.ZERO);
    assertEquals("1", table(o.db()).get("a"));
    assertEquals(0, headerChecksum(o));
    assertEquals(0, features(o) & 1);
    table(o.db()).put("b", "2");
    o.db().commit();
    o.db().close();

    RedoVolumes.Opened again = RedoVolumes.open(file(), Duration.ZERO);
    assertEquals("1", table(again.db()).get("a"));
    assertEquals("2", table(again.db()).get("b"));
    again.db().close();
  }

  @Test
  void storeWithBrokenHeaderChecksum_isRefused() throws IOException {
    writeLegacyStore();
    RedoVolume v = RedoVolume.open(file(), Duration.ZERO);
    v.putInt(RedoVolumes.HEADER_CHECKSUM, v.getInt(RedoVolumes.HEADER_CHECKSUM) + 1);
    v.sync();
    v.close();

    assertThrows(DBException.DataCorruption.class, () -> RedoVolumes.open(file(), Duration.ZERO));
    RedoVolume still = RedoVolume.open(file(), Duration.ZERO); // refused, and the volume was let go
    assertNotEquals(0, still.getInt(RedoVolumes.HEADER_CHECKSUM), "nothing cleared");
    still.close();
  }
}
