package org.flowfs.bench;

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
 * the table, JSON and chart are written. The figures themselves are not judged here: targets live
 * in the full run, not in tests.
 */
class BenchSmokeTest {
  @Test
  void smokeRun_producesEveryFigure(@TempDir Path tmp) throws Exception {
    Bench b = new Bench();
    b.work = Path.of("/var/tmp/flowfs-bench-smoke");
    Workloads.Sizes tiny = new Workloads.Sizes(8, 2, 4, 1, 50, 50, "/usr/include/linux/netfilter", 8);
    List<String> groups = new java.util.ArrayList<>(Workloads.GROUPS);
    groups.add("api");
    Report r = b.run(tiny, 1, groups);
    for (Report.Row row : Report.ROWS) {
      assertNotNull(r.median(row.name(), "flowfs"), "no FlowFS figure for " + row.name());
      if (!row.name().startsWith("api-")) {
        assertNotNull(r.median(row.name(), "bindfs"), "no bindfs figure for " + row.name());
        assertNotNull(r.median(row.name(), "local"), "no local figure for " + row.name());
      }
      if (row.minVsNull() > 0) {
        assertNotNull(r.median(row.name(), "nullfuse"), "no store-nothing figure for " + row.name());
      }
      assertTrue(r.median(row.name(), "flowfs") > 0, row.name());
    }
    r.write(tmp);
    assertTrue(Files.readString(tmp.resolve("results.json")).contains("\"seq-write\""));
    assertTrue(Files.readString(tmp.resolve("results.svg")).startsWith("<svg"));
    assertTrue(r.table().contains("peak RSS"), r.table());
    Workloads.sh(Path.of("/"), "rm -rf /var/tmp/flowfs-bench-smoke");
  }
}
