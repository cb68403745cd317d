package org.flowfs.cli;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.flowfs.common.wire.CommonOp.PingReq;
import org.flowfs.common.wire.CommonOp.PingResp;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code flowfs ping}: does every server of the config answer, as whom, and how fast. */
@Command(name = "ping", mixinStandardHelpOptions = true,
    description = {"Ask every server of the file system (the metadata server and each I/O server) who it is.",
        "Prints each server's role, version and round-trip latency (the best of --count pings).",
        "Exit status: 0 if every server answered as the config says it should, 1 otherwise."})
final class PingCommand implements Callable<Integer> {
  @Mixin
  ToolOptions options;

  @Option(names = "--count", paramLabel = "N", defaultValue = "3",
      description = "Pings per server; the best latency is shown (default: ${DEFAULT-VALUE}).")
  int count;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    List<Map<String, Object>> results = new ArrayList<>();
    boolean allOk = true;
    try (Tools.Servers servers = new Tools.Servers(options.load(), options.timeout())) {
      for (Tools.Server s : servers.all()) {
        Map<String, Object> r = ping(s, servers);
        allOk &= (Boolean) r.get("ok");
        results.add(r);
      }
    }
    if (options.json) {
      Map<String, Object> doc = new LinkedHashMap<>();
      doc.put("ok", allOk);
      doc.put("servers", results);
      out.println(JsonText.write(doc));
    } else {
      List<String[]> rows = new ArrayList<>();
      rows.add(new String[] {"SERVER", "ADDRESS", "ROLE", "VERSION", "LATENCY", "STATUS"});
      for (Map<String, Object> r : results) {
        boolean ok = (Boolean) r.get("ok");
        rows.add(new String[] {(String) r.get("name"), (String) r.get("address"),
            r.get("role") == null ? "-" : r.get("role") + (r.get("role").equals("ioserver") ? " " + r.get("id") : ""),
            r.get("version") == null ? "-" : (String) r.get("version"),
            r.get("latency_ms") == null ? "-" : Tools.millis((Double) r.get("latency_ms")),
            ok ? "ok" : "FAILED: " + r.get("error")});
      }
      Tools.table(out, rows);
      out.println(allOk ? "all " + results.size() + " servers answered" : "some servers did not answer as expected");
    }
    out.flush();
    return allOk ? 0 : 1;
  }

  private Map<String, Object> ping(Tools.Server s, Tools.Servers servers) {
    Map<String, Object> r = new LinkedHashMap<>();
    r.put("name", s.name());
    r.put("address", s.where());
    try {
      PingResp best = null;
      long bestNanos = Long.MAX_VALUE;
      double sum = 0;
      for (int i = 0; i < Math.max(1, count); i++) {
        long sent = System.nanoTime();
        PingResp p = s.call(new PingReq(sent), servers.timeout);
        long rtt = System.nanoTime() - p.sentNanos();
        sum += rtt;
        if (rtt < bestNanos) {
          bestNanos = rtt;
          best = p;
        }
      }
      r.put("role", best.role());
      r.put("id", best.serverId());
      r.put("version", best.version());
      r.put("latency_ms", bestNanos / 1e6);
      r.put("avg_ms", sum / Math.max(1, count) / 1e6);
      boolean who = best.role().equals(s.role()) && best.serverId() == s.id();
      r.put("ok", who);
      if (!who) {
        r.put("error", "answered as " + best.role() + " " + best.serverId() + ", expected " + s.name());
      }
    } catch (RuntimeException e) {
      r.put("ok", false);
      r.put("error", Tools.why(e));
    }
    return r;
  }
}
