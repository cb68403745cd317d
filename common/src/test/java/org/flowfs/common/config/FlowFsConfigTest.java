package org.flowfs.common.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.flowfs.common.HugePagePool;
import org.flowfs.common.flow.BufferedFlowProtocol;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The config file: a valid file gives its values and the defaults of what it leaves out; a bad one
 * is refused with every problem at once, each naming its key (or its line, for a line that has
 * no key).
 */
class FlowFsConfigTest {
  private static final String SECRET = "test-secret-0123456789";
  private static final String MINIMAL = """
      fs.secret = test-secret-0123456789
      meta.address = meta.example:7000
      io.0.address = io0.example:7001
      """;

  @Test
  void parse_minimalFile_hasTheDefaults() {
    FlowFsConfig c = FlowFsConfig.parse("t.conf", MINIMAL);
    assertEquals("flowfs", c.fs().name());
    assertEquals(SECRET, c.fs().secret());
    assertEquals(InetSocketAddress.createUnresolved("meta.example", 7000), c.meta().address());
    assertNull(c.meta().dir());
    assertEquals(2, c.meta().threads());
    assertEquals(512, c.meta().commitBatch());
    assertEquals(Path.of("/dev/shm"), c.node().shmDir());
    assertEquals(256, c.meta().precreateBatch());
    assertEquals(64, c.meta().precreateLowWater());
    assertEquals(Duration.ofSeconds(3), c.meta().dirLeaseTerm());
    assertEquals(Duration.ofMinutes(2), c.meta().dirLeaseGrace());
    assertEquals(1, c.ioServers().size());
    assertEquals(new IoServerConfig(0, InetSocketAddress.createUnresolved("io0.example", 7001), null), c.ioServer(0));
    assertEquals(new IoConfig(4, 1024, 8L << 20, true, 128L << 10, IoConfig.DIRECT_READ_AUTO, true), c.io());
    assertEquals("auto", c.effective().get("io.direct-read"));
    assertEquals(BufferedFlowProtocol.DEFAULT_BUFFER_SIZE, c.flow().bufferSize(), "auto, with /dev/shm of 4 KiB pages");
    assertEquals("auto", c.effective().get("flow.buffer-size"));
    assertEquals(new LayoutConfig("simple_stripe", 64 * 1024, 0, 64 * 1024), c.layout());
    assertEquals(new RpcConfig(Duration.ofSeconds(30), Duration.ofSeconds(5), 16L << 20, 2, Duration.ofSeconds(10),
        Secret.of(SECRET), "cubic"), c.rpc());
    assertEquals(new ClientConfig(Duration.ofSeconds(1), Duration.ofSeconds(1), 200_000, 8L << 20, 8L << 20, 64 << 10, 32, 0, 16, true, true, true, true), c.client());
    assertEquals("30s", c.effective().get("rpc.timeout"));
    assertEquals("16MiB", c.effective().get("rpc.max-frame"));
  }

  @Test
  void parse_fullFile_everyKeyRead() {
    String text = String.join("\r\n",
        "# a comment, then a blank line",
        "",
        "fs.name = test-fs.1",
        "fs.secret = 0123456789abcdef0123",
        "meta.address=[::1]:7000",
        "meta.dir = /var/lib/flowfs/meta",
        "meta.threads = 8",
        "meta.commit-batch = 100",
        "meta.precreate-batch = 32",
        "meta.precreate-low-water = 0",
        "meta.dir-lease-term = 10s",
        "meta.dir-lease-grace = 15m",
        "io.0.address = 10.0.0.1:7001",
        "io.0.dir = /srv/io0",
        "io.1.address = 10.0.0.2:0",
        "io.threads = 16",
        "io.open-files = 4096",
        "io.direct-write = 0",
        "io.direct-read = 256KiB",
        "io.reads-anywhere = false",
        "flow.buffer-size = 512KiB",
        "layout.distribution = basic_dist",
        "layout.strip-size = 1MiB",
        "layout.servers = 2",
        "layout.head-bytes = 0",
        "rpc.timeout = 2m",
        "rpc.connect-timeout = 500ms",
        "rpc.max-frame = 32M",
        "rpc.connections = 4",
        "rpc.auth-timeout = 3s",
        "rpc.loopback-congestion = default",
        "client.attr-timeout = 0",
        "client.entry-timeout = 10s",
        "client.cache-entries = 1000",
        "client.write-behind = 0",
        "client.read-ahead = 256k",
        "client.read-around = 0",
        "client.fuse-nice = -5",
        "client.readdir-ahead = 4",
        "client.open-store = off",
        "client.shared-memory = no",
        "client.readdir-plus = off",
        "client.posix-acl = false",
        "node.service-cpus = 3, 0-1",
        "node.shm-dir = /dev/hugepages",
        "   # an indented comment",
        "");
    FlowFsConfig c = FlowFsConfig.parse("full.conf", text);
    assertEquals("test-fs.1", c.fs().name());
    assertEquals("0123456789abcdef0123", c.fs().secret());
    assertEquals(InetSocketAddress.createUnresolved("::1", 7000), c.meta().address());
    assertEquals(Path.of("/var/lib/flowfs/meta"), c.meta().dir());
    assertEquals(8, c.meta().threads());
    assertEquals(100, c.meta().commitBatch());
    assertEquals(32, c.meta().precreateBatch());
    assertEquals(0, c.meta().precreateLowWater());
    assertEquals(Duration.ofSeconds(10), c.meta().dirLeaseTerm());
    assertEquals(Duration.ofMinutes(15), c.meta().dirLeaseGrace());
    assertEquals(2, c.ioServers().size());
    assertEquals(Path.of("/srv/io0"), c.ioServer(0).requireDir());
    assertEquals(0, c.ioServer(1).address().getPort());
    assertNull(c.ioServer(1).dir());
    assertEquals(new IoConfig(16, 4096, 8L << 20, true, 0, 256L << 10, false), c.io());
    assertEquals("0-1,3", c.node().serviceCpus().toString());
    assertEquals("0-1,3", c.effective().get("node.service-cpus"));
    assertEquals(Path.of("/dev/hugepages"), c.node().shmDir());
    assertEquals(512 << 10, c.flow().bufferSize());
    assertEquals(new LayoutConfig("basic_dist", 1L << 20, 2, 0), c.layout());
    assertEquals(new RpcConfig(Duration.ofMinutes(2), Duration.ofMillis(500), 32L << 20, 4, Duration.ofSeconds(3),
        Secret.of("0123456789abcdef0123"), ""), c.rpc());
    assertEquals(new ClientConfig(Duration.ZERO, Duration.ofSeconds(10), 1000, 0, 256 << 10, 0, 32, -5, 4, false, false, false, false), c.client());
    assertEquals("(20 characters)", c.effective().get("fs.secret"), "the secret is masked");
    assertFalse(c.render().contains("0123456789abcdef"), "render never writes the secret");
    assertFalse(c.toString().contains("0123456789abcdef"), "nor does toString");
  }

  @Test
  void parse_withoutSecret_isRefusedNamingTheKey() {
    ConfigException e = assertThrows(ConfigException.class,
        () -> FlowFsConfig.parse("t.conf", "meta.address = m:1\nio.0.address = i:2\n"));
    assertProblem(e, "t.conf: key 'fs.secret' is required but missing");
    assertEquals(1, e.problems().size(), e::getMessage);
    assertProblem(assertThrows(ConfigException.class,
        () -> FlowFsConfig.parse("t.conf", "fs.secret =   \nmeta.address = m:1\nio.0.address = i:2\n")),
        "key 'fs.secret' is required but missing");
    assertProblem(assertThrows(ConfigException.class,
        () -> FlowFsConfig.of(Map.of("meta.address", "m:1", "io.0.address", "i:2"))), "key 'fs.secret'");
  }

  @Test
  void render_thenParse_givesTheSameConfig() {
    FlowFsConfig c = FlowFsConfig.parse("t.conf", MINIMAL + """
        io.1.address = [fe80::1]:7002
        rpc.timeout = 1500ms
        layout.strip-size = 12288
        client.read-ahead = 1GiB
        """);
    // the secret is never rendered: a process adds it from where the operator keeps it
    assertEquals(c, FlowFsConfig.parse("rendered", c.render() + "fs.secret = " + SECRET + "\n"));
  }

  @Test
  void parse_missingRequiredKeys_nameThem() {
    ConfigException e = assertThrows(ConfigException.class, () -> FlowFsConfig.parse("t.conf", "io.0.dir = /srv\n"));
    assertProblem(e, "t.conf: key 'meta.address' is required but missing");
    assertProblem(e, "key 'io.0.address' is required but missing");

    e = assertThrows(ConfigException.class, () -> FlowFsConfig.parse("t.conf", "meta.address = m:1\n"));
    assertProblem(e, "key 'io.0.address' is required");

    e = assertThrows(ConfigException.class, () -> FlowFsConfig.parse("t.conf", "meta.address =   \n" + "io.0.address = i:1\n"));
    assertProblem(e, "key 'meta.address' is required but missing");
  }

  @Test
  void parse_badSize_namesKey() {
    for (String bad : new String[] {"lots", "64XB", "-1", "1.5M", "k", "64 K B"}) {
      ConfigException e = refused("client.write-behind = " + bad);
      assertProblem(e, "key 'client.write-behind': '" + bad + "' is not a size");
      assertEquals(1, e.problems().size(), e::getMessage);
    }
  }

  @Test
  void parse_sizeOutOfRange_namesKeyAndBounds() {
    assertProblem(refused("layout.strip-size = 1k"), "key 'layout.strip-size': 1KiB is outside 4KiB..1GiB");
    assertProblem(refused("layout.head-bytes = 2MiB"), "key 'layout.head-bytes': 2MiB is outside 0..1MiB");
    assertProblem(refused("io.direct-write = 2GiB"), "key 'io.direct-write': 2GiB is outside 0..1GiB");
    assertProblem(refused("io.direct-read = lots"), "key 'io.direct-read'");
    assertProblem(refused("io.direct-read = 2GiB"), "key 'io.direct-read': 2GiB is outside 0..1GiB");
    assertProblem(refused("flow.buffer-size = 16MiB"), "key 'flow.buffer-size': 16MiB is outside 4KiB..8MiB");
    assertProblem(refused("flow.buffer-size = big"), "key 'flow.buffer-size'");
    assertProblem(refused("flow.buffer-size = 8MiB\nrpc.max-frame = 4MiB"),
        "key 'flow.buffer-size' must be smaller than 'rpc.max-frame'");
    assertProblem(refused("io.reads-anywhere = sometimes"), "key 'io.reads-anywhere'");
    assertProblem(refused("client.fuse-nice = -21"), "key 'client.fuse-nice'");
    assertProblem(refused("client.fuse-nice = 1"), "key 'client.fuse-nice'");
    assertProblem(refused("client.readdir-ahead = 65"), "key 'client.readdir-ahead'");
    assertProblem(refused("client.open-store = sometimes"), "key 'client.open-store'");
    assertProblem(refused("client.shared-memory = maybe"), "key 'client.shared-memory'");
    assertProblem(refused("node.service-cpus = one"), "key 'node.service-cpus': 'one' is not a CPU list");
    assertProblem(refused("node.service-cpus = 3-1"), "key 'node.service-cpus': '3-1' is a range that ends before it starts");
    assertProblem(refused("node.service-cpus = 1024"), "key 'node.service-cpus': CPU 1024 is beyond");
    assertProblem(refused("node.shm-dir = hugepages"), "key 'node.shm-dir': 'hugepages' is not an absolute path");
    assertProblem(refused("layout.head-bytes = 1MiB\nrpc.max-frame = 1MiB"),
        "key 'layout.head-bytes' must be smaller than 'rpc.max-frame'");
    assertProblem(refused("rpc.max-frame = 2GiB"), "key 'rpc.max-frame': 2GiB is outside 1MiB..1GiB");
    assertProblem(refused("client.read-ahead = 9223372036854775807k"), "key 'client.read-ahead': ");
    assertProblem(refused("client.read-ahead = 99999999999999999999"), "key 'client.read-ahead': ");
    assertProblem(refused("client.read-around = 6k"), "key 'client.read-around' must be a multiple of 4KiB");
    assertProblem(refused("client.read-around = 8MiB"), "key 'client.read-around': 8MiB is outside 0..4MiB");
  }

  @Test
  void parse_badDuration_namesKey() {
    for (String bad : new String[] {"30x", "-1s", "1.5s", "ms", "5d"}) {
      assertProblem(refused("rpc.timeout = " + bad), "key 'rpc.timeout': '" + bad + "' is not a duration");
    }
    assertProblem(refused("rpc.timeout = 50ms"), "key 'rpc.timeout': 50ms is outside 100ms..3600s");
    assertProblem(refused("client.attr-timeout = 2h"), "key 'client.attr-timeout': 7200s is outside 0s..3600s");
    assertProblem(refused("meta.dir-lease-term = 10ms"), "key 'meta.dir-lease-term': 10ms is outside 100ms..300s");
    assertProblem(refused("meta.dir-lease-grace = 0s"), "key 'meta.dir-lease-grace': 0s is outside 1s..3600s");
  }

  @Test
  void parse_hugeDuration_isAProblemNamingTheKey() {
    // digits that fit a long but overflow a Duration must be a problem like any other, not a crash
    ConfigException e = refused("rpc.timeout = 9223372036854775807h\nrpc.connections = 0");
    assertProblem(e, "key 'rpc.timeout'");
    assertProblem(e, "key 'rpc.connections'");
    assertProblem(refused("rpc.connect-timeout = 999999999999999999m"), "key 'rpc.connect-timeout'");
  }

  @Test
  void parse_integerOutOfRangeOrNotANumber_namesKey() {
    assertProblem(refused("io.threads = 0"), "key 'io.threads': 0 is outside 1..256");
    assertProblem(refused("io.threads = 257"), "key 'io.threads': 257 is outside 1..256");
    assertProblem(refused("rpc.connections = 65"), "key 'rpc.connections': 65 is outside 1..64");
    assertProblem(refused("io.open-files = many"), "key 'io.open-files': 'many' is not an integer");
    assertProblem(refused("meta.threads = 99999999999"), "key 'meta.threads': '99999999999' is not an integer");
  }

  @Test
  void parse_unknownKey_namesIt() {
    ConfigException e = refused("rpc.timout = 5s");
    assertProblem(e, "t.conf: key 'rpc.timout' is not a known setting");
    assertEquals(1, e.problems().size());
  }

  @Test
  void parse_badChoiceNameAddressOrSecret_namesKey() {
    assertProblem(refused("layout.distribution = round_robin"), "key 'layout.distribution': 'round_robin' is not one of");
    assertProblem(refused("fs.name = has space"), "key 'fs.name': 'has space' is not a name");
    assertProblem(refused("rpc.loopback-congestion = Cubic!"), "key 'rpc.loopback-congestion': 'Cubic!' is not a congestion");
    assertFileProblem("fs.secret = short\nmeta.address = m:1\nio.0.address = i:1\n",
        "key 'fs.secret': must be at least 16 characters");
    for (String bad : new String[] {"localhost", "host:", ":7000", "host:http", "host:65536", "host:-1"}) {
      assertFileProblem("meta.address = " + bad + "\nio.0.address = i:1\n", "key 'meta.address': ");
    }
  }

  @Test
  void parse_duplicateKey_namesKeyAndLine() {
    ConfigException e = refused("io.threads = 2\nio.threads = 3");
    assertProblem(e, "key 'io.threads' is set twice");
    assertProblem(e, ":5:");
  }

  @Test
  void parse_gapInIoServerIds_namesTheMissingKey() {
    ConfigException e = assertThrows(ConfigException.class,
        () -> FlowFsConfig.parse("t.conf", "meta.address = m:1\nio.0.address = a:1\nio.2.address = c:1\n"));
    assertProblem(e, "key 'io.1.address' is missing");

    e = assertThrows(ConfigException.class, () -> FlowFsConfig.parse("t.conf", "meta.address = m:1\nio.1.address = b:1\n"));
    assertProblem(e, "key 'io.0.address' is missing");
  }

  @Test
  void parse_moreLayoutServersThanIoServers_namesKey() {
    assertProblem(refused("layout.servers = 2"), "key 'layout.servers': 2 is more than the 1 I/O servers");
  }

  @Test
  void parse_lineWithoutEquals_namesTheLine() {
    ConfigException e = refused("just some words\n= no key");
    assertProblem(e, ":4: expected 'key = value', found 'just some words'");
    assertProblem(e, ":5: expected 'key = value', found '= no key'");
  }

  @Test
  void parse_severalProblems_reportedTogether() {
    ConfigException e = refused(String.join("\n",
        "client.write-behind = lots",
        "rpc.timeout = soon",
        "io.threads = 0",
        "rpc.timout = 5s",
        "layout.distribution = nope"));
    assertProblem(e, "'client.write-behind'");
    assertProblem(e, "'rpc.timeout'");
    assertProblem(e, "'io.threads'");
    assertProblem(e, "'rpc.timout'");
    assertProblem(e, "'layout.distribution'");
    assertEquals(5, e.problems().size(), e::getMessage);
    assertEquals(String.join("\n", e.problems()), e.getMessage());
  }

  @Test
  void parse_syntaxAndValueProblems_reportedTogether() {
    ConfigException e = refused(String.join("\n", "io.threads = 2", "io.threads = 3", "no equals here", "rpc.timeout = soon"));
    assertProblem(e, "key 'io.threads' is set twice");
    assertProblem(e, "expected 'key = value'");
    assertProblem(e, "key 'rpc.timeout'");
  }

  @Test
  void of_mapOfPairs_likeAFile() {
    FlowFsConfig c = FlowFsConfig.of(Map.of("meta.address", "m:1", "io.0.address", "i:2", "rpc.timeout", "200ms",
        "fs.secret", SECRET));
    assertEquals(Duration.ofMillis(200), c.rpc().timeout());
    ConfigException e = assertThrows(ConfigException.class,
        () -> FlowFsConfig.of(Map.of("meta.address", "m:1", "fs.secret", SECRET)));
    assertProblem(e, "config: key 'io.0.address'");
  }

  @Test
  void load_missingFile_namesIt(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("absent.conf");
    ConfigException e = assertThrows(ConfigException.class, () -> FlowFsConfig.load(f));
    assertProblem(e, "config file " + f + " does not exist");
    Files.writeString(f, MINIMAL + "io.threads = x\n");
    assertProblem(assertThrows(ConfigException.class, () -> FlowFsConfig.load(f)), f + ": key 'io.threads'");
  }

  @Test
  void ioServer_notConfigured_namesKey() {
    FlowFsConfig c = FlowFsConfig.parse("t.conf", MINIMAL);
    assertProblem(assertThrows(ConfigException.class, () -> c.ioServer(1)), "key 'io.1.address'");
    assertProblem(assertThrows(ConfigException.class, () -> c.ioServer(-1)), "key 'io.-1.address'");
    assertProblem(assertThrows(ConfigException.class, () -> c.ioServer(0).requireDir()), "key 'io.0.dir'");
    assertProblem(assertThrows(ConfigException.class, () -> c.meta().requireDir()), "key 'meta.dir'");
  }

  @Test
  void withAddresses_replacesWhereServersListen() {
    FlowFsConfig c = FlowFsConfig.parse("t.conf", MINIMAL + "io.1.address = h:0\nio.0.dir = /d\n");
    FlowFsConfig w = c.withAddresses(new InetSocketAddress("127.0.0.1", 4000),
        List.of(new InetSocketAddress("127.0.0.1", 4001), new InetSocketAddress("127.0.0.1", 4002)));
    assertEquals(4000, w.meta().address().getPort());
    assertEquals(List.of(4001, 4002), w.ioServers().stream().map(s -> s.address().getPort()).collect(Collectors.toList()));
    assertEquals(Path.of("/d"), w.ioServer(0).dir());
    assertEquals(c.rpc(), w.rpc());
  }

  /**
   * {@code flow.buffer-size = auto} follows the pages of {@code node.shm-dir}: 1 MiB buffers on a
   * hugetlbfs, 256 KiB elsewhere (and where the directory cannot be asked); a size is taken as it is.
   */
  @Test
  void parse_flowBufferSizeAuto_followsThePagesOfShmDir(@TempDir Path dir) throws Exception {
    String shm = MINIMAL + "node.shm-dir = " + dir + "\n";
    assertEquals(BufferedFlowProtocol.DEFAULT_BUFFER_SIZE, FlowFsConfig.parse("t.conf", shm).flow().bufferSize());
    assertEquals(BufferedFlowProtocol.DEFAULT_BUFFER_SIZE,
        FlowFsConfig.parse("t.conf", MINIMAL + "node.shm-dir = " + dir.resolve("absent") + "\n").flow().bufferSize());
    FlowFsConfig sized = FlowFsConfig.parse("t.conf", shm + "flow.buffer-size = 2MiB\n");
    assertEquals(2 << 20, sized.flow().bufferSize());
    assertEquals("2MiB", sized.effective().get("flow.buffer-size"));
    assumeTrue("root".equals(System.getProperty("user.name")), "mounts a hugetlbfs: needs root");
    try (HugePagePool huge = HugePagePool.mount(dir.resolve("huge"), 0, "")) {
      FlowFsConfig c = FlowFsConfig.parse("t.conf", MINIMAL + "node.shm-dir = " + huge.dir() + "\n");
      assertEquals(FlowConfig.HUGE_PAGES_BUFFER_SIZE, c.flow().bufferSize());
      assertEquals("auto", c.effective().get("flow.buffer-size"));
      assertEquals(256 << 10, FlowFsConfig.parse("t.conf", MINIMAL + "node.shm-dir = " + huge.dir()
          + "\nflow.buffer-size = 256KiB\n").flow().bufferSize(), "a size set is kept");
    }
  }

  // ---- helpers ------------------------------------------------------------------------------

  /** The minimal valid file plus {@code extra}, which must make it invalid. */
  private static ConfigException refused(String extra) {
    return assertThrows(ConfigException.class, () -> FlowFsConfig.parse("t.conf", MINIMAL + extra + "\n"));
  }

  private static void assertFileProblem(String text, String part) {
    assertProblem(assertThrows(ConfigException.class, () -> FlowFsConfig.parse("t.conf", text)), part);
  }

  static void assertProblem(ConfigException e, String part) {
    assertTrue(e.problems().stream().anyMatch(p -> p.contains(part)),
        () -> "no problem contains \"" + part + "\" in:\n" + String.join("\n", e.problems()));
  }
}
