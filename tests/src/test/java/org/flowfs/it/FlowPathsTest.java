package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;
import java.util.function.ToLongFunction;
import org.flowfs.common.Counters;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Through the mount, each I/O takes the path its size calls for (seed 001, section 8), as both the
 * client's and the servers' counters show, and the data is intact.
 */
class FlowPathsTest {
  static EmbeddedDeployment fs;
  static Path m;
  static Path local;

  @BeforeAll
  static void up(@TempDir Path tmp) throws Exception {
    local = tmp;
    fs = new EmbeddedDeployment(tmp, 4, "layout.head-bytes = 0\n"); // every byte to the I/O servers (FileHeadTest: the head)
    m = fs.mountPoint();
  }

  @AfterAll
  static void down() {
    if (fs != null) {
      fs.close();
    }
  }

  private static long servers(String counter) {
    long sum = 0;
    for (int i = 0; i < fs.ioServers(); i++) {
      sum += fs.cluster().io(i).counters().get(counter);
    }
    return sum;
  }

  /** Runs {@code script} and returns how much each path's op counters grew, client and servers. */
  private static Map<String, long[]> delta(String script) {
    String[] paths = {"short", "eager-write", "eager-read", "flow"};
    long[][] before = new long[paths.length][];
    for (int i = 0; i < paths.length; i++) {
      before[i] = new long[] {fs.counter("path." + paths[i] + ".ops"), servers("path." + paths[i] + ".ops")};
    }
    Sh.ok(m, script);
    Map<String, long[]> d = new java.util.TreeMap<>();
    for (int i = 0; i < paths.length; i++) {
      d.put(paths[i], new long[] {fs.counter("path." + paths[i] + ".ops") - before[i][0],
          servers("path." + paths[i] + ".ops") - before[i][1]});
    }
    return d;
  }

  private static void only(Map<String, long[]> d, String path) {
    d.forEach((p, v) -> {
      if (p.equals(path)) {
        assertTrue(v[0] > 0 && v[1] > 0, path + " was not used: client " + v[0] + ", servers " + v[1]);
      } else {
        assertEquals(0, v[0], p + " used by the client, expected only " + path);
        assertEquals(0, v[1], p + " used by the servers, expected only " + path);
      }
    });
  }

  @Test
  void tenKibWrite_takesTheShortPath() {
    Sh.ok(m, "head -c 10240 /dev/urandom > /tmp/flowfs-10k");
    Map<String, long[]> d = delta("dd if=/tmp/flowfs-10k of=short.bin bs=10k count=1 status=none");
    only(d, "short");
    assertEquals(1, d.get("short")[0], "one short write");
    Sh.ok(m, "echo 3 > /proc/sys/vm/drop_caches; cmp short.bin /tmp/flowfs-10k");
  }

  @Test
  void thirtyKibWrite_takesTheEagerPath() {
    Sh.ok(m, "head -c 30720 /dev/urandom > /tmp/flowfs-30k");
    Map<String, long[]> d = delta("dd if=/tmp/flowfs-30k of=eager.bin bs=30k count=1 status=none");
    only(d, "eager-write");
    assertEquals(1, d.get("eager-write")[0], "one eager write");
    // and reading 30 KiB back is an eager read
    Map<String, long[]> r = delta("echo 3 > /proc/sys/vm/drop_caches; cmp eager.bin /tmp/flowfs-30k");
    only(r, "eager-read");
  }

  @Test
  void oneMibWritesAndReads_flow() {
    Sh.ok(m, "head -c 1048576 /dev/urandom > /tmp/flowfs-1m");
    long bytesBefore = servers("path.flow.bytes");
    Map<String, long[]> w = delta("dd if=/tmp/flowfs-1m of=flow.bin bs=1M count=1 status=none");
    only(w, "flow");
    // 1 MiB in 64 KiB strips touches all four servers: one flow each, on both ends
    assertEquals(4, w.get("flow")[0]);
    assertEquals(4, w.get("flow")[1]);
    assertEquals(1048576, servers("path.flow.bytes") - bytesBefore);
    long sentBefore = servers("bytes.sendfile") + servers("shm.sent-bytes");
    Map<String, long[]> r = delta("echo 3 > /proc/sys/vm/drop_caches; cmp flow.bin /tmp/flowfs-1m");
    only(r, "flow");
    assertEquals(4, r.get("flow")[0]);
    // the servers sent every byte from the page cache (io.sendfile) or read it straight into the
    // mount's shared memory (this machine's), none through a buffer of their own
    assertEquals(1048576, servers("bytes.sendfile") + servers("shm.sent-bytes") - sentBefore);
  }

  /**
   * A large write goes to the datafiles past the servers' page cache ({@code io.direct-write}),
   * from the memory the servers' network reads placed it in: hardly a byte is copied on the way
   * (only what arrived in the same read as a frame's header, or what lies in no whole block).
   */
  @Test
  void largeWrite_goesPastThePageCache_fromWhereTheNetworkPlacedIt() {
    Path ref = local.resolve("direct.ref");
    Sh.ok(m, "head -c 16777216 /dev/urandom > " + ref);
    long direct = servers("store.direct-bytes");
    long staged = servers("store.direct-staged-bytes");
    Sh.ok(m, "dd if=" + ref + " of=direct.bin bs=1M conv=fsync status=none");
    long d = servers("store.direct-bytes") - direct;
    long copied = servers("store.direct-staged-bytes") - staged;
    assertTrue(d >= 12 << 20, "16 MiB written, " + d + " bytes of it direct");
    assertTrue(copied <= d / 8, copied + " of the " + d + " direct bytes were copied into a staging buffer first");
    Sh.ok(m, "echo 3 > /proc/sys/vm/drop_caches; cmp direct.bin " + ref);
  }

  @Test
  void sequentialStream_movesInFuseRequestsOfOneMib() {
    Sh.ok(m, "head -c 8388608 /dev/urandom > /tmp/flowfs-8m");
    long writes = fs.counter("fuse.write");
    Sh.ok(m, "dd if=/tmp/flowfs-8m of=stream.bin bs=1M status=none");
    // libfuse 2 alone would take 128 KiB a request: 64 of them
    assertEquals(8, fs.counter("fuse.write") - writes, "one FUSE write per 1 MiB");
    long reads = fs.counter("fuse.read");
    long gathered = fs.counter("fuse.read.gathered");
    Sh.ok(m, "echo 3 > /proc/sys/vm/drop_caches; cmp stream.bin /tmp/flowfs-8m");
    long n = fs.counter("fuse.read") - reads;
    assertTrue(n >= 8 && n <= 16, "8 MiB read cold in requests of up to 1 MiB (the kernel's read-ahead), not 64: " + n);
    // every answer went to the kernel from the frames the bytes arrived in (read-ahead windows of
    // views), none copied into one buffer first
    assertEquals(0, fs.counter("fuse.read.gathered") - gathered, "READ answers gathered by a copy");
  }

  /**
   * The mount clears set-ID bits itself (FUSE_HANDLE_KILLPRIV_V2), so the kernel asks for a file's
   * security.capability once, not before every write: 200 small writes, one FUSE request each.
   */
  @Test
  void smallWrites_costOneFuseRequestEach() {
    long writes = fs.counter("fuse.write");
    long xattrs = fs.counter("fuse.getxattr");
    Sh.ok(m, "dd if=/dev/zero of=small-writes.bin bs=4k count=200 status=none");
    assertEquals(200, fs.counter("fuse.write") - writes, "one FUSE write per write(2)");
    long asked = fs.counter("fuse.getxattr") - xattrs;
    assertTrue(asked <= 1, "the kernel asked for security.capability " + asked + " times for 200 writes");
  }
}
