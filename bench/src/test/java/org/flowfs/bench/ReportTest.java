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

  @Test
  void asked_isTheStrictestTargetInMbps_andTheTableSetsItAgainstTheDisk() {
    Report r = new Report();
    add(r, "seq-read", 900, 1000, 1100);
    r.add("bindfs", new Workloads.Result("seq-read", 1200));
    r.add("nullfuse", new Workloads.Result("seq-read", 3000));
    add(r, "seq-write", 1000);
    r.add("bindfs", new Workloads.Result("seq-write", 500));
    r.add("nullfuse", new Workloads.Result("seq-write", 1000));
    add(r, "mount-write", 1000);
    add(r, "api-write", 1200);
    add(r, "rand-read-iops", 5000);
    r.add("bindfs", new Workloads.Result("rand-read-iops", 5000));
    assertEquals(2700, r.asked(row("seq-read")), 1e-9, "0.9x nullfuse is stricter than 0.8x bindfs");
    assertEquals(900, r.asked(row("seq-write")), 1e-9);
    assertEquals(1500, r.asked(row("api-write")), 1e-9, "1.5x the mount");
    assertNull(r.asked(row("rand-read-iops")), "not in MB/s");
    assertNull(r.asked(row("mount-write")), "no target");
    assertNull(r.disk("read"));
    assertFalse(r.table().contains("the disk itself"), "no disk figures, no disk section");
    r.add("local", new Workloads.Result("disk-write", 2000));
    r.add("local", new Workloads.Result("disk-read", 2000));
    String t = r.table();
    assertTrue(t.contains("the disk itself"), t);
    assertTrue(t.contains("seq-read         asks   2700 MB/s, 1.35x the disk's read: more than the disk gives"), t);
    assertTrue(t.contains("seq-write        asks    900 MB/s, 0.45x the disk's write\n"), t);
    assertTrue(t.contains("api-write        asks   1500 MB/s, 0.75x the disk's write\n"), t);
    assertTrue(r.json().contains("\"diskMBps\": {\"write\": 2000.0, \"read\": 2000.0, \"values\": {\"write\": [2000.0], \"read\": [2000.0]}}"), r.json());
  }
}
