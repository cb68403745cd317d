package org.flowfs.cli;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.wire.CommonOp.StatsReq;
import org.flowfs.common.wire.CommonOp.StatsResp;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code flowfs stats}: the counters of every server and of the FlowFS mounts of this machine. */
@Command(name = "stats", mixinStandardHelpOptions = true,
    description = {"Show the counters of each server (operations, bytes and I/O paths: short, eager, flow) and "
        + "of the client of each FlowFS mount on this machine (read from the mount's flowfs.stats attribute).",
        "Exit status: 0 if every server and mount answered, 1 otherwise."})
final class StatsCommand implements Callable<Integer> {
  @Mixin
  ToolOptions options;

  @Option(names = "--mount", paramLabel = "DIR",
      description = "Show this mount's client counters (repeatable); default: every FlowFS mount of this machine.")
  List<Path> mounts;

  @Option(names = "--no-servers", description = "Only the mounts' counters (needs no config).")
  boolean noServers;

  @Option(names = "--no-mounts", description = "Only the servers' counters.")
  boolean noMounts;

  @Option(names = "--grep", paramLabel = "REGEX", description = "Only counters whose name contains a match, e.g. 'flow|eager'.")
  String grep;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    Pattern filter = grep == null ? null : Pattern.compile(grep);
    boolean allOk = true;
    List<Map<String, Object>> servers = new ArrayList<>();
    if (!noServers) {
      try (Tools.Servers all = new Tools.Servers(options.load(), options.timeout())) {
        for (Tools.Server s : all.all()) {
          Map<String, Object> r = new LinkedHashMap<>();
          r.put("name", s.name());
          r.put("role", s.role());
          r.put("id", s.id());
          r.put("address", s.where());
          try {
            StatsResp st = s.call(new StatsReq(), all.timeout);
            r.put("ok", true);
            r.put("counters", filtered(st.counters(), filter));
          } catch (RuntimeException e) {
            allOk = false;
            r.put("ok", false);
            r.put("error", Tools.why(e));
          }
          servers.add(r);
        }
      }
    }
    List<Map<String, Object>> clients = new ArrayList<>();
    if (!noMounts) {
      List<Path> which = mounts;
      if (which == null || which.isEmpty()) {
        which = Tools.flowfsMounts();
      } else {
        for (Path p : which) {
          Tools.OnMount m = Tools.onMount(p);
          if (m == null || !m.local().equals(m.mountPoint())) {
            throw new FsException(Errno.EINVAL, p + " is not the mount point of a FlowFS");
          }
        }
      }
      for (Path p : which) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("path", p.toString());
        try {
          String json = new String(LibC.getxattr(p.toString(), "flowfs.stats"), StandardCharsets.UTF_8);
          Map<String, Long> counters = new LinkedHashMap<>();
          JsonText.object(json).forEach((k, v) -> counters.put(k, v instanceof Number n ? n.longValue() : 0L));
          r.put("ok", true);
          r.put("counters", filtered(counters, filter));
        } catch (RuntimeException e) {
          allOk = false;
          r.put("ok", false);
          r.put("error", Tools.why(e));
        }
        clients.add(r);
      }
    }
    if (options.json) {
      Map<String, Object> doc = new LinkedHashMap<>();
      doc.put("ok", allOk);
      doc.put("servers", servers);
      doc.put("mounts", clients);
      out.println(JsonText.write(doc));
    } else {
      for (Map<String, Object> r : servers) {
        section(out, r.get("name") + " (" + r.get("address") + ")", r);
      }
      for (Map<String, Object> r : clients) {
        section(out, "mount " + r.get("path"), r);
      }
      if (servers.isEmpty() && clients.isEmpty()) {
        out.println("no servers asked and no FlowFS mount on this machine");
      }
    }
    out.flush();
    return allOk ? 0 : 1;
  }

  @SuppressWarnings("unchecked")
  private static void section(PrintWriter out, String title, Map<String, Object> r) {
    out.println(title);
    if (!(Boolean) r.get("ok")) {
      out.println("  FAILED: " + r.get("error"));
      return;
    }
    Map<String, Long> c = (Map<String, Long>) r.get("counters");
    if (c.isEmpty()) {
      out.println("  (no counters yet)");
      return;
    }
    int w = c.keySet().stream().mapToInt(String::length).max().orElse(0);
    int v = c.values().stream().mapToInt(x -> String.valueOf(x).length()).max().orElse(0);
    c.forEach((k, x) -> out.println("  " + k + " ".repeat(w - k.length() + 2) + " ".repeat(v - String.valueOf(x).length()) + x));
  }

  private static Map<String, Long> filtered(Map<String, Long> counters, Pattern filter) {
    Map<String, Long> m = new java.util.TreeMap<>();
    counters.forEach((k, x) -> {
      if (filter == null || filter.matcher(k).find()) {
        m.put(k, x);
      }
    });
    return m;
  }
}
