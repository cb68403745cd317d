package org.flowfs.cli;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.flowfs.common.Handle;
import org.flowfs.common.wire.IoOp;
import org.flowfs.common.wire.IoOp.DataRemoveReq;
import org.flowfs.common.wire.IoOp.HandlesResp;
import org.flowfs.common.wire.IoOp.ListReq;
import org.flowfs.common.wire.IoOp.SizesReq;
import org.flowfs.common.wire.MetaOp.FsckDatafilesReq;
import org.flowfs.common.wire.MetaOp.FsckDatafilesResp;
import org.flowfs.common.wire.MetaOp.FsckNamespaceReq;
import org.flowfs.common.wire.MetaOp.FsckNamespaceResp;
import org.flowfs.common.wire.MetaOp.FsckProblem;
import org.flowfs.common.wire.MetaOp.FsckReservedReq;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code flowfs fsck}: checks a running file system and repairs it.
 *
 * <p>Two checks. The metadata server checks its namespace in one consistent pass (see {@code
 * NamespaceCheck}) and, unless {@code --dry-run}, repairs it in one atomic commit. Then this tool
 * looks for orphan datafiles: it lists the datafiles every I/O server stores, <em>then</em> asks the
 * metadata server which datafiles the files' layouts reference and which handles its precreate
 * pools hold. That order makes the check safe under live traffic: a datafile exists only after
 * a write, a client writes only handles a committed create gave it, so every datafile listed in
 * the first step belongs to a file the later scan sees, unless that file was deleted meanwhile
 * (then removing its datafile is what the server's reaper does anyway). Handles are never issued
 * twice, and pooled ones are excluded, so nothing can start using an orphan while it is removed.
 */
@Command(name = "fsck", mixinStandardHelpOptions = true,
    description = {"Check the file system and repair what is wrong (the servers must run).",
        "Namespace: entries naming missing objects are removed, objects no path reaches are named in /lost+found,"
            + " link counts and counters are set. Datafiles: those on I/O servers that no file references (orphans)"
            + " are removed.",
        "Exit status, a sum: 0 nothing wrong, 1 problems repaired, 4 problems left (--dry-run), 8 a server did not"
            + " answer so the check is incomplete."})
final class FsckCommand implements Callable<Integer> {
  /** Handles per page of a listing and per removal: the most one message carries. */
  private static final int PAGE = IoOp.MAX_BATCH;
  /** The namespace check holds mutations back while it runs; on a large namespace that takes a while. */
  private static final Duration CHECK_TIMEOUT = Duration.ofMinutes(10);

  @Mixin
  ToolOptions options;

  @Option(names = {"-n", "--dry-run"}, description = "Only report: change nothing.")
  boolean dryRun;

  @Spec
  CommandSpec spec;

  /** One I/O server's part: its datafiles, those no file references, the error if it did not answer. */
  private static final class IoPart {
    final int id;
    long datafiles;
    long[] orphans = new long[0];
    long[] orphanBytes = new long[0];
    long removed;
    String error;

    IoPart(int id) {
      this.id = id;
    }
  }

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    Duration timeout = options.timeout();
    Duration checkTimeout = timeout.compareTo(CHECK_TIMEOUT) > 0 ? timeout : CHECK_TIMEOUT;
    FsckNamespaceResp ns = null;
    String metaError = null;
    List<IoPart> io = new ArrayList<>();
    try (Tools.Servers servers = new Tools.Servers(options.load(), timeout)) {
      List<Tools.Server> all = servers.all();
      Tools.Server meta = all.get(0);
      try {
        ns = meta.call(new FsckNamespaceReq(!dryRun), checkTimeout);
      } catch (RuntimeException e) {
        metaError = Tools.why(e);
      }
      if (metaError == null) {
        // first what the I/O servers store, then what the metadata references (see the class comment)
        for (int i = 1; i < all.size(); i++) {
          io.add(list(all.get(i), timeout));
        }
        try {
          long[] known = known(meta, timeout);
          for (int i = 1; i < all.size(); i++) {
            IoPart p = io.get(i - 1);
            if (p.error == null) {
              orphans(all.get(i), p, known, timeout);
            }
          }
        } catch (RuntimeException e) {
          metaError = Tools.why(e);
        }
      }
    }
    return report(out, ns, metaError, io);
  }

  /** Every datafile handle an I/O server stores, paged by handle. */
  private static IoPart list(Tools.Server s, Duration timeout) {
    IoPart p = new IoPart(s.id());
    long[] all = new long[0];
    int n = 0;
    try {
      long cursor = 0;
      while (true) {
        HandlesResp page = s.call(new ListReq(cursor, PAGE), timeout);
        if (n + page.handles().size() > all.length) {
          all = Arrays.copyOf(all, Math.max(all.length * 2, n + page.handles().size()));
        }
        for (Handle h : page.handles()) {
          all[n++] = h.id();
          cursor = h.id();
        }
        if (page.handles().size() < PAGE) {
          break;
        }
      }
    } catch (RuntimeException e) {
      p.error = Tools.why(e);
      return p;
    }
    p.datafiles = n;
    p.orphans = Arrays.copyOf(all, n); // until known() says otherwise
    return p;
  }

  /** The handles the metadata server knows of: referenced by layouts, or held in its pools; sorted. */
  private static long[] known(Tools.Server meta, Duration timeout) {
    long[] known = new long[1024];
    int n = 0;
    List<Handle> reserved = meta.call(new FsckReservedReq(), timeout).datafiles();
    for (Handle h : reserved) {
      if (n == known.length) {
        known = Arrays.copyOf(known, n * 2);
      }
      known[n++] = h.id();
    }
    long cursor = 0;
    while (true) {
      FsckDatafilesResp page = meta.call(new FsckDatafilesReq(cursor, PAGE), timeout);
      if (n + page.datafiles().size() > known.length) {
        known = Arrays.copyOf(known, Math.max(known.length * 2, n + page.datafiles().size()));
      }
      for (Handle h : page.datafiles()) {
        known[n++] = h.id();
      }
      cursor = page.next();
      if (page.eof()) {
        break;
      }
    }
    long[] sorted = Arrays.copyOf(known, n);
    Arrays.sort(sorted);
    return sorted;
  }

  /** Keeps the unknown datafiles of {@code p} as its orphans, sizes them, and removes them unless a dry run. */
  private void orphans(Tools.Server s, IoPart p, long[] known, Duration timeout) {
    long[] stored = p.orphans;
    int n = 0;
    long[] out = new long[stored.length];
    for (long h : stored) {
      if (Arrays.binarySearch(known, h) < 0) {
        out[n++] = h;
      }
    }
    p.orphans = Arrays.copyOf(out, n);
    p.orphanBytes = new long[n];
    try {
      for (int from = 0; from < n; from += PAGE) {
        List<Handle> batch = new ArrayList<>();
        for (int i = from; i < Math.min(n, from + PAGE); i++) {
          batch.add(new Handle(p.orphans[i]));
        }
        long[] sizes = s.call(new SizesReq(batch), timeout).sizes();
        System.arraycopy(sizes, 0, p.orphanBytes, from, sizes.length);
        if (!dryRun) {
          s.call(new DataRemoveReq(batch), timeout);
          p.removed += batch.size();
        }
      }
    } catch (RuntimeException e) {
      p.error = Tools.why(e);
    }
  }

  // ---- the report -----------------------------------------------------------------------------

  private int report(PrintWriter out, FsckNamespaceResp ns, String metaError, List<IoPart> io) {
    long found = 0;
    long repaired = 0;
    boolean incomplete = metaError != null;
    List<Map<String, Object>> problems = new ArrayList<>();
    if (ns != null) {
      found += ns.found();
      repaired += ns.repaired() ? ns.found() : 0;
      for (FsckProblem p : ns.problems()) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", p.kind().name());
        m.put("handle", p.handle() == null ? null : p.handle().toString());
        m.put("parent", p.parent() == null ? null : p.parent().toString());
        m.put("name", p.name());
        m.put("detail", p.detail());
        m.put("repaired", ns.repaired());
        problems.add(m);
      }
    }
    List<Map<String, Object>> servers = new ArrayList<>();
    long datafiles = 0;
    long orphanBytes = 0;
    for (IoPart p : io) {
      found += p.orphans.length;
      repaired += p.removed;
      incomplete |= p.error != null;
      datafiles += p.datafiles;
      Map<String, Object> s = new LinkedHashMap<>();
      s.put("id", p.id);
      s.put("datafiles", p.datafiles);
      s.put("orphans", p.orphans.length);
      s.put("removed", p.removed);
      s.put("error", p.error);
      servers.add(s);
      for (int i = 0; i < p.orphans.length; i++) {
        orphanBytes += p.orphanBytes[i];
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", "ORPHAN_DATAFILE");
        m.put("handle", new Handle(p.orphans[i]).toString());
        m.put("parent", null);
        m.put("name", null);
        m.put("detail", "datafile of " + p.orphanBytes[i] + " bytes on ioserver " + p.id
            + " that no file references: remove it");
        m.put("repaired", i < p.removed);
        problems.add(m);
      }
    }
    int exit = (incomplete ? 8 : 0) | (found > repaired ? 4 : 0) | (repaired > 0 ? 1 : 0);
    if (options.json) {
      Map<String, Object> doc = new LinkedHashMap<>();
      doc.put("dry_run", dryRun);
      doc.put("complete", !incomplete);
      doc.put("found", found);
      doc.put("repaired", repaired);
      doc.put("objects", ns == null ? null : ns.objects());
      doc.put("entries", ns == null ? null : ns.entries());
      doc.put("datafiles", datafiles);
      doc.put("orphan_bytes", orphanBytes);
      doc.put("metaserver_error", metaError);
      doc.put("ioservers", servers);
      doc.put("problems", problems);
      out.println(JsonText.write(doc));
      out.flush();
      return exit;
    }
    if (ns != null) {
      out.println("namespace: " + ns.objects() + " objects, " + ns.entries() + " entries checked, "
          + ns.found() + (ns.found() == 1 ? " problem" : " problems")
          + (ns.problems().size() < ns.found() ? " (the first " + ns.problems().size() + " listed)" : ""));
    }
    if (metaError != null) {
      out.println("metaserver: FAILED: " + metaError);
    }
    for (IoPart p : io) {
      out.println("ioserver " + p.id + ": " + (p.error != null && p.datafiles == 0 && p.orphans.length == 0
          ? "FAILED: " + p.error
          : p.datafiles + " datafiles, " + p.orphans.length + (p.orphans.length == 1 ? " orphan" : " orphans")
              + (p.error != null ? " (FAILED: " + p.error + ")" : "")));
    }
    for (Map<String, Object> m : problems) {
      String where = m.get("name") != null ? " \"" + m.get("name") + "\" in " + m.get("parent") : "";
      out.println("  " + ((Boolean) m.get("repaired") ? "repaired" : dryRun ? "would repair" : "NOT repaired") + "  "
          + m.get("kind") + "  " + (m.get("handle") == null ? "-" : m.get("handle")) + where + ": " + m.get("detail"));
    }
    if (found == 0) {
      out.println(incomplete ? "fsck: nothing wrong found, but the check is incomplete" : "fsck: nothing to repair");
    } else if (dryRun) {
      out.println("fsck: " + found + (found == 1 ? " problem" : " problems") + " found; nothing changed (--dry-run)");
    } else {
      out.println("fsck: " + found + (found == 1 ? " problem" : " problems") + " found, " + repaired + " repaired"
          + (orphanBytes > 0 ? ", " + Tools.human(orphanBytes) + " of orphan datafiles freed" : "")
          + (incomplete ? "; the check is incomplete" : ""));
    }
    out.flush();
    return exit;
  }
}
