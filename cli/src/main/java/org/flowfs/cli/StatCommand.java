package org.flowfs.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import org.flowfs.client.FileSystemClient;
import org.flowfs.common.Attr;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.config.ConfigException;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.config.Values;
import org.flowfs.common.dist.SimpleStripe;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.wire.IoOp.SizesReq;
import org.flowfs.common.wire.IoOp.SizesResp;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code flowfs stat FILE}: where a file's bytes live. */
@Command(name = "stat", mixinStandardHelpOptions = true,
    description = {"Show a regular file's layout: its head (the first bytes, kept on the metadata server), its "
        + "distribution and strip size, and which I/O server holds which of its datafiles (handle, and the bytes "
        + "it holds now).",
        "FILE is a path on a mounted FlowFS (read through the mount's flowfs.layout attribute), or an absolute "
            + "path inside the file system of --config (e.g. /dir/file)."})
final class StatCommand implements Callable<Integer> {
  @Mixin
  ToolOptions options;

  @Parameters(index = "0", paramLabel = "FILE", description = "The file.")
  String file;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws IOException {
    PrintWriter out = spec.commandLine().getOut();
    Tools.OnMount m = Tools.onMount(Path.of(file));
    FlowFsConfig cfg;
    Layout layout;
    long size;
    String fsPath;
    if (m != null) {
      cfg = loadOrNull(); // only for addresses and datafile sizes
      fsPath = m.fsPath();
      if (!Files.isRegularFile(m.local())) {
        throw new FsException(Errno.EINVAL, file + " is not a regular file: only regular files have a layout");
      }
      String json = new String(LibC.getxattr(m.local().toString(), "flowfs.layout"), StandardCharsets.UTF_8);
      layout = parseLayout(json);
      size = Files.size(m.local());
    } else {
      if (!file.startsWith("/")) {
        throw new FsException(Errno.ENOENT, file + " is not on a mounted FlowFS; give a path on a mount, or an "
            + "absolute path inside the file system of " + options.config.file);
      }
      cfg = options.load();
      fsPath = file;
      try (NetRuntime net = NetRuntime.create("tool-client", 1); FileSystemClient client = new FileSystemClient(cfg, net)) {
        Attr a = client.getattr(file);
        if (a.layout() == null) {
          throw new FsException(Errno.EINVAL, file + " is a " + a.type() + ": only regular files have a layout");
        }
        layout = a.layout();
        size = a.size();
      }
    }
    long[] held = cfg == null ? null : datafileSizes(cfg, layout);

    DistSpec dist = layout.dist();
    List<Map<String, Object>> dfs = new ArrayList<>();
    for (int i = 0; i < layout.serverCount(); i++) {
      Handle h = layout.datafiles().get(i);
      Map<String, Object> d = new LinkedHashMap<>();
      d.put("index", i);
      d.put("server", h.ioServer());
      d.put("address", cfg != null && h.ioServer() < cfg.ioServers().size()
          ? Values.formatAddress(cfg.ioServer(h.ioServer()).address()) : null);
      d.put("handle", h.hex());
      d.put("bytes", held == null || held[i] < 0 ? null : held[i]);
      dfs.add(d);
    }
    Long strip = dist.name().equals(SimpleStripe.NAME)
        ? (dist.params().isEmpty() ? SimpleStripe.DEFAULT_STRIP_SIZE : dist.params().get(0)) : null;
    if (options.json) {
      Map<String, Object> doc = new LinkedHashMap<>();
      doc.put("path", m != null ? m.local().toString() : file);
      doc.put("fs_path", fsPath);
      doc.put("size", size);
      doc.put("distribution", dist.name());
      doc.put("params", dist.params());
      doc.put("strip_size", strip);
      doc.put("head_bytes", layout.headBytes());
      doc.put("servers", layout.serverCount());
      doc.put("datafiles", dfs);
      out.println(JsonText.write(doc));
    } else {
      out.println("file:          " + (m != null ? m.local() + "  (" + fsPath + " in the file system)" : fsPath));
      out.println("size:          " + size + " (" + Tools.human(size) + ")");
      out.println("distribution:  " + dist.name() + (strip != null ? ", strip size " + strip + " (" + Tools.human(strip) + ")"
          : dist.params().isEmpty() ? "" : ", parameters " + dist.params()));
      out.println("head:          " + (layout.headBytes() == 0 ? "none"
          : "the first " + layout.headBytes() + " bytes (" + Tools.human(layout.headBytes()) + ") on the metadata server"));
      out.println("datafiles:     " + layout.serverCount());
      List<String[]> rows = new ArrayList<>();
      rows.add(new String[] {"  #", "SERVER", "ADDRESS", "HANDLE", "BYTES"});
      for (Map<String, Object> d : dfs) {
        rows.add(new String[] {"  " + d.get("index"), "ioserver " + d.get("server"),
            d.get("address") == null ? "-" : (String) d.get("address"), (String) d.get("handle"),
            d.get("bytes") == null ? "-" : String.valueOf(d.get("bytes"))});
      }
      Tools.table(out, rows);
    }
    out.flush();
    return 0;
  }

  private FlowFsConfig loadOrNull() {
    try {
      return options.load();
    } catch (ConfigException e) {
      return null;
    }
  }

  /** The bytes each datafile holds, asked of its I/O server; -1 where a server does not answer. */
  private long[] datafileSizes(FlowFsConfig cfg, Layout layout) {
    long[] sizes = new long[layout.serverCount()];
    java.util.Arrays.fill(sizes, -1);
    Map<Integer, List<Integer>> byServer = new TreeMap<>();
    for (int i = 0; i < layout.serverCount(); i++) {
      int io = layout.datafiles().get(i).ioServer();
      if (io >= 0 && io < cfg.ioServers().size()) {
        byServer.computeIfAbsent(io, k -> new ArrayList<>()).add(i);
      }
    }
    try (Tools.Servers servers = new Tools.Servers(cfg, options.timeout())) {
      List<Tools.Server> all = servers.all();
      byServer.forEach((io, idx) -> {
        try {
          SizesResp r = all.get(1 + io).call(new SizesReq(idx.stream().map(layout.datafiles()::get).toList()), servers.timeout);
          for (int k = 0; k < idx.size(); k++) {
            sizes[idx.get(k)] = r.sizes()[k];
          }
        } catch (RuntimeException e) {
          // shown as "-": stat still tells where the datafiles are
        }
      });
    }
    return sizes;
  }

  /** The layout in a {@code flowfs.layout} attribute: distribution, params, datafiles (server, handle). */
  @SuppressWarnings("unchecked")
  static Layout parseLayout(String json) {
    Map<String, Object> o = JsonText.object(json);
    List<Long> params = new ArrayList<>();
    for (Object p : (List<Object>) o.get("params")) {
      params.add(((Number) p).longValue());
    }
    List<Handle> handles = new ArrayList<>();
    for (Object d : (List<Object>) o.get("datafiles")) {
      handles.add(new Handle(Long.parseUnsignedLong((String) ((Map<String, Object>) d).get("handle"), 16)));
    }
    Object head = o.get("head_bytes");
    return new Layout(new DistSpec((String) o.get("distribution"), params), handles,
        head == null ? 0 : ((Number) head).longValue());
  }
}
