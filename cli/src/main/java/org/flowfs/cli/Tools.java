package org.flowfs.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.config.Values;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.rpc.Peers;
import org.flowfs.common.rpc.RpcClient;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.Req;

/** What the operator tools share: a connection to every server, FlowFS mounts, text formatting. */
final class Tools {
  private Tools() {}

  /** A client to every server of a config's file system; closing it closes the connections. */
  static final class Servers implements AutoCloseable {
    final FlowFsConfig config;
    final NetRuntime net;
    final Peers peers;
    final Duration timeout;

    Servers(FlowFsConfig config, Duration timeout) {
      this.config = config;
      this.timeout = timeout;
      this.net = NetRuntime.create("tool-net", 1);
      this.peers = new Peers(config, net);
    }

    /** The metadata server, then every I/O server. */
    List<Server> all() {
      List<Server> l = new ArrayList<>();
      l.add(new Server("metaserver", "metaserver", 0, config.meta().address(), peers.meta()));
      for (int i = 0; i < peers.ioCount(); i++) {
        l.add(new Server("ioserver " + i, "ioserver", i, config.ioServer(i).address(), peers.io(i)));
      }
      return l;
    }

    @Override
    public void close() {
      peers.close();
      net.close();
    }
  }

  /** One server of the config: its name in output, its role and id, where it listens. */
  record Server(String name, String role, int id, InetSocketAddress address, RpcClient rpc) {
    String where() {
      return Values.formatAddress(address);
    }

    /** Calls and waits; every failure (no answer, refused, an errno) is an {@link FsException}. */
    <R extends Message> R call(Req<R> req, Duration timeout) {
      return await(rpc.call(req, timeout), timeout.plusSeconds(1));
    }
  }

  static <T> T await(CompletableFuture<T> f, Duration timeout) {
    try {
      return f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      Throwable c = Errno.unwrap(e);
      throw c instanceof FsException fe ? fe : new FsException(Errno.from(c), String.valueOf(c.getMessage()), c);
    } catch (TimeoutException e) {
      f.cancel(false);
      throw new FsException(Errno.ETIMEDOUT, "no answer within " + timeout.toMillis() + " ms");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new FsException(Errno.EINTR, "interrupted");
    }
  }

  /** A failure's message without the errno prefix noise of wrapped exceptions. */
  static String why(Throwable t) {
    Throwable c = Errno.unwrap(t);
    return c.getMessage() == null ? c.toString() : c.getMessage();
  }

  // ---- FlowFS mounts of this machine ------------------------------------------------------------

  /** The mount points of every FlowFS ({@code fuse.flowfs}) this process can see. */
  static List<Path> flowfsMounts() {
    List<Path> out = new ArrayList<>();
    List<String> lines;
    try {
      lines = Files.readAllLines(Path.of("/proc/self/mountinfo"));
    } catch (IOException e) {
      return out;
    }
    for (String line : lines) {
      int dash = line.indexOf(" - ");
      String[] f = line.split(" ");
      if (dash < 0 || f.length < 5) {
        continue;
      }
      if (line.substring(dash + 3).split(" ")[0].equals(org.flowfs.fuse.FuseMount.TYPE)) {
        out.add(Path.of(unescape(f[4])));
      }
    }
    return out;
  }

  private static String unescape(String s) {
    return s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\");
  }

  /** A local path on a FlowFS mount: the mount point, and the path inside the file system. */
  record OnMount(Path local, Path mountPoint, String fsPath) {}

  /**
   * Where {@code p} lies when it names an existing file on a FlowFS mount (the innermost mount
   * containing it), else null.
   */
  static OnMount onMount(Path p) {
    Path abs;
    try {
      abs = p.toRealPath();
    } catch (IOException e) {
      return null;
    }
    Path best = null;
    for (Path m : flowfsMounts()) {
      if (abs.startsWith(m) && (best == null || m.getNameCount() > best.getNameCount())) {
        best = m;
      }
    }
    if (best == null) {
      return null;
    }
    String rel = best.relativize(abs).toString();
    return new OnMount(abs, best, "/" + rel);
  }

  // ---- text output ----------------------------------------------------------------------------

  /** 1536 -> "1.5K", binary units as df -h prints them. */
  static String human(long bytes) {
    if (bytes < 1024) {
      return bytes + "B";
    }
    String units = "KMGTPE";
    double v = bytes;
    int u = -1;
    while (v >= 1024 && u < units.length() - 1) {
      v /= 1024;
      u++;
    }
    return (v < 10 ? String.format(Locale.ROOT, "%.1f", v) : String.format(Locale.ROOT, "%.0f", v)) + units.charAt(u);
  }

  static String millis(double ms) {
    return String.format(Locale.ROOT, ms < 10 ? "%.2f ms" : "%.1f ms", ms);
  }

  private static final java.util.regex.Pattern NUMBER = java.util.regex.Pattern.compile("-?\\d+(\\.\\d+)?([KMGTPEB%]| ms)?");

  /** Prints rows as columns, numbers right-aligned, each as wide as its widest cell; the first row is the header. */
  static void table(PrintWriter out, List<String[]> rows) {
    if (rows.isEmpty()) {
      return;
    }
    int cols = rows.get(0).length;
    int[] w = new int[cols];
    for (String[] r : rows) {
      for (int c = 0; c < cols; c++) {
        w[c] = Math.max(w[c], r[c].length());
      }
    }
    for (String[] r : rows) {
      StringBuilder sb = new StringBuilder();
      for (int c = 0; c < cols; c++) {
        boolean numeric = c > 0 && r != rows.get(0) && NUMBER.matcher(r[c]).matches();
        String cell = numeric ? " ".repeat(w[c] - r[c].length()) + r[c] : r[c] + " ".repeat(w[c] - r[c].length());
        sb.append(c == 0 ? "" : "  ").append(cell);
      }
      out.println(sb.toString().stripTrailing());
    }
  }
}
