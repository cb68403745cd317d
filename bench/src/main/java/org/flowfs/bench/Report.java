package org.flowfs.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The results of a run: every figure of every repetition, their medians per system, the ratios
 * FlowFS/bindfs and FlowFS/store-nothing, and whether each target of the performance issue holds.
 * Printed as a table, written as JSON and as an SVG chart.
 */
final class Report {
  /**
   * One row of the table.
   *
   * @param minVsBindfs the target: the least FlowFS-versus-bindfs ratio, oriented so that above
   *     1 means FlowFS is better (0: none)
   * @param minVsNull the same against the store-nothing Java FUSE file system (0: none)
   */
  record Row(String name, String unit, boolean higherBetter, double minVsBindfs, double minVsNull) {}

  static final List<Row> ROWS = List.of(
      new Row("seq-write", "MB/s", true, 0.8, 0.9),
      new Row("seq-read", "MB/s", true, 0.8, 0.9),
      new Row("par4-write", "MB/s", true, 0.8, 0.9),
      new Row("par4-read", "MB/s", true, 0.8, 0.9),
      new Row("rand-write-iops", "IOPS", true, 0.5, 0),
      new Row("rand-write-p99", "us", false, 0.5, 0),
      new Row("rand-read-iops", "IOPS", true, 0.5, 0),
      new Row("rand-read-p99", "us", false, 0.5, 0),
      new Row("small-create", "files/s", true, 0.5, 0),
      new Row("small-stat", "files/s", true, 0.5, 0),
      new Row("small-read", "files/s", true, 0.5, 0),
      new Row("small-unlink", "files/s", true, 0.5, 0),
      new Row("mkdir", "dirs/s", true, 0.5, 0),
      new Row("rmdir", "dirs/s", true, 0.5, 0),
      new Row("ls-l-cold", "entries/s", true, 0.5, 0),
      new Row("ls-l-warm", "entries/s", true, 0.5, 0),
      new Row("untar", "entries/s", true, 0.5, 0),
      new Row("find", "entries/s", true, 0.5, 0),
      new Row("diff-r", "entries/s", true, 0, 0),
      new Row("rm-rf", "entries/s", true, 0.5, 0),
      new Row("mount-write", "MB/s", true, 0, 0),
      new Row("mount-read", "MB/s", true, 0, 0),
      new Row("api-write", "MB/s", true, 0, 0),
      new Row("api-read", "MB/s", true, 0, 0),
      new Row("api-posix-write", "MB/s", true, 0, 0),
      new Row("api-posix-read", "MB/s", true, 0, 0),
      new Row("api-write-double_buffer", "MB/s", true, 0, 0),
      new Row("api-read-double_buffer", "MB/s", true, 0, 0),
      new Row("api-write-single_buffer", "MB/s", true, 0, 0),
      new Row("api-read-single_buffer", "MB/s", true, 0, 0));

  /** Rows measured on FlowFS alone: its client API, and its mount beside it in the api group. */
  static boolean flowfsOnly(Row row) {
    return row.name().startsWith("api-") || row.name().startsWith("mount-");
  }

  static final List<String> SYSTEMS = List.of("flowfs", "bindfs", "local", "nullfuse");

  private final Map<String, Map<String, List<Double>>> values = new LinkedHashMap<>();
  private final Map<String, String> notes = new LinkedHashMap<>();
  private Map<String, Long> memory = Map.of();
  private final List<Integer> scaleServers = new ArrayList<>();
  private SoakWorkload.Result soak;

  synchronized void add(String system, Workloads.Result r) {
    values.computeIfAbsent(r.row(), k -> new LinkedHashMap<>()).computeIfAbsent(system, k -> new ArrayList<>()).add(r.value());
  }

  void note(String key, String value) {
    notes.put(key, value);
  }

  void memory(Map<String, Long> peaksMib) {
    this.memory = peaksMib;
  }

  void scaleServers(List<Integer> counts) {
    scaleServers.clear();
    scaleServers.addAll(counts);
  }

  void soak(SoakWorkload.Result result) {
    this.soak = result;
  }

  SoakWorkload.Result soak() {
    return soak;
  }

  /** The scale target: the aggregate at least 0.85 x N x the link rate. */
  static final double SCALE_TARGET = 0.85;

  /** A scale figure as a fraction of N x the link rate. */
  Double scaleRatio(int n, String dir) {
    Double v = median("scale-" + n + "-" + dir, "flowfs");
    return v == null ? null : v / (n * ScaleWorkload.LINK_MBPS);
  }

  /** The memory target: every FlowFS server at most 512 MiB RSS, the mount at most 1 GiB; null without samples. */
  Boolean memoryMet() {
    Boolean ok = null;
    for (Map.Entry<String, Long> e : memory.entrySet()) {
      if (e.getKey().startsWith("flowfs/") || e.getKey().startsWith("scale/")) {
        long limit = e.getKey().endsWith("/mount") ? 1024 : 512;
        ok = (ok == null || ok) && e.getValue() <= limit;
      }
    }
    return ok;
  }

  /** How many figures {@code system} has for {@code row}. */
  int count(String row, String system) {
    return values.getOrDefault(row, Map.of()).getOrDefault(system, List.of()).size();
  }

  Double median(String row, String system) {
    List<Double> v = values.getOrDefault(row, Map.of()).get(system);
    if (v == null || v.isEmpty()) {
      return null;
    }
    List<Double> s = new ArrayList<>(v);
    Collections.sort(s);
    int n = s.size();
    return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
  }

  /** FlowFS's figure as a multiple of the other system's, oriented so that above 1 is better. */
  Double ratio(Row row, String other) {
    Double f = median(row.name(), "flowfs");
    Double o = median(row.name(), other);
    if (f == null || o == null || f == 0 || o == 0) {
      return null;
    }
    return row.higherBetter() ? f / o : o / f;
  }

  /**
   * The api rows (whatever the flow protocol) compare with FlowFS's own mount: the same size
   * through the mount in the api group ({@code mount-write}, {@code mount-read}), else the seq
   * group's figures.
   */
  Double apiRatio(Row row) {
    Double api = median(row.name(), "flowfs");
    Double mount = mountFigure(row);
    return api == null || mount == null || mount == 0 ? null : api / mount;
  }

  /** The figure through the mount an api row compares with ({@link #apiRatio}); null if none. */
  private Double mountFigure(Row row) {
    String way = "-" + way(row);
    Double mount = median("mount" + way, "flowfs");
    return mount != null ? mount : median("seq" + way, "flowfs");
  }

  /** "write" or "read": the direction a row measures. */
  private static String way(Row row) {
    return row.name().contains("-write") ? "write" : "read";
  }

  /**
   * What the disk gives by itself in {@code way} ("write" or "read"), in MB/s: the local system's
   * {@code disk-write} or {@code disk-read} ({@link Workloads#disk}); null if not measured.
   */
  Double disk(String way) {
    return median("disk-" + way, "local");
  }

  /**
   * What a row's strictest target asks of FlowFS, in MB/s: the larger of its multiples of bindfs
   * and of the store-nothing file system, or for an api row its multiple of the mount; null for
   * rows in other units, without a target, or without the figures.
   */
  Double asked(Row row) {
    if (!row.unit().equals("MB/s")) {
      return null;
    }
    if (row.name().startsWith("api-")) {
      Double mount = mountFigure(row);
      return mount == null || apiTarget(row) == 0 ? null : apiTarget(row) * mount;
    }
    double most = 0;
    Double b = median(row.name(), "bindfs");
    if (row.minVsBindfs() > 0 && b != null) {
      most = row.minVsBindfs() * b;
    }
    Double n = median(row.name(), "nullfuse");
    if (row.minVsNull() > 0 && n != null) {
      most = Math.max(most, row.minVsNull() * n);
    }
    return most > 0 ? most : null;
  }

  /**
   * The target of an api row against the mount: 1.5x for the typed API (and per flow protocol);
   * none for the POSIX-like calls in 1 MiB pieces, shown for what they cost.
   */
  static double apiTarget(Row row) {
    return row.name().startsWith("api-posix-") ? 0 : 1.5;
  }

  /** Whether a row's targets hold; null when it has none or lacks figures. */
  Boolean met(Row row) {
    if (row.name().startsWith("api-")) {
      Double r = apiRatio(row);
      return r == null || apiTarget(row) == 0 ? null : r >= apiTarget(row);
    }
    if (row.name().endsWith("-p99")) {
      Double r = ratio(row, "bindfs"); // bindfs p99 / flowfs p99; the target is flowfs <= 2x bindfs
      return r == null ? null : r >= 0.5;
    }
    Boolean ok = null;
    if (row.minVsBindfs() > 0) {
      Double r = ratio(row, "bindfs");
      if (r != null) {
        ok = r >= row.minVsBindfs();
      }
    }
    if (row.minVsNull() > 0) {
      Double r = ratio(row, "nullfuse");
      if (r != null) {
        ok = (ok == null || ok) && r >= row.minVsNull();
      }
    }
    return ok;
  }

  private static String num(Double d) {
    if (d == null) {
      return "-";
    }
    return d >= 100 ? String.format(Locale.ROOT, "%.0f", d) : String.format(Locale.ROOT, "%.2f", d);
  }

  String table() {
    StringBuilder sb = new StringBuilder();
    sb.append(String.format(Locale.ROOT, "%-16s %-10s %10s %10s %10s %10s %10s %10s  %s%n", "workload", "unit",
        "flowfs", "bindfs", "local", "nullfuse", "vs bindfs", "vs null", "target"));
    for (Row row : ROWS) {
      if (!values.containsKey(row.name())) {
        continue;
      }
      Boolean ok = met(row);
      String vsB = row.name().startsWith("api-") ? num(apiRatio(row)) + "*" : num(ratio(row, "bindfs"));
      sb.append(String.format(Locale.ROOT, "%-16s %-10s %10s %10s %10s %10s %10s %10s  %s%n", row.name(), row.unit(),
          num(median(row.name(), "flowfs")), num(median(row.name(), "bindfs")), num(median(row.name(), "local")),
          num(median(row.name(), "nullfuse")), vsB, num(ratio(row, "nullfuse")), ok == null ? "" : ok ? "met" : "NOT MET"));
    }
    sb.append("(ratios are medians, oriented so that above 1 means FlowFS is better; * api rows: FlowFS client API / FlowFS mount)\n");
    if (!scaleServers.isEmpty() && values.containsKey("scale-" + scaleServers.get(0) + "-write")) {
      sb.append(String.format(Locale.ROOT, "%nscale: client API, each I/O server in its own network namespace, each link %d Mbit/s (%.0f MB/s)%n",
          ScaleWorkload.LINK_MBIT, ScaleWorkload.LINK_MBPS));
      sb.append(String.format(Locale.ROOT, "%-8s %10s %10s %10s %10s %10s  %s%n", "servers", "write MB/s", "read MB/s", "N x link",
          "write/link", "read/link", "target (>= " + SCALE_TARGET + ")"));
      for (int n : scaleServers) {
        Double w = scaleRatio(n, "write");
        Double r = scaleRatio(n, "read");
        boolean ok = w != null && r != null && w >= SCALE_TARGET && r >= SCALE_TARGET;
        sb.append(String.format(Locale.ROOT, "%-8d %10s %10s %10s %10s %10s  %s%n", n, num(median("scale-" + n + "-write", "flowfs")),
            num(median("scale-" + n + "-read", "flowfs")), num(n * ScaleWorkload.LINK_MBPS), num(w), num(r), ok ? "met" : "NOT MET"));
      }
    }
    Double dw = disk("write");
    Double dr = disk("read");
    if (dw != null && dr != null) {
      sb.append(String.format(Locale.ROOT, "%nthe disk itself (fio, O_DIRECT, 1 MiB pieces, 4 in flight, where the systems keep their data):"
          + " write %s MB/s, read %s MB/s; what the targets ask of FlowFS against it:%n", num(dw), num(dr)));
      for (Row row : ROWS) {
        Double a = asked(row);
        if (a != null && values.containsKey(row.name())) {
          double d = way(row).equals("write") ? dw : dr;
          sb.append(String.format(Locale.ROOT, "  %-16s asks %6s MB/s, %.2fx the disk's %s%s%n", row.name(), num(a), a / d, way(row),
              a > d ? ": more than the disk gives" : ""));
        }
      }
    }
    if (!memory.isEmpty()) {
      sb.append("\npeak RSS (MiB): ");
      memory.forEach((k, v) -> sb.append(k).append('=').append(v).append(' '));
      Boolean ok = memoryMet();
      sb.append(ok == null ? "" : "\nmemory target (FlowFS servers <= 512 MiB, mount <= 1024 MiB, under every workload): "
          + (ok ? "met" : "NOT MET"));
      sb.append('\n');
    }
    if (soak != null) {
      sb.append(String.format(Locale.ROOT, "soak: %d s of mixed workloads on the mount (%d rounds); RSS MiB at each tenth, growth from tenth %d to the end:%n",
          soak.seconds(), soak.rounds(), SoakWorkload.MARK));
      soak.rssMib().forEach((k, v) -> sb.append(String.format(Locale.ROOT, "  %-12s %s  %+.1f%%%n", k, v, 100 * soak.growth(k))));
      sb.append("soak target (no growth: end within 10% of tenth ").append(SoakWorkload.MARK).append("): ")
          .append(soak.met() ? "met" : "NOT MET").append('\n');
    }
    notes.forEach((k, v) -> sb.append(k).append(": ").append(v).append('\n'));
    return sb.toString();
  }

  String json() {
    StringBuilder sb = new StringBuilder("{\n  \"notes\": {");
    int i = 0;
    for (Map.Entry<String, String> e : notes.entrySet()) {
      sb.append(i++ == 0 ? "" : ", ").append(q(e.getKey())).append(": ").append(q(e.getValue()));
    }
    sb.append("},\n  \"rows\": [");
    i = 0;
    for (Row row : ROWS) {
      if (!values.containsKey(row.name())) {
        continue;
      }
      sb.append(i++ == 0 ? "\n" : ",\n").append("    {\"workload\": ").append(q(row.name())).append(", \"unit\": ")
          .append(q(row.unit())).append(", \"higherIsBetter\": ").append(row.higherBetter()).append(", \"values\": {");
      int j = 0;
      for (String s : SYSTEMS) {
        List<Double> v = values.get(row.name()).get(s);
        if (v != null) {
          sb.append(j++ == 0 ? "" : ", ").append(q(s)).append(": ").append(v);
        }
      }
      sb.append("}, \"median\": {");
      j = 0;
      for (String s : SYSTEMS) {
        Double m = median(row.name(), s);
        if (m != null) {
          sb.append(j++ == 0 ? "" : ", ").append(q(s)).append(": ").append(m);
        }
      }
      Boolean ok = met(row);
      sb.append("}, \"ratioBindfs\": ").append(ratio(row, "bindfs")).append(", \"ratioNull\": ").append(ratio(row, "nullfuse"))
          .append(", \"ratioMount\": ").append(row.name().startsWith("api-") ? apiRatio(row) : null)
          .append(", \"asksMBps\": ").append(asked(row))
          .append(", \"met\": ").append(ok).append('}');
    }
    sb.append("\n  ],\n  \"scale\": {\"linkMBps\": ").append(ScaleWorkload.LINK_MBPS).append(", \"target\": ").append(SCALE_TARGET)
        .append(", \"servers\": [");
    i = 0;
    for (int n : scaleServers) {
      if (!values.containsKey("scale-" + n + "-write")) {
        continue;
      }
      sb.append(i++ == 0 ? "\n" : ",\n").append("    {\"n\": ").append(n)
          .append(", \"write\": ").append(values.get("scale-" + n + "-write").get("flowfs"))
          .append(", \"read\": ").append(values.get("scale-" + n + "-read").get("flowfs"))
          .append(", \"ratioWrite\": ").append(scaleRatio(n, "write"))
          .append(", \"ratioRead\": ").append(scaleRatio(n, "read")).append('}');
    }
    sb.append("]},\n  \"diskMBps\": {\"write\": ").append(disk("write")).append(", \"read\": ").append(disk("read"))
        .append(", \"values\": {\"write\": ").append(values.getOrDefault("disk-write", Map.of()).get("local"))
        .append(", \"read\": ").append(values.getOrDefault("disk-read", Map.of()).get("local"))
        .append("}},\n  \"peakRssMib\": {");
    i = 0;
    for (Map.Entry<String, Long> e : memory.entrySet()) {
      sb.append(i++ == 0 ? "" : ", ").append(q(e.getKey())).append(": ").append(e.getValue());
    }
    sb.append("},\n  \"memoryMet\": ").append(memoryMet());
    if (soak != null) {
      sb.append(",\n  \"soak\": {\"seconds\": ").append(soak.seconds()).append(", \"rounds\": ").append(soak.rounds())
          .append(", \"mark\": ").append(SoakWorkload.MARK).append(", \"met\": ").append(soak.met()).append(", \"rssMib\": {");
      i = 0;
      for (Map.Entry<String, List<Long>> e : soak.rssMib().entrySet()) {
        sb.append(i++ == 0 ? "" : ", ").append(q(e.getKey())).append(": ").append(e.getValue());
      }
      sb.append("}}");
    }
    return sb.append("\n}\n").toString();
  }

  private static String q(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  /** A bar chart of FlowFS/bindfs per row, with each target as a tick. */
  String svg() {
    List<Row> rows = ROWS.stream().filter(r -> values.containsKey(r.name())).toList();
    int rowH = 22;
    int left = 150;
    int width = 520;
    double max = 2.0;
    int h = rows.size() * rowH + 60;
    StringBuilder sb = new StringBuilder();
    sb.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">%n", left + width + 80, h));
    sb.append(String.format(Locale.ROOT, "<text x=\"10\" y=\"18\" font-size=\"14\">FlowFS / bindfs (medians; above 1 = FlowFS better; ticks = targets)</text>%n"));
    double x1 = left + width / max;
    sb.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"30\" x2=\"%.1f\" y2=\"%d\" stroke=\"#888\" stroke-dasharray=\"4\"/>%n", x1, x1, h - 20));
    for (int i = 0; i < rows.size(); i++) {
      Row r = rows.get(i);
      Double ratio = r.name().startsWith("api-") ? apiRatio(r) : ratio(r, "bindfs");
      double target = r.name().startsWith("api-") ? apiTarget(r) : r.name().endsWith("-p99") ? 0.5 : r.minVsBindfs();
      int y = 34 + i * rowH;
      Boolean ok = met(r);
      String color = ok == null ? "#999" : ok ? "#3a3" : "#d33";
      double w = ratio == null ? 0 : Math.min(ratio, max) / max * width;
      sb.append(String.format(Locale.ROOT, "<text x=\"10\" y=\"%d\">%s</text>%n", y + 14, r.name()));
      sb.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"16\" fill=\"%s\"/>%n", left, y + 2, w, color));
      if (target > 0) {
        double tx = left + Math.min(target, max) / max * width;
        sb.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#000\" stroke-width=\"2\"/>%n", tx, y, tx, y + 20));
      }
      sb.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\">%s</text>%n", left + w + 5, y + 14, ratio == null ? "-" : num(ratio)));
    }
    sb.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\">1.0</text>%n", x1 - 8, h - 6));
    return sb.append("</svg>\n").toString();
  }

  void write(Path dir) throws IOException {
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("results.txt"), table());
    Files.writeString(dir.resolve("results.json"), json());
    Files.writeString(dir.resolve("results.svg"), svg());
  }
}
