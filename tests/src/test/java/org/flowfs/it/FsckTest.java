package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.Unpooled;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.flowfs.cli.JsonText;
import org.flowfs.cli.Main;
import org.flowfs.common.Handle;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.rpc.Peers;
import org.flowfs.common.wire.IoOp.PrecreateReq;
import org.flowfs.common.wire.IoOp.WriteReq;
import org.flowfs.meta.StoreSurgery;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code flowfs fsck} against real server processes: orphan datafiles (written directly on a
 * precreated handle; of an object whose record vanished), but not the datafiles an unlink while
 * their I/O server was down left in the removal queue; and namespace damage made in the stopped metadata store (a dangling entry, a
 * lost file, wrong link counts). A dry run reports and changes nothing, a repair fixes everything
 * and says so, a third run finds nothing; and under live traffic fsck touches nothing in use.
 */
class FsckTest {
  private static final Pattern DATAFILE = Pattern.compile("\"handle\":\"([0-9a-f]{16})\"");

  /** Runs {@code flowfs fsck ARGS --json}: exit code and the parsed report. */
  record Run(int exit, Map<String, Object> doc, String text) {
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> problems() {
      return (List<Map<String, Object>>) doc.get("problems");
    }

    long found() {
      return ((Number) doc.get("found")).longValue();
    }

    /** Problems by kind, each as "handle name". */
    Map<String, Set<String>> byKind() {
      Map<String, Set<String>> m = new TreeMap<>();
      for (Map<String, Object> p : problems()) {
        m.computeIfAbsent((String) p.get("kind"), k -> new HashSet<>()).add(p.get("handle") + " " + p.get("name"));
      }
      return m;
    }
  }

  static Run fsck(Path conf, String... extra) {
    List<String> args = new ArrayList<>(List.of("fsck", "--config", conf.toString(), "--json"));
    args.addAll(List.of(extra));
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = Main.run(new PrintWriter(out), new PrintWriter(err), args.toArray(String[]::new));
    String text = out.toString();
    assertTrue(text.startsWith("{"), () -> "fsck printed no report (exit " + exit + "):\n" + text + err);
    return new Run(exit, JsonText.object(text.trim()), text);
  }

  /** The metadata handle of a file on the mount (inode numbers are handles). */
  static String handleOf(Path m, String file) {
    return new Handle(Long.parseLong(Sh.ok(m, "stat -c %i " + file).trim())).toString();
  }

  /** The datafile handles of a file, from its layout. */
  static List<Handle> datafilesOf(Path m, String file) {
    Matcher x = DATAFILE.matcher(Sh.ok(m, "getfattr --only-values -n flowfs.layout " + file));
    List<Handle> out = new ArrayList<>();
    while (x.find()) {
      out.add(new Handle(Long.parseUnsignedLong(x.group(1), 16)));
    }
    return out;
  }

  static Path datafilePath(Deployment fs, Handle h) {
    return fs.ioDir(h.ioServer()).resolve("data").resolve(String.format("%02x", h.local() & 0xFF)).resolve(h.hex());
  }

  /** Every datafile on every I/O server, as paths (not the empty files of their pools, data/free/). */
  static Set<Path> datafilesOnDisk(Deployment fs) throws Exception {
    Set<Path> all = new HashSet<>();
    for (int i = 0; i < fs.ioServers(); i++) {
      Path data = fs.ioDir(i).resolve("data");
      try (Stream<Path> s = Files.walk(data)) {
        s.filter(Files::isRegularFile).filter(p -> !p.startsWith(data.resolve("free"))).forEach(all::add);
      }
    }
    return all;
  }

  @TempDir
  static Path tmp;
  /** One file system for both tests (each leaves it healthy); small pools, so they refill often. */
  static ProcessDeployment fs;

  @BeforeAll
  static void start() throws Exception {
    fs = new ProcessDeployment(tmp, 2, "rpc.timeout = 5s\nmeta.precreate-batch = 16\nmeta.precreate-low-water = 4\n");
  }

  @AfterAll
  static void stop() {
    if (fs != null) {
      fs.close();
    }
  }

  @Test
  void fsck_orphansAndDanglingEntries_dryRunReportsRepairFixesRerunClean() throws Exception {
    Path m = fs.mountPoint();
    Sh.ok(m, String.join(" && ",
        "mkdir -p d/sub",
        "head -c 300000 /dev/urandom > d/keep",
        "head -c 300000 /dev/urandom > d/gone",
        "head -c 300000 /dev/urandom > d/lost",
        "head -c 300000 /dev/urandom > d/victim",
        "echo linked > d/linked && ln d/linked d/linked2",
        "sha256sum d/keep d/lost d/linked > " + tmp.resolve("sums")));
    Run healthy = fsck(fs.config());
    assertEquals(0, healthy.exit(), healthy.text());
    assertEquals(0, healthy.found(), healthy.text());

    // orphan 1: a datafile written straight to an I/O server on a handle no file has
    FlowFsConfig config = FlowFsConfig.load(fs.config());
    Handle stray;
    try (NetRuntime net = NetRuntime.create("fsck-test", 1); Peers peers = new Peers(config, net)) {
      stray = peers.io(0).call(new PrecreateReq(1)).get(10, TimeUnit.SECONDS).handles().get(0);
      peers.io(0).call(new WriteReq(stray, 0, Unpooled.wrappedBuffer(new byte[4096]))).get(10, TimeUnit.SECONDS);
    }
    // no orphan: an unlink while I/O server 1 is down queues its datafile for removal (in the
    // unlink's commit), and it goes once the server is back
    List<Handle> victim = datafilesOf(m, "d/victim");
    Handle victimOn1 = victim.stream().filter(h -> h.ioServer() == 1).findFirst().orElseThrow();
    fs.io(1).kill();
    Sh.ok(m, "rm d/victim");
    assertTrue(Files.exists(datafilePath(fs, victimOn1)));
    fs.restartIo(1);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (Files.exists(datafilePath(fs, victimOn1)) && System.nanoTime() < deadline) {
      Thread.sleep(200);
    }
    assertFalse(Files.exists(datafilePath(fs, victimOn1)), "the removal queue removed it once its server was back");

    // namespace damage, made in the stopped metadata store
    String gone = handleOf(m, "d/gone");
    List<Handle> goneData = datafilesOf(m, "d/gone");
    String lost = handleOf(m, "d/lost");
    String linked = handleOf(m, "d/linked");
    String sub = handleOf(m, "d/sub");
    fs.meta().stop(20);
    try (StoreSurgery s = StoreSurgery.open(fs.dataDir().resolve("meta"))) {
      Handle d = s.resolve("/d");
      s.removeObject(s.resolve("/d/gone"));
      s.removeEntry(d, "lost");
      s.setNlink(s.resolve("/d/linked"), 5);
      s.setNlink(s.resolve("/d/sub"), 7);
    }
    fs.startMeta();

    // a dry run reports everything and changes nothing, twice the same
    Set<Path> disk = datafilesOnDisk(fs);
    Run dry = fsck(fs.config(), "--dry-run");
    assertEquals(4, dry.exit(), dry.text());
    Map<String, Set<String>> kinds = dry.byKind();
    assertEquals(Set.of(gone + " gone"), kinds.get("DANGLING_ENTRY"), dry.text());
    assertEquals(Set.of(lost + " null"), kinds.get("UNREACHABLE"), dry.text());
    assertEquals(Set.of(linked + " null", sub + " null"), kinds.get("NLINK"), dry.text());
    Set<String> orphans = new HashSet<>();
    orphans.add(stray + " null");
    goneData.forEach(h -> orphans.add(h + " null"));
    assertEquals(orphans, kinds.get("ORPHAN_DATAFILE"), dry.text());
    assertTrue(dry.problems().stream().noneMatch(p -> (Boolean) p.get("repaired")), dry.text());
    assertEquals(disk, datafilesOnDisk(fs), "a dry run removes no datafile");
    assertEquals(dry.found(), fsck(fs.config(), "--dry-run").found(), "a dry run repairs nothing");
    // the damage is still there: the dangling entry fails the listing with attributes
    assertTrue(Sh.run(m, "ls -l d").err().contains("Input/output error"));

    // the repair fixes what the dry run found, and says so
    Run repair = fsck(fs.config());
    assertEquals(1, repair.exit(), repair.text());
    assertEquals(dry.byKind(), repair.byKind());
    assertTrue(repair.problems().stream().allMatch(p -> (Boolean) p.get("repaired")), repair.text());
    Run again = fsck(fs.config());
    assertEquals(0, again.exit(), again.text());
    assertEquals(0, again.found(), again.text());

    // and the file system shows it: nothing reachable lost
    Thread.sleep(1200); // the kernel's and the client's caches (1 s) forget the old names
    assertFalse(Sh.ok(m, "ls d").contains("gone"));
    assertEquals("2 2\n", Sh.ok(m, "stat -c %h d/linked d/sub | tr '\\n' ' ' | sed 's/ $/\\n/'"));
    String lostName = "lost+found/#" + lost.substring(lost.indexOf(':') + 1);
    Sh.ok(m, "mv '" + lostName + "' d/lost && sha256sum -c " + tmp.resolve("sums"));
    for (Path p : List.of(datafilePath(fs, stray))) {
      assertFalse(Files.exists(p), p + " still there");
    }
    assertEquals(0, fsck(fs.config()).found(), "moving a file out of lost+found is fine");
    String text = run(fs.config(), "fsck", "--config", fs.config().toString());
    assertTrue(text.contains("fsck: nothing to repair"), text);
  }

  /** Text output of a flowfs command. */
  static String run(Path conf, String... args) {
    StringWriter out = new StringWriter();
    Main.run(new PrintWriter(out), new PrintWriter(new StringWriter()), args);
    return out.toString();
  }

  @Test
  void fsck_underLiveTraffic_removesNothingInUse() throws Exception {
    Path m = fs.mountPoint();
    // writers create, write and rename files while fsck checks and repairs; each logs what it finished
    List<Process> writers = new ArrayList<>();
    for (int w = 0; w < 3; w++) {
      String dir = "w" + w;
      writers.add(new ProcessBuilder("bash", "-c", "mkdir " + dir + " && cd " + dir
          + " && for i in $(seq 1 100000); do head -c $((i * 997 % 200000 + 1)) /dev/urandom > f$i"
          + " && mv f$i g$i && sha256sum g$i >> "
          + tmp.resolve(dir + ".sums") + " || exit 1; done").directory(m.toFile()).start());
    }
    try {
      Thread.sleep(1500);
      for (int k = 0; k < 3; k++) {
        Run r = fsck(fs.config());
        assertEquals(0, r.found(), r.text());
        assertEquals(0, r.exit(), r.text());
      }
    } finally {
      writers.forEach(Process::destroy);
      for (Process p : writers) {
        p.waitFor(30, TimeUnit.SECONDS);
      }
    }
    for (int w = 0; w < 3; w++) {
      String dir = "w" + w;
      // the last line may be cut by the kill; every complete one checks out
      Sh.ok(m, "cd " + dir + " && grep -E '^[0-9a-f]{64}  g[0-9]+$' " + tmp.resolve(dir + ".sums")
          + " | sha256sum -c --quiet");
    }
  }
}
