package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.flowfs.cli.JsonText;
import org.flowfs.cli.Main;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The operator tools ({@code flowfs ping, df, stat, setstripe, stats}) against a running file
 * system of separate server and mount processes (the shape systemd runs), called the way an
 * operator does, with and without {@code --json}.
 */
class OperatorToolsTest {
  @TempDir
  static Path root;
  static ProcessDeployment fs;
  static Path conf;
  static Path mnt;

  @BeforeAll
  static void start() throws Exception {
    fs = new ProcessDeployment(root, 4);
    conf = fs.config();
    mnt = fs.mountPoint();
  }

  @AfterAll
  static void stop() {
    if (fs != null) {
      fs.close();
    }
  }

  record Run(int exit, String out, String err) {
    Map<String, Object> json() {
      return JsonText.object(out);
    }
  }

  /** {@code flowfs ARGS...} in this JVM, as Main runs it. */
  static Run flowfs(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int rc;
    try (PrintWriter o = new PrintWriter(out); PrintWriter e = new PrintWriter(err)) {
      rc = Main.run(o, e, args);
    }
    return new Run(rc, out.toString(), err.toString());
  }

  static Run ok(String... args) {
    Run r = flowfs(args);
    assertEquals(0, r.exit(), () -> "flowfs " + String.join(" ", args) + " failed:\n" + r.out() + r.err());
    return r;
  }

  @SuppressWarnings("unchecked")
  static List<Map<String, Object>> list(Object o) {
    return (List<Map<String, Object>>) o;
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> map(Object o) {
    return (Map<String, Object>) o;
  }

  @Test
  void everyTool_hasHelp() {
    for (String tool : List.of("ping", "df", "stat", "setstripe", "stats")) {
      Run r = ok(tool, "--help");
      assertTrue(r.out().contains("--json") && r.out().contains("--config"), tool + ":\n" + r.out());
    }
  }

  @Test
  void ping_everyServerAnswers() {
    Run text = ok("ping", "--config", conf.toString());
    assertTrue(text.out().contains("all 5 servers answered"), text.out());
    Map<String, Object> doc = ok("ping", "--config", conf.toString(), "--json").json();
    assertEquals(true, doc.get("ok"));
    List<Map<String, Object>> servers = list(doc.get("servers"));
    assertEquals(5, servers.size());
    assertEquals("metaserver", servers.get(0).get("role"));
    for (int i = 0; i < 4; i++) {
      Map<String, Object> s = servers.get(1 + i);
      assertEquals("ioserver", s.get("role"));
      assertEquals((long) i, s.get("id"));
      assertEquals(org.flowfs.common.Version.RELEASE, s.get("version"));
      assertTrue(((Number) s.get("latency_ms")).doubleValue() > 0, s.toString());
    }
  }

  @Test
  void ping_aServerThatDoesNotAnswer_failsAndSaysWhich() throws IOException {
    // the same file system, but I/O server 3 where nothing listens
    String text = Files.readString(conf);
    String io3 = text.lines().filter(l -> l.startsWith("io.3.address")).findFirst().orElseThrow();
    Path bad = root.resolve("bad.conf");
    Files.writeString(bad, text.replace(io3, "io.3.address = 127.0.0.1:1"));
    Run r = flowfs("ping", "--config", bad.toString(), "--json", "--timeout", "3s");
    assertEquals(1, r.exit(), r.out() + r.err());
    Map<String, Object> doc = r.json();
    assertEquals(false, doc.get("ok"));
    List<Map<String, Object>> servers = list(doc.get("servers"));
    assertEquals(true, servers.get(3).get("ok"));
    assertEquals(false, servers.get(4).get("ok"));
    assertTrue(String.valueOf(servers.get(4).get("error")).contains("127.0.0.1:1"), servers.get(4).toString());
    Run t = flowfs("ping", "--config", bad.toString(), "--timeout", "3s");
    assertEquals(1, t.exit());
    assertTrue(t.out().contains("FAILED"), t.out());
  }

  @Test
  void df_perServerAndTotal_countsTheSharedDiskOnce() throws IOException {
    Map<String, Object> doc = ok("df", "--config", conf.toString(), "--json").json();
    List<Map<String, Object>> io = list(doc.get("ioservers"));
    assertEquals(4, io.size());
    // every server of this deployment stores under one temporary directory: one file system
    long disk = Files.getFileStore(root).getTotalSpace();
    for (Map<String, Object> s : io) {
      assertEquals(true, s.get("ok"));
      assertEquals(disk, ((Number) s.get("size")).longValue());
    }
    Map<String, Object> meta = map(doc.get("metaserver"));
    assertEquals(disk, ((Number) meta.get("size")).longValue(), "the metadata store's file system");
    assertTrue(((Number) meta.get("objects")).longValue() >= 1);
    Map<String, Object> total = map(doc.get("total"));
    assertEquals(disk, ((Number) total.get("size")).longValue(), "the one disk, not five times it");
    assertEquals(1L, ((Number) total.get("file_systems")).longValue());
    long used = ((Number) total.get("used")).longValue();
    assertTrue(used > 0 && used <= disk, total::toString);
    Run text = ok("df", "--config", conf.toString());
    assertTrue(text.out().contains("ioserver 3") && text.out().contains("metaserver")
        && text.out().contains("1 file system "), text.out());
  }

  @Test
  void stat_showsDistributionAndDatafiles() throws IOException {
    Path f = mnt.resolve("stat-me");
    byte[] data = new byte[300 * 1024];
    new java.util.Random(5).nextBytes(data);
    Files.write(f, data);
    Map<String, Object> doc = ok("stat", "--config", conf.toString(), "--json", f.toString()).json();
    assertEquals("simple_stripe", doc.get("distribution"));
    assertEquals(65536L, doc.get("strip_size"));
    assertEquals((long) data.length, doc.get("size"));
    assertEquals("/stat-me", doc.get("fs_path"));
    List<Map<String, Object>> dfs = list(doc.get("datafiles"));
    assertEquals(4, dfs.size());
    long held = 0;
    java.util.Set<Object> servers = new java.util.HashSet<>();
    for (Map<String, Object> d : dfs) {
      assertTrue(((String) d.get("handle")).matches("[0-9a-f]{16}"), d.toString());
      servers.add(d.get("server"));
      held += ((Number) d.get("bytes")).longValue();
    }
    assertEquals(4, servers.size(), "one datafile on each I/O server");
    assertEquals(data.length, held, "the datafiles hold the file's bytes");
    // the same file by its path inside the file system, through the servers alone
    Map<String, Object> byPath = ok("stat", "--config", conf.toString(), "--json", "/stat-me").json();
    assertEquals(doc.get("datafiles"), byPath.get("datafiles"));
    Run text = ok("stat", "--config", conf.toString(), f.toString());
    assertTrue(text.out().contains("strip size 65536") && text.out().contains("ioserver"), text.out());
    Run dir = flowfs("stat", "--config", conf.toString(), mnt.toString());
    assertNotEquals(0, dir.exit());
  }

  @Test
  void setstripe_newFilesFollowIt() throws IOException {
    Path dir = mnt.resolve("wide");
    Files.createDirectories(dir);
    Map<String, Object> none = ok("setstripe", "--config", conf.toString(), "--json", dir.toString()).json();
    assertEquals(false, none.get("set"));
    Map<String, Object> set = ok("setstripe", "--config", conf.toString(), "--json", dir.toString(),
        "--strip-size", "1MiB", "--servers", "2").json();
    assertEquals(true, set.get("set"));
    assertEquals(1048576L, set.get("strip_size"));
    assertEquals(2L, set.get("servers"));
    // also an extended attribute
    String attr = Sh.ok(mnt, "getfattr --only-values -n flowfs.stripe '" + dir + "'");
    assertEquals("strip_size=1048576 servers=2", attr.strip());

    Files.write(dir.resolve("f"), new byte[3 << 20]);
    Map<String, Object> st = ok("stat", "--config", conf.toString(), "--json", dir.resolve("f").toString()).json();
    assertEquals(1048576L, st.get("strip_size"));
    assertEquals(2L, st.get("servers"));
    assertEquals(2, list(st.get("datafiles")).size());

    // setfattr sets it too, checked; the file system's servers bound the count
    Sh.ok(mnt, "setfattr -n flowfs.stripe -v 'strip_size=8KiB servers=1' '" + dir + "'");
    Files.write(dir.resolve("g"), new byte[100_000]);
    Map<String, Object> g = ok("stat", "--config", conf.toString(), "--json", dir.resolve("g").toString()).json();
    assertEquals(8192L, g.get("strip_size"));
    assertEquals(1L, g.get("servers"));
    Sh.fails(mnt, "setfattr -n flowfs.stripe -v 'strip_size=3000' '" + dir + "'");
    Sh.fails(mnt, "setfattr -n flowfs.stripe -v 'servers=5' '" + dir + "'");
    Run bad = flowfs("setstripe", "--config", conf.toString(), dir.toString(), "--strip-size", "5000");
    assertEquals(1, bad.exit());
    assertTrue(bad.err().contains("power of two"), bad.err());

    // through the servers alone, by the path inside the file system
    Map<String, Object> viaServers = ok("setstripe", "--config", conf.toString(), "--json", "/wide").json();
    assertEquals("strip_size=8192 servers=1", viaServers.get("xattr"));
    ok("setstripe", "--config", conf.toString(), "/wide", "--clear");
    Sh.fails(mnt, "getfattr -n flowfs.stripe '" + dir + "'");
    Files.write(dir.resolve("h"), new byte[10]);
    Map<String, Object> h = ok("stat", "--config", conf.toString(), "--json", dir.resolve("h").toString()).json();
    assertEquals(4L, h.get("servers"));
    // files made before keep their layout
    assertEquals(2L, ok("stat", "--config", conf.toString(), "--json", dir.resolve("f").toString()).json().get("servers"));
  }

  @Test
  void stats_serversAndTheMount() throws IOException {
    Files.write(mnt.resolve("counted"), new byte[200_000]);
    Map<String, Object> doc = ok("stats", "--config", conf.toString(), "--json", "--mount", mnt.toString()).json();
    assertEquals(true, doc.get("ok"));
    List<Map<String, Object>> servers = list(doc.get("servers"));
    assertEquals(5, servers.size());
    for (Map<String, Object> s : servers) {
      assertEquals(true, s.get("ok"), s.toString());
      assertFalse(map(s.get("counters")).isEmpty(), s.toString());
    }
    List<Map<String, Object>> mounts = list(doc.get("mounts"));
    assertEquals(1, mounts.size());
    assertEquals(mnt.toString(), mounts.get(0).get("path"));
    Map<String, Object> counters = map(mounts.get(0).get("counters"));
    assertTrue(((Number) counters.getOrDefault("write", 0L)).longValue() > 0, counters.toString());
    Run text = ok("stats", "--config", conf.toString(), "--mount", mnt.toString(), "--grep", "^write");
    assertTrue(text.out().contains("mount " + mnt) && text.out().contains("metaserver"), text.out());
    Run notMount = flowfs("stats", "--no-servers", "--mount", root.toString());
    assertNotEquals(0, notMount.exit());
  }
}
