package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.flowfs.client.FileSystemClient;
import org.flowfs.common.Attr;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.rpc.NetRuntime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The metadata server killed (SIGKILL) in a storm of create, mkdir, write, chmod, truncate, rename,
 * link, unlink and rmdir from several processes through the mount, then restarted while the storm
 * goes on. Each process logs an operation after it returned success and stops at its first
 * failure. Afterwards every process's directory holds exactly the state its log of acknowledged
 * operations describes, give or take its one failed operation (done or not, never half); every
 * entry has its object, link counts agree; and {@code flowfs fsck} finds nothing to repair
 * (an unlink the kill cut off before its datafiles went left them in the removal queue, committed
 * with the unlink, which the restarted server works off).
 */
class MetaCrashTest {
  private static final int WORKERS = 4;
  private static final int ROUNDS = 2;

  /** One storm process: works in {@code dir} of the mount, logs to {@code log}, stops once {@code stop} exists. */
  static String worker(Path dir, Path log, Path stop) {
    return String.join("\n",
        "umask 022",
        "mkdir '" + dir + "' && cd '" + dir + "' || exit 1",
        "ok() { echo \"OK $* $EPOCHREALTIME\" >> '" + log + "'; }",
        "fail() { echo \"FAIL $* $EPOCHREALTIME\" >> '" + log + "'; exit 1; }",
        "i=0",
        "while [ ! -e '" + stop + "' ]; do",
        "  i=$((i+1)); j=$((i-1))",
        "  mkdir d$i && ok mkdir d$i || fail mkdir d$i",
        "  echo c$i > d$i/f && ok write d$i/f c$i || fail write d$i/f c$i",
        "  touch f$i && ok create f$i || fail create f$i",
        "  chmod 600 f$i && ok chmod f$i 600 || fail chmod f$i 600",
        "  mv f$i d$i/g && ok rename f$i d$i/g || fail rename f$i d$i/g",
        "  ln d$i/g h$i && ok link d$i/g h$i || fail link d$i/g h$i",
        "  truncate -s 100 h$i && ok truncate h$i 100 || fail truncate h$i 100",
        "  mkdir x$i && ok mkdir x$i || fail mkdir x$i",
        "  mv x$i d$i/x && ok rename x$i d$i/x || fail rename x$i d$i/x",
        "  if [ $j -gt 0 ]; then",
        "    rm d$j/f && ok unlink d$j/f || fail unlink d$j/f",
        "    rm h$j && ok unlink h$j || fail unlink h$j",
        "    rmdir d$j/x && ok rmdir d$j/x || fail rmdir d$j/x",
        "    mv d$j d$j.done && ok rename d$j d$j.done || fail rename d$j d$j.done",
        "  fi",
        "done");
  }

  @Test
  void metaserverKilledMidStorm_acknowledgedOperationsSurviveWhole(@TempDir Path tmp) throws Exception {
    try (ProcessDeployment fs = new ProcessDeployment(tmp, 2, "rpc.timeout = 10s\n")) {
      Path m = fs.mountPoint();
      List<Path[]> dirs = new ArrayList<>(); // {dir on the mount, its log}
      StringBuilder kills = new StringBuilder(); // when each kill and restart happened, for a failure's message
      for (int r = 0; r < ROUNDS; r++) {
        Path stop = tmp.resolve("stop" + r);
        List<Process> storm = new ArrayList<>();
        for (int w = 0; w < WORKERS; w++) {
          Path dir = m.resolve("r" + r + "w" + w);
          Path log = tmp.resolve("r" + r + "w" + w + ".log");
          Files.writeString(log, "");
          dirs.add(new Path[] {dir, log});
          storm.add(new ProcessBuilder("bash", "-c", worker(dir, log, stop)).redirectErrorStream(true)
              .redirectOutput(tmp.resolve("r" + r + "w" + w + ".out").toFile()).start());
        }
        try {
          Thread.sleep(2000);
          kills.append("round ").append(r).append(": killed at ").append(epoch());
          fs.meta().kill();
          Thread.sleep(300);
          fs.startMeta(); // the storm goes on: requests that never left, and idempotent ones, are retried
          kills.append(", serving again at ").append(epoch()).append('\n');
          Thread.sleep(1500);
        } finally {
          Files.writeString(stop, "");
          for (Process p : storm) {
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "a storm process did not stop");
          }
        }
      }

      int acknowledged = 0;
      int failed = 0;
      for (Path[] d : dirs) {
        List<String> log = Files.readAllLines(d[1]);
        Model before = new Model();
        String uncertain = null;
        for (String line : log) {
          if (line.startsWith("OK ")) {
            before.apply(line.substring(3).split(" "), false);
            acknowledged++;
          } else if (line.startsWith("FAIL ")) {
            uncertain = line.substring(5);
            failed++;
          }
        }
        String actual = actual(d[0]);
        List<String> allowed = new ArrayList<>(List.of(before.render()));
        if (uncertain != null) {
          String[] op = uncertain.split(" ");
          for (boolean partly : new boolean[] {false, true}) {
            Model after = before.copy();
            if (after.apply(op, partly)) {
              allowed.add(after.render());
            }
          }
        }
        String where = d[0].getFileName() + " (last: " + (log.isEmpty() ? "-" : log.get(log.size() - 1)) + ")";
        assertTrue(allowed.contains(actual), () -> where + " differs from its log:\nactual:\n" + actual
            + "\nexpected one of:\n" + String.join("\n--\n", allowed) + "\nlog (operation, epoch seconds):\n"
            + String.join("\n", log) + "\n" + kills + "mount log:\n" + fs.mount().logLines("WARN|ERROR|again|lost")
            + "\nmetaserver log:\n" + fs.meta().logLines("WARN|ERROR|expired|reclaim")
            + "\nas a new client sees it (mode, links, size):\n" + asNewClientSees(fs, d[0].getFileName().toString(), actual)
            + "\nmount counters: "
            + Sh.run(m, "getfattr -n flowfs.stats --only-values . | tr ',' '\\n' | grep -E 'setattr|lease.re|relookup' | tr '\\n' ' '").out());
      }
      assertTrue(acknowledged > 50, "the storm did little: " + acknowledged + " operations");

      // nothing to repair: the namespace is whole, and the datafiles of an unlink the kill cut
      // off are in the removal queue (committed with the unlink), not orphans
      FsckTest.Run check = FsckTest.fsck(fs.config(), "--dry-run");
      assertEquals(0, check.found(), check.text());
      System.out.printf("meta crash storm: %d operations acknowledged, %d failed by the kills%n", acknowledged, failed);
    }
  }

  /**
   * The files {@code rendered} lists in directory {@code dir} of the mount, as a client of its own
   * (not the mount, nor its caches) gets their attributes from the metadata server.
   */
  private static String asNewClientSees(ProcessDeployment fs, String dir, String rendered) {
    StringBuilder sb = new StringBuilder();
    try (NetRuntime net = NetRuntime.create("crash-check", 1);
        FileSystemClient c = new FileSystemClient(FlowFsConfig.load(fs.config()), net)) {
      for (String line : rendered.split("\n")) {
        String[] f = line.split(" ");
        if (f.length > 1 && f[1].equals("f")) {
          Attr a = c.getattr("/" + dir + "/" + f[0]);
          sb.append(f[0]).append(' ').append(Integer.toOctalString(a.mode() & 07777)).append(' ').append(a.nlink())
              .append(' ').append(a.size()).append('\n');
        }
      }
    } catch (Exception e) {
      sb.append("(").append(e).append(")");
    }
    return sb.toString();
  }

  /** Now, in seconds since the epoch, as bash's {@code $EPOCHREALTIME} prints it. */
  private static String epoch() {
    java.time.Instant t = java.time.Instant.now();
    return String.format(java.util.Locale.ROOT, "%d.%06d", t.getEpochSecond(), t.getNano() / 1000);
  }

  /** What a directory holds: one line per path, sorted: type, mode, link count; a file's size and content digest. */
  static String actual(Path dir) throws Exception {
    Map<String, String> lines = new TreeMap<>();
    if (!Files.exists(dir)) {
      return "";
    }
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : (Iterable<Path>) s::iterator) {
        if (p.equals(dir)) {
          continue;
        }
        Map<String, Object> a = Files.readAttributes(p, "unix:mode,nlink,size", LinkOption.NOFOLLOW_LINKS);
        int mode = (Integer) a.get("mode");
        boolean isDir = Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS);
        lines.put(dir.relativize(p).toString(), (isDir ? "d" : "f") + " " + Integer.toOctalString(mode & 07777) + " "
            + a.get("nlink") + (isDir ? "" : " " + a.get("size") + " " + digest(Files.readAllBytes(p))));
      }
    }
    StringBuilder sb = new StringBuilder();
    lines.forEach((k, v) -> sb.append(k).append(' ').append(v).append('\n'));
    return sb.toString();
  }

  static String digest(byte[] b) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b)).substring(0, 16);
  }

  /** The state a log of acknowledged operations describes: paths to directories or (shared) files. */
  static final class Model {
    static final class Node {
      int mode = 0644;
      byte[] content = new byte[0];
    }

    static final Node DIR = new Node();
    final Map<String, Node> paths = new TreeMap<>();

    Model copy() {
      Model c = new Model();
      Map<Node, Node> copies = new java.util.IdentityHashMap<>();
      paths.forEach((p, n) -> c.paths.put(p, n == DIR ? DIR : copies.computeIfAbsent(n, x -> {
        Node y = new Node();
        y.mode = x.mode;
        y.content = x.content;
        return y;
      })));
      return c;
    }

    /**
     * Applies one operation; {@code partly} applies only what a failed one may have left done
     * (a write whose create got through but whose data or size did not). False if there is no
     * such partial state.
     */
    boolean apply(String[] op, boolean partly) {
      switch (op[0]) {
        case "mkdir" -> paths.put(op[1], DIR);
        case "rmdir", "unlink" -> paths.remove(op[1]);
        case "create" -> paths.put(op[1], new Node());
        case "write" -> {
          Node n = new Node();
          if (!partly) {
            n.content = (op[2] + "\n").getBytes(StandardCharsets.UTF_8);
          }
          paths.put(op[1], n);
          return true;
        }
        case "chmod" -> paths.get(op[1]).mode = Integer.parseInt(op[2], 8);
        case "truncate" -> {
          Node n = paths.get(op[1]);
          n.content = Arrays.copyOf(n.content, Integer.parseInt(op[2]));
        }
        case "link" -> paths.put(op[2], paths.get(op[1]));
        case "rename" -> {
          Map<String, Node> moved = new TreeMap<>();
          paths.entrySet().removeIf(e -> {
            String p = e.getKey();
            if (p.equals(op[1]) || p.startsWith(op[1] + "/")) {
              moved.put(op[2] + p.substring(op[1].length()), e.getValue());
              return true;
            }
            return false;
          });
          paths.putAll(moved);
        }
        default -> throw new AssertionError("unknown operation " + op[0]);
      }
      return !partly;
    }

    String render() throws Exception {
      Map<Node, Integer> links = new java.util.IdentityHashMap<>();
      Map<String, Integer> subdirs = new TreeMap<>();
      paths.forEach((p, n) -> {
        links.merge(n, 1, Integer::sum);
        if (n == DIR && p.contains("/")) {
          subdirs.merge(p.substring(0, p.lastIndexOf('/')), 1, Integer::sum);
        }
      });
      StringBuilder sb = new StringBuilder();
      for (Map.Entry<String, Node> e : paths.entrySet()) {
        Node n = e.getValue();
        sb.append(e.getKey()).append(' ');
        if (n == DIR) {
          sb.append("d 755 ").append(2 + subdirs.getOrDefault(e.getKey(), 0));
        } else {
          sb.append("f ").append(Integer.toOctalString(n.mode)).append(' ').append(links.get(n)).append(' ')
              .append(n.content.length).append(' ').append(digest(n.content));
        }
        sb.append('\n');
      }
      return sb.toString();
    }
  }
}
