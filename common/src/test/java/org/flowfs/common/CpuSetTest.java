package org.flowfs.common;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class CpuSetTest {
  @Test
  void parse_listsAndRanges_writtenBackTheKernelsWay() {
    assertEquals("1", CpuSet.parse("1").toString());
    assertEquals("0,2", CpuSet.parse("2,0").toString());
    assertEquals("2-3,6", CpuSet.parse(" 2-3 , 6 ").toString());
    assertEquals("0-4", CpuSet.parse("0-1,2,3-4").toString());
    assertEquals("5", CpuSet.parse("5-5").toString());
    assertEquals("", CpuSet.parse("  ").toString());
    assertTrue(CpuSet.parse("").isEmpty());
    assertEquals(CpuSet.parse("0-2"), CpuSet.parse("2,1,0"));
  }

  @Test
  void parse_bad_saysWhat() {
    for (String bad : new String[] {"a", "1,", ",1", "1-", "-1", "1--2", "1.5", "0x1", "1 2"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CpuSet.parse(bad), bad);
      assertTrue(e.getMessage().contains("is not a CPU list"), e::getMessage);
    }
    assertTrue(assertThrows(IllegalArgumentException.class, () -> CpuSet.parse("4-2")).getMessage().contains("ends before it starts"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> CpuSet.parse("1024")).getMessage().contains("beyond the 1024"));
  }

  @Test
  void mask_isTheKernelsCpuSet_andBack() {
    CpuSet s = CpuSet.parse("0,63-64,1023");
    long[] m = s.mask();
    assertEquals(16, m.length); // 1024 bits: sizeof(cpu_set_t)
    assertEquals(1L | 1L << 63, m[0]);
    assertEquals(1L, m[1]);
    assertEquals(1L << 63, m[15]);
    assertEquals(s, CpuSet.ofMask(m));
    assertArrayEquals(new long[16], CpuSet.EMPTY.mask());
  }

  @Test
  void setOperations() {
    CpuSet s = CpuSet.parse("0-3");
    assertEquals("1-2", s.without(CpuSet.parse("0,3,7")).toString());
    assertEquals(3, s.last());
    assertEquals(4, s.size());
    assertTrue(s.contains(2));
    assertFalse(s.contains(4));
  }

  /** This thread's CPUs as the kernel reports them: what Cpus_allowed_list in /proc says. */
  @Test
  void current_isWhatProcSays() throws Exception {
    String line = java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/thread-self/status")).stream()
        .filter(l -> l.startsWith("Cpus_allowed_list:")).findFirst().orElseThrow();
    assertEquals(CpuSet.parse(line.substring(line.indexOf(':') + 1)), ServiceCpus.current());
  }
}
