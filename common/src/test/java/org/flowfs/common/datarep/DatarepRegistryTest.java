package org.flowfs.common.datarep;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import org.flowfs.common.request.Elementary;
import org.junit.jupiter.api.Test;

class DatarepRegistryTest {
  @Test
  void newRegistry_knowsNativeAndExternal32() {
    DatarepRegistry r = new DatarepRegistry();
    assertEquals(Set.of("native", "external32"), r.names());
    assertFalse(r.get("native").convertsWrites());
    assertTrue(r.get("external32").convertsReads());
    assertEquals(8, r.get("external32").fileExtent(Elementary.DOUBLE));
  }

  @Test
  void register_twice_failsWithDuplicateDatarep_andKeepsTheFirst() {
    DatarepRegistry r = new DatarepRegistry();
    Datarep first = r.register("text", (u, d, c, f, p, s) -> {}, (u, d, c, f, p, s) -> {}, (e, s) -> 11L, "state");
    DuplicateDatarepException e = assertThrows(DuplicateDatarepException.class,
        () -> r.register("text", (u, d, c, f, p, s) -> {}, (u, d, c, f, p, s) -> {}, (t, s) -> 4L, null));
    assertEquals("text", e.datarep());
    assertSame(first, r.get("text"));
    assertThrows(DuplicateDatarepException.class, () -> r.register("external32", null, null, (t, s) -> (long) t.size(), null));
  }

  @Test
  void registries_areSeparateNamespaces() {
    DatarepRegistry a = new DatarepRegistry();
    DatarepRegistry b = new DatarepRegistry();
    a.register("mine", null, null, (t, s) -> (long) t.size(), null);
    assertTrue(a.contains("mine"));
    assertFalse(b.contains("mine"));
    assertThrows(IllegalArgumentException.class, () -> b.get("mine"));
  }

  @Test
  void extentFunction_getsTheExtraState() {
    DatarepRegistry r = new DatarepRegistry();
    Datarep d = r.register("scaled", (u, t, c, f, p, s) -> {}, (u, t, c, f, p, s) -> {}, (t, s) -> s * t.size(), 3L);
    assertEquals(12, d.fileExtent(Elementary.INT32));
  }

  @Test
  void nullConversion_requiresNativeSizes() {
    DatarepRegistry r = new DatarepRegistry();
    assertThrows(IllegalArgumentException.class, () -> r.register("bad", null, (u, t, c, f, p, s) -> {}, (t, s) -> 16L, null));
    assertFalse(r.contains("bad"));
  }
}
