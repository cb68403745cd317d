package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.flowfs.client.Caller;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.common.HugePagePool;
import org.flowfs.common.config.FlowConfig;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.rpc.NetRuntime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A mount on the I/O servers' machine hands bulk payloads over in shared memory (ShmSlots): a
 * write flow's buffers to the servers, a read flow's back; the bytes come back as written, cold,
 * through real tools, with the servers in this JVM and as separate processes; the files in
 * {@code /dev/shm} are gone once mapped; {@code client.shared-memory = false} sends it all over
 * the socket, as before.
 */
class SharedMemoryTest {
  private static final String IO = "head -c 24000000 /dev/urandom > data.src && dd if=data.src of=big bs=1M conv=fsync status=none"
      + " && head -c 40000 /dev/urandom > small.src && cp small.src small"
      + " && echo 3 > /proc/sys/vm/drop_caches && cmp data.src big && cmp small.src small"
      + " && dd if=big of=/dev/null bs=4k skip=777 count=1000 status=none && rm data.src small.src";

  private static long servers(EmbeddedDeployment fs, String counter) {
    long sum = 0;
    for (int i = 0; i < fs.ioServers(); i++) {
      sum += fs.cluster().io(i).counters().get(counter);
    }
    return sum;
  }

  /** The shared-memory files this machine has now, by name. */
  private static long shmFiles() throws Exception {
    try (Stream<Path> s = Files.list(Path.of("/dev/shm"))) {
      return s.filter(p -> p.getFileName().toString().startsWith("flowfs-")).count();
    }
  }

  @Test
  void embedded_bulkBytesGoThroughSharedMemory(@TempDir Path tmp) throws Exception {
    try (EmbeddedDeployment fs = new EmbeddedDeployment(tmp, 4, "layout.head-bytes = 0\n")) {
      Path m = fs.mountPoint();
      Sh.ok(m, IO);
      String why = fs.counters("shm.");
      assertTrue(fs.counter("shm.attached") >= 8, "both directions of every connection: " + why);
      assertTrue(fs.counter("shm.sent-bytes") >= 20_000_000, "the written bytes went through slots: " + why);
      assertTrue(fs.counter("shm.received-bytes") >= 20_000_000, "and the read ones came back in slots: " + why);
      assertEquals(fs.counter("shm.sent-bytes"), servers(fs, "shm.received-bytes"), "what the servers took");
      assertEquals(fs.counter("shm.received-bytes"), servers(fs, "shm.sent-bytes"), "what they sent");
      assertEquals(0, servers(fs, "shm.refused"));
      assertEquals(0, servers(fs, "store.direct-read-bytes"), "io.direct-read = auto: none into slots of 4 KiB pages");
      for (int i = 0; i < 50 && shmFiles() > 0; i++) {
        Thread.sleep(100); // a connection made last may still be attaching
      }
      assertEquals(0, shmFiles(), "the files are unlinked once mapped");
    }
  }

  /** With io.direct-read, a read flow's aligned buffers go from the device straight into the slots. */
  @Test
  void directReads_fromTheDeviceIntoTheSlots(@TempDir Path tmp) throws Exception {
    try (EmbeddedDeployment fs = new EmbeddedDeployment(tmp, 2, "layout.head-bytes = 0\nio.direct-read = 128KiB\n")) {
      Sh.ok(fs.mountPoint(), IO);
      String why = fs.counters("shm.");
      assertTrue(fs.counter("shm.received-bytes") >= 20_000_000, why);
      assertTrue(servers(fs, "store.direct-read-bytes") >= 20_000_000, "read past the page cache: " + servers(fs, "store.direct-read-bytes"));
    }
  }

  /**
   * With node.shm-dir on a hugetlbfs, the slots are in huge pages, and a read flow's aligned
   * buffers go from the device straight into them (io.direct-read = auto, the default), each one
   * piece of memory; flow buffers are 1 MiB there (flow.buffer-size = auto).
   */
  @Test
  void hugePages_slotsThere_directReadsIntoThem(@TempDir Path tmp) throws Exception {
    assumeTrue("root".equals(System.getProperty("user.name")), "mounts a hugetlbfs: needs root");
    try (HugePagePool huge = HugePagePool.mount(tmp.resolve("huge"), 96, "")) {
      long free = HugePagePool.available();
      assumeTrue(free >= 96, "the kernel found fewer than 96 huge pages to add: " + free);
      String conf = "layout.head-bytes = 0\nnode.shm-dir = " + huge.dir() + "\n";
      try (EmbeddedDeployment fs = new EmbeddedDeployment(tmp.resolve("fs"), 2, conf)) {
        assertEquals(FlowConfig.HUGE_PAGES_BUFFER_SIZE, fs.cluster().config().flow().bufferSize());
        Sh.ok(fs.mountPoint(), IO);
        String why = fs.counters("shm.");
        assertTrue(fs.counter("shm.received-bytes") >= 20_000_000, why);
        assertEquals(0, fs.counter("shm.dir-full") + servers(fs, "shm.dir-full"), "every file in huge pages: " + why);
        assertTrue(servers(fs, "store.direct-read-bytes") >= 20_000_000, "read past the page cache: " + servers(fs, "store.direct-read-bytes"));
        assertTrue(HugePagePool.available() <= free - 8 * 5, "8 files of 10 MiB mapped: " + HugePagePool.available() + " of " + free + " free");
      }
      for (int i = 0; i < 50 && HugePagePool.available() < free; i++) {
        Thread.sleep(100); // the last payload over a mapping may still be on its way to release
      }
      assertEquals(free, HugePagePool.available(), "every huge page given back once the connections closed");
      try (Stream<Path> left = Files.list(huge.dir())) {
        assertEquals(0, left.count(), "the files are unlinked once mapped");
      }
    }
  }

  /**
   * A client whose flow buffers are smaller than the servers' (another machine's config, or
   * flow.buffer-size = auto on hosts whose shared memory differs) has slots of its size: the
   * servers' read flows then send buffers no larger, so every one still goes through a slot.
   */
  @Test
  void clientWithSmallerFlowBuffers_serversReadIntoItsSlots(@TempDir Path tmp) throws Exception {
    try (EmbeddedDeployment fs = new EmbeddedDeployment(tmp, 2, "layout.head-bytes = 0\nflow.buffer-size = 1MiB\n");
        NetRuntime net = NetRuntime.create("it-small-buffers", 1)) {
      FlowFsConfig servers = fs.cluster().config();
      FlowConfig f = servers.flow();
      FlowFsConfig small = new FlowFsConfig(servers.fs(), servers.meta(), servers.ioServers(), servers.io(),
          servers.layout(), servers.rpc(), servers.client(),
          new FlowConfig(f.protocol(), 256 << 10, f.buffers(), f.shortWriteMax(), f.eagerWriteMax(), f.eagerReadMax()),
          servers.node(), servers.effective());
      byte[] data = new byte[16 << 20];
      new Random(7).nextBytes(data);
      try (FileSystemClient client = new FileSystemClient(small, net)) {
        OpenFile w = client.create("/small-buffers", 0644, 1, Caller.ROOT);
        client.write(w, 0, Unpooled.wrappedBuffer(data));
        client.release(w);
        readBack(client, data); // every connection made, and its memory shared (that finishes in the background)
        long attached = (long) fs.ioServers() * servers.rpc().connections() * 2; // both directions
        for (int i = 0; i < 100 && client.counters().get("shm.attached") < attached; i++) {
          Thread.sleep(100);
        }
        assertTrue(client.counters().get("shm.attached") >= attached, "shm.attached " + client.counters().get("shm.attached"));
        long full = servers(fs, "shm.full");
        long before = client.counters().get("shm.received-bytes");
        readBack(client, data);
        long received = client.counters().get("shm.received-bytes") - before;
        assertTrue(received >= data.length, "every read buffer through a slot: " + received + " bytes");
        assertEquals(full, servers(fs, "shm.full"), "no read buffer too large for the client's slots");
      }
    }
  }

  /** Reads {@code /small-buffers} through {@code client} and checks it holds {@code data}. */
  private static void readBack(FileSystemClient client, byte[] data) {
    OpenFile r = client.open("/small-buffers", 0);
    ByteBuf got = Unpooled.directBuffer(data.length);
    try {
      while (got.writerIndex() < data.length) {
        assertTrue(client.read(r, got.writerIndex(), data.length - got.writerIndex(), got) > 0, "short read");
      }
      assertArrayEquals(data, ByteBufUtil.getBytes(got));
    } finally {
      got.release();
      client.release(r);
    }
  }

  @Test
  void turnedOff_everythingGoesOverTheSocket(@TempDir Path tmp) throws Exception {
    try (EmbeddedDeployment fs = new EmbeddedDeployment(tmp, 2, "layout.head-bytes = 0\nclient.shared-memory = false\n")) {
      Sh.ok(fs.mountPoint(), IO);
      assertEquals(0, fs.counter("shm.attached"));
      assertEquals(0, fs.counter("shm.sent") + fs.counter("shm.received"));
      assertEquals(0, servers(fs, "shm.attached"));
      assertTrue(fs.counter("path.flow.ops") > 0);
    }
  }

  @Test
  void processes_bulkBytesGoThroughSharedMemory(@TempDir Path tmp) throws Exception {
    try (ProcessDeployment fs = new ProcessDeployment(tmp, 2, "layout.head-bytes = 0\n")) {
      Path m = fs.mountPoint();
      Sh.ok(m, IO);
      String stats = Sh.ok(m, "getfattr -n flowfs.stats --only-values .");
      assertTrue(counter(stats, "shm.sent-bytes") >= 20_000_000, stats);
      assertTrue(counter(stats, "shm.received-bytes") >= 20_000_000, stats);
      assertEquals(0, counter(stats, "shm.refused"), stats);
    }
  }

  /**
   * The shape of the shipped units: the I/O servers run as their own user, who may not open the
   * root mount's files in /dev/shm (0600); the first connections' offers are refused by the server,
   * which then makes the files itself (the mount, root, may open them), and later connections ask
   * it so straight away.
   */
  @Test
  void serversAsAnotherUser_makeTheFiles(@TempDir Path tmp) throws Exception {
    assumeTrue("root".equals(System.getProperty("user.name")), "runs the I/O servers as another user: needs root");
    try (ProcessDeployment fs = new ProcessDeployment(tmp, 2, "layout.head-bytes = 0\n", "nobody")) {
      Path m = fs.mountPoint();
      Sh.ok(m, IO);
      String stats = Sh.ok(m, "getfattr -n flowfs.stats --only-values .");
      assertTrue(counter(stats, "shm.sent-bytes") >= 20_000_000, stats);
      assertTrue(counter(stats, "shm.received-bytes") >= 20_000_000, stats);
      assertTrue(counter(stats, "shm.attached") >= 4, "both directions to both servers: " + stats);
      assertEquals(0, counter(stats, "shm.refused"), stats);
      String servers = OperatorToolsTest.ok("stats", "--config", fs.config().toString(), "--no-mounts", "--json").out();
      assertTrue(sum(servers, "shm.refused") >= 2, "each server refused the mount's files (on its first connections): " + servers);
      assertEquals(counter(stats, "shm.attached"), sum(servers, "op.ShmMakeReq"), "every file shared is one a server made: " + servers);
      assertEquals(counter(stats, "shm.sent-bytes"), sum(servers, "shm.received-bytes"), servers);
      for (int i = 0; i < 50 && shmFiles() > 0; i++) {
        Thread.sleep(100);
      }
      assertEquals(0, shmFiles(), "the servers' files are unlinked once mapped");
    }
  }

  private static long counter(String json, String name) {
    Matcher x = Pattern.compile("\"" + Pattern.quote(name) + "\"\\s*:\\s*(\\d+)").matcher(json);
    return x.find() ? Long.parseLong(x.group(1)) : 0;
  }

  private static long sum(String json, String name) {
    Matcher x = Pattern.compile("\"" + Pattern.quote(name) + "\"\\s*:\\s*(\\d+)").matcher(json);
    long sum = 0;
    while (x.find()) {
      sum += Long.parseLong(x.group(1));
    }
    return sum;
  }
}
