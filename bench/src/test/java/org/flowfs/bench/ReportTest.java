package org.flowfs.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ReportTest {
  private static Report.Row row(String name) {
    return Report.ROWS.stream().filter(r -> r.name().equals(name)).findFirst().orElseThrow();
  }

  private static void add(Report r, String row, double... values) {
    for (double v : values) {
      r.add("flowfs", new Workloads.Result(row, v));
    }
  }

  @Test
  void apiRows_compareWithTheMountMeasuredInTheirGroup_elseTheSeqGroup() {
    Report r = new Report();
    add(r, "seq-read", 1000, 1000, 1000);
    add(r, "api-read", 1400, 1600, 1500);
    assertEquals(1.5, r.apiRatio(row("api-read")), 1e-9, "no mount rows: the seq group's read");
    assertTrue(r.met(row("api-read")));
    add(r, "mount-read", 1100, 1200, 900);
    assertEquals(1500.0 / 1100, r.apiRatio(row("api-read")), 1e-9, "the median read through the mount in the api group");
    assertFalse(r.met(row("api-read")));
    assertNull(r.apiRatio(row("api-write")), "no api-write figures");
    assertNull(r.met(row("mount-read")), "the mount rows have no target of their own");
  }
}
