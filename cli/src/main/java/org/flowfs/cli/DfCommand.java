package org.flowfs.cli;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.flowfs.common.StorageSpace;
import org.flowfs.common.wire.IoOp.IoStatfsReq;
import org.flowfs.common.wire.IoOp.IoStatfsResp;
import org.flowfs.common.wire.MetaOp.MetaStatfsReq;
import org.flowfs.common.wire.MetaOp.MetaStatfsResp;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code flowfs df}: the capacity of the file system under every server's storage, and of the whole
 * file system: each disk once ({@link StorageSpace#sum}), as {@code df} on a mount shows it.
 */
@Command(name = "df", mixinStandardHelpOptions = true,
    description = {"Show the capacity of the file system each server stores on (the I/O servers' datafiles, the "
        + "metadata server's store with the heads of files) and the total, counting a file system that several "
        + "servers share once, and how many objects the metadata server holds.",
        "Exit status: 0 if every server answered, 1 otherwise (the others are still shown)."})
final class DfCommand implements Callable<Integer> {
  @Mixin
  ToolOptions options;

  @Option(names = {"-b", "--bytes"}, description = "Sizes in bytes instead of K/M/G/T.")
  boolean bytes;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    List<Map<String, Object>> io = new ArrayList<>();
    Map<String, Object> meta = new LinkedHashMap<>();
    List<StorageSpace> spaces = new ArrayList<>();
    long datafiles = 0;
    boolean allOk = true;
    try (Tools.Servers servers = new Tools.Servers(options.load(), options.timeout())) {
      for (Tools.Server s : servers.all()) {
        if (s.role().equals("metaserver")) {
          meta.put("address", s.where());
          try {
            MetaStatfsResp m = s.call(new MetaStatfsReq(), servers.timeout);
            meta.put("ok", true);
            meta.put("objects", m.objects());
            meta.put("directories", m.directories());
            put(meta, m.space());
            spaces.add(m.space());
          } catch (RuntimeException e) {
            allOk = false;
            meta.put("ok", false);
            meta.put("error", Tools.why(e));
          }
          continue;
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("id", s.id());
        r.put("address", s.where());
        try {
          IoStatfsResp st = s.call(new IoStatfsReq(), servers.timeout);
          r.put("ok", true);
          put(r, st.space());
          r.put("datafiles", st.datafiles());
          spaces.add(st.space());
          datafiles += st.datafiles();
        } catch (RuntimeException e) {
          allOk = false;
          r.put("ok", false);
          r.put("error", Tools.why(e));
        }
        io.add(r);
      }
    }
    Map<String, Object> sum = new LinkedHashMap<>();
    put(sum, StorageSpace.sum(spaces));
    sum.put("file_systems", spaces.stream().mapToLong(StorageSpace::device).filter(d -> d != 0).distinct().count());
    sum.put("datafiles", datafiles);
    if (options.json) {
      Map<String, Object> doc = new LinkedHashMap<>();
      doc.put("ok", allOk);
      doc.put("ioservers", io);
      doc.put("total", sum);
      doc.put("metaserver", meta);
      out.println(JsonText.write(doc));
    } else {
      List<String[]> rows = new ArrayList<>();
      rows.add(new String[] {"SERVER", "ADDRESS", "SIZE", "USED", "AVAIL", "USE%", "DATAFILES"});
      for (Map<String, Object> r : io) {
        if ((Boolean) r.get("ok")) {
          rows.add(row("ioserver " + r.get("id"), (String) r.get("address"), r));
        } else {
          rows.add(new String[] {"ioserver " + r.get("id"), (String) r.get("address"), "-", "-", "-", "-",
              "FAILED: " + r.get("error")});
        }
      }
      if ((Boolean) meta.get("ok")) {
        String[] m = row("metaserver", (String) meta.get("address"), meta);
        m[6] = "-";
        rows.add(m);
      }
      long n = (Long) sum.get("file_systems");
      rows.add(row("total", n == 1 ? "1 file system" : n + " file systems", sum));
      Tools.table(out, rows);
      if ((Boolean) meta.get("ok")) {
        out.println("metaserver " + meta.get("address") + ": " + meta.get("objects") + " objects, "
            + meta.get("directories") + " directories");
      } else {
        out.println("metaserver " + meta.get("address") + ": FAILED: " + meta.get("error"));
      }
    }
    out.flush();
    return allOk ? 0 : 1;
  }

  /** Size, used, available and use% of {@code s} into {@code r}. */
  private static void put(Map<String, Object> r, StorageSpace s) {
    r.put("size", s.total());
    r.put("used", s.total() - s.free());
    r.put("available", s.available());
    r.put("use_percent", percent(s.total() - s.free(), s.total() - s.free() + s.available()));
  }

  private String[] row(String name, String where, Map<String, Object> r) {
    return new String[] {name, where, size((Long) r.get("size")), size((Long) r.get("used")),
        size((Long) r.get("available")), r.get("use_percent") + "%", String.valueOf(r.get("datafiles"))};
  }

  private String size(long v) {
    return bytes ? Long.toString(v) : Tools.human(v);
  }

  /** Used over what users can fill (df's rounding up). */
  static long percent(long used, long usable) {
    return usable <= 0 ? 0 : (used * 100 + usable - 1) / usable;
  }
}
