package org.flowfs.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The benchmark's smoke run, in every CI run so that the suite cannot rot: every workload on every
 * system, tiny sizes, one repetition; every row gets a figure from every system it applies to, and
 * the table, JSON and chart are written; the scale workload runs with 1 and 2 I/O servers in
 * network namespaces, and the soak samples every FlowFS process throughout. The figures themselves
 * are not judged here: targets live in the full run, not in tests.
 */
class BenchSmokeTest {
  @Test
  void smokeRun_producesEveryFigure(@TempDir Path tmp) throws Exception {
    Bench b = new Bench();
    b.work = Path.of("/var/tmp/flowfs-bench-smoke");
    b.smoke = true; // one warm-up round per group: figures are not what this checks
    Workloads.Sizes tiny = new Workloads.Sizes(8, 2, 4, 1, 50, 50, "/usr/include/linux/netfilter", 8, 8, List.of(1, 2), 10);
    List<String> groups = new java.util.ArrayList<>(Workloads.GROUPS);
    groups.addAll(List.of("api", "protocols", "scale", "soak"));
    Report r = b.run(tiny, 1, 1, groups); // one warm-up repetition, not counted
    for (Report.Row row : Report.ROWS) {
      assertNotNull(r.median(row.name(), "flowfs"), "no FlowFS figure for " + row.name());
      if (!Report.flowfsOnly(row)) {
        assertNotNull(r.median(row.name(), "bindfs"), "no bindfs figure for " + row.name());
        assertNotNull(r.median(row.name(), "local"), "no local figure for " + row.name());
      }
      if (row.minVsNull() > 0) {
        assertNotNull(r.median(row.name(), "nullfuse"), "no store-nothing figure for " + row.name());
      }
      assertTrue(r.median(row.name(), "flowfs") > 0, row.name());
      assertEquals(1, r.count(row.name(), "flowfs"), "the warm-up's figure is not counted: " + row.name());
    }
    for (int n : List.of(1, 2)) {
      assertTrue(r.median("scale-" + n + "-write", "flowfs") > 0, "scale write with " + n + " I/O servers");
      assertTrue(r.median("scale-" + n + "-read", "flowfs") > 0, "scale read with " + n + " I/O servers");
    }
    assertNotNull(r.soak(), "no soak result");
    assertTrue(r.soak().rounds() > 0, "the soak ran no round");
    r.soak().rssMib().forEach((process, samples) -> {
      assertEquals(SoakWorkload.SAMPLES + 1, samples.size(), process + ": " + samples);
      assertTrue(samples.stream().allMatch(v -> v > 0), process + " was not alive throughout the soak: " + samples);
    });
    assertTrue(r.soak().rssMib().containsKey("mount"), r.soak().rssMib().toString());
    assertTrue(r.disk("write") > 0 && r.disk("read") > 0, "what the disk gives by itself, measured beside the local rows");
    assertTrue(r.table().contains("the disk itself"), r.table());
    assertTrue(r.table().contains("scale:"), r.table());
    assertTrue(r.table().contains("soak target"), r.table());
    Workloads.sh(Path.of("/"), "test -z \"$(ip netns list | grep ffsb-io)\"");
    r.write(tmp);
    assertTrue(Files.readString(tmp.resolve("results.json")).contains("\"seq-write\""));
    assertTrue(Files.readString(tmp.resolve("results.svg")).startsWith("<svg"));
    assertTrue(r.table().contains("peak RSS"), r.table());
    Workloads.sh(Path.of("/"), "rm -rf /var/tmp/flowfs-bench-smoke");
  }
}
