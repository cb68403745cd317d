package org.flowfs.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.request.Elementary;
import org.flowfs.common.request.Request;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.rpc.RpcClient;
import org.flowfs.common.wire.IoOp.AllocateReq;
import org.flowfs.common.wire.IoOp.DataRemoveReq;
import org.flowfs.common.wire.IoOp.EagerWriteReq;
import org.flowfs.common.wire.IoOp.FlowAck;
import org.flowfs.common.wire.IoOp.FlowReq;
import org.flowfs.common.wire.IoOp.PrecreateReq;
import org.flowfs.common.wire.IoOp.ReadReq;
import org.flowfs.common.wire.IoOp.ReadResp;
import org.flowfs.common.wire.IoOp.ShmAttachReq;
import org.flowfs.common.wire.IoOp.ShmMadeResp;
import org.flowfs.common.wire.IoOp.ShmMakeReq;
import org.flowfs.common.wire.IoOp.SizesReq;
import org.flowfs.common.wire.IoOp.SyncReq;
import org.flowfs.common.wire.IoOp.TruncateReq;
import org.flowfs.common.wire.IoOp.WriteReq;
import org.flowfs.common.wire.LeakCheck;
import org.flowfs.common.wire.MessageRegistry;
import org.flowfs.common.wire.Req;
import org.flowfs.common.wire.RequestSpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Requests a broken or hostile member could send an I/O server: handles that are not its own,
 * reads longer than anything stored, eager writes whose data never comes, flows it cannot or
 * should not serve. Each is refused or served within bounds, and no path outside the storage
 * directory is ever touched.
 */
@ExtendWith(LeakCheck.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HostileRequestsTest {
  private static final int ID = 1;
  private static NetRuntime net;

  @TempDir
  Path root;
  private Path dir;
  private IoServer server;
  private RpcClient client;

  @BeforeAll
  static void startLoops() {
    net = NetRuntime.create("hostile-io-test", 2);
  }

  @AfterAll
  static void stopLoops() {
    net.close();
  }

  @BeforeEach
  void start() throws IOException {
    dir = root.resolve("io1");
    Map<String, String> m = new HashMap<>();
    m.put("fs.secret", "hostile-requests-test-secret");
    m.put("meta.address", "127.0.0.1:1");
    m.put("io.0.address", "127.0.0.1:1");
    m.put("io.1.address", "127.0.0.1:0");
    m.put("io.1.dir", dir.toString());
    m.put("rpc.max-frame", "1MiB");
    m.put("rpc.timeout", "500ms");
    FlowFsConfig config = FlowFsConfig.of(m);
    server = IoServer.open(config, ID, net);
    InetSocketAddress a = server.start();
    // the client waits longer than the server's timeouts, so what it sees is the server's doing
    m.put("rpc.timeout", "10s");
    client = new RpcClient("ioserver 1", net, InetSocketAddress.createUnresolved("127.0.0.1", a.getPort()),
        FlowFsConfig.of(m).rpc(), MessageRegistry.DEFAULT);
  }

  @AfterEach
  void stop() {
    client.close();
    server.close();
  }

  /** Handles no request should reach anything with: other servers', never issued, extremes. */
  private static List<Handle> hostileHandles() {
    return List.of(
        Handle.of(Handle.META_SERVER, 1), // the root directory's
        Handle.of(Handle.serverOfIo(0), 1), // another I/O server's
        Handle.of(Handle.serverOfIo(7), 5),
        Handle.of(0xFFFF, Handle.LOCAL_MASK),
        Handle.of(Handle.serverOfIo(ID), Handle.LOCAL_MASK), // ours, never issued
        Handle.of(Handle.serverOfIo(ID), 1_000_000),
        new Handle(-1),
        new Handle(Long.MIN_VALUE),
        new Handle(Long.MAX_VALUE),
        new Handle(1)); // local 1 of the metadata server's range
  }

  @Test
  void store_hostileHandles_neverTouchAFileOutsideTheStorageDirectory() throws Exception {
    Path storeDir = root.resolve("store");
    int server = Handle.serverOfIo(ID);
    List<Path> before;
    try (Stream<Path> s = Files.walk(root)) {
      before = s.filter(p -> !p.startsWith(storeDir) && !p.startsWith(dir)).toList();
    }
    FileBStreamStore store = new FileBStreamStore(storeDir, server, 8);
    try {
      List<Handle> handles = new ArrayList<>(hostileHandles());
      for (long local : new long[] {1, 0xFF, 0x100, Handle.LOCAL_MASK, 0x2E2E2F2E2E2F2E2EL & Handle.LOCAL_MASK}) {
        handles.add(Handle.of(server, local)); // its own range: one file each under data/
      }
      for (Handle h : handles) {
        boolean ours = h.server() == server;
        attempt(ours, () -> store.write(h, 0, Unpooled.wrappedBuffer(new byte[] {1, 2, 3})));
        attempt(ours, () -> store.write(h, Long.MAX_VALUE - 3, Unpooled.wrappedBuffer(new byte[] {1, 2, 3})));
        attempt(ours, () -> {
          store.truncate(h, 1 << 20);
          return null;
        });
        ByteBuf dst = ByteBufAllocator.DEFAULT.heapBuffer();
        try {
          attempt(ours, () -> store.read(h, 0, 10, dst));
        } finally {
          dst.release();
        }
        attempt(ours, () -> store.size(h));
        attempt(ours, () -> {
          store.sync(h, false);
          return null;
        });
        attempt(ours, () -> {
          store.remove(h);
          return null;
        });
        attempt(ours, () -> store.write(h, 5, Unpooled.wrappedBuffer(new byte[] {9})));
      }
    } finally {
      store.close();
    }
    // every file the store made is a datafile under data/<low byte>/<16 hex digits>, or an empty
    // one in its pool (data/free/)
    try (Stream<Path> s = Files.walk(storeDir)) {
      for (Path p : s.filter(Files::isRegularFile).toList()) {
        Path rel = storeDir.relativize(p);
        assertEquals(3, rel.getNameCount(), p.toString());
        assertEquals("data", rel.getName(0).toString(), p.toString());
        assertTrue(rel.getName(2).toString().matches("[0-9a-f]{16}"), p.toString());
        if (rel.getName(1).toString().equals("free")) {
          assertEquals(0, Files.size(p), "pooled files are empty: " + p);
        } else {
          assertEquals(rel.getName(1).toString(), rel.getName(2).toString().substring(14), "under its low byte: " + p);
        }
      }
    }
    // and outside the storage directory nothing changed
    try (Stream<Path> s = Files.walk(root)) {
      assertEquals(before, s.filter(p -> !p.startsWith(storeDir) && !p.startsWith(dir)).toList());
    }
  }

  /** Runs a store operation: on a handle of the store's range it may succeed, on any other it must fail with EINVAL. */
  private static void attempt(boolean ours, java.util.concurrent.Callable<?> op) throws Exception {
    try {
      op.call();
      assertTrue(ours, "an operation on another server's handle succeeded");
    } catch (FsException e) {
      if (!ours) {
        assertEquals(Errno.EINVAL, e.errno(), e.getMessage());
      }
    }
  }

  @Test
  void requests_onHandlesNotIssuedHere_areRefusedAndCreateNothing() throws Exception {
    for (Handle h : hostileHandles()) {
      List<Req<?>> reqs = List.of(
          new WriteReq(h, 0, Unpooled.wrappedBuffer(new byte[] {1})),
          new ReadReq(h, 0, 10),
          new TruncateReq(h, 100),
          new AllocateReq(h, 0, 1 << 20, false),
          new AllocateReq(h, 0, 1 << 20, true),
          new SizesReq(List.of(h)),
          new DataRemoveReq(List.of(h)),
          new SyncReq(h, false),
          new EagerWriteReq(1, h, 0, 1),
          new FlowReq(1, h, true, RequestSpec.of(Request.BYTE), 0, 10, DistSpec.of("basic_dist"), 0, 1, 0, null));
      for (Req<?> q : reqs) {
        FsException e = failure(client.call(q));
        assertEquals(Errno.ESTALE, e.errno(), q + ": " + e.getMessage());
      }
    }
    Path free = dir.resolve("data").resolve("free"); // empty files the pool made ahead are no datafiles
    try (Stream<Path> s = Files.walk(dir.resolve("data"))) {
      assertEquals(0, s.filter(Files::isRegularFile).filter(p -> !p.startsWith(free)).count(), "no datafile was made");
    }
  }

  @Test
  void read_longerThanTheDatafile_answersWhatItHolds() throws Exception {
    Handle h = client.call(new PrecreateReq(1)).get(5, TimeUnit.SECONDS).handles().get(0);
    client.call(new WriteReq(h, 0, Unpooled.wrappedBuffer(new byte[10]))).get(5, TimeUnit.SECONDS);
    for (long offset : new long[] {0, 5, 10, 1 << 20, Long.MAX_VALUE - (1 << 20)}) {
      ReadResp r = client.call(new ReadReq(h, offset, (1 << 20) - 1000)).get(5, TimeUnit.SECONDS);
      try {
        assertEquals(Math.max(0, 10 - offset), r.payload().readableBytes());
        assertTrue(r.payload().capacity() <= 64, "the answer's buffer is the size of the data, not of the request: "
            + r.payload().capacity());
      } finally {
        r.release();
      }
    }
    FsException e = failure(client.call(new ReadReq(h, 0, 1 << 30)));
    assertEquals(Errno.EINVAL, e.errno(), e.getMessage());
  }

  @Test
  void eagerWrite_whoseDataNeverComes_failsWithinTheTimeout() throws Exception {
    Handle h = client.call(new PrecreateReq(1)).get(5, TimeUnit.SECONDS).handles().get(0);
    List<CompletableFuture<?>> waiting = new ArrayList<>();
    long t0 = System.nanoTime();
    for (int i = 0; i < 50; i++) {
      waiting.add(client.call(new EagerWriteReq(100 + i, h, 0, 1000)));
    }
    for (CompletableFuture<?> f : waiting) {
      FsException e = failure(f);
      assertEquals(Errno.EIO, e.errno(), e.getMessage());
      assertTrue(e.getMessage().contains("did not come within 500 ms"), e.getMessage());
    }
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    assertTrue(ms < 5000, "failed after " + ms + " ms with a 500 ms timeout");
    // the same tags are free again, and the connection still serves
    FsException again = failure(client.call(new EagerWriteReq(100, h, 0, 1000)));
    assertTrue(again.getMessage().contains("did not come within 500 ms"), again.getMessage());
  }

  /**
   * Flow requests whose distribution reaches the ends of the number ranges (once, from the fuzz
   * campaign, a count of this server's bytes that never ended and left the request unanswered):
   * each answered, at once, and the connection still serves.
   */
  @Test
  void flow_atTheEndsOfTheNumberRanges_isAnswered() throws Exception {
    Handle h = client.call(new PrecreateReq(1)).get(5, TimeUnit.SECONDS).handles().get(0);
    RequestSpec b = RequestSpec.of(Request.BYTE);
    DistSpec dist = DistSpec.of("simple_stripe", 65536);
    // more datafiles than a layout can have (a distribution's tables grow with the count): refused
    assertEquals(Errno.EINVAL, failure(client.call(new FlowReq(5, h, true, b, 0, 10, dist, 1, Integer.MAX_VALUE, 0, null)))
        .errno());
    // strips as large as the offsets, a request far out in the file (once an endless count on the
    // pool): answered, with the bytes this server holds
    for (long strip : new long[] {1L << 62, Long.MAX_VALUE}) {
      for (int nr = 0; nr < 4; nr++) {
        FlowAck ack = client.call(new FlowReq(10 + 4 * (strip == Long.MAX_VALUE ? 1 : 0) + nr, h, true, b, 1L << 62, 1000, DistSpec.of("simple_stripe", strip), nr, 4, 0,
            null)).get(5, TimeUnit.SECONDS);
        assertEquals(nr == (strip == Long.MAX_VALUE ? 0 : 1) ? 1000 : 0, ack.bytes(), "strip " + strip + ", server " + nr);
      }
    }
    assertEquals(0, client.call(new FlowReq(20, h, false, b, 0, 10, dist, 0, 1, 0, null)).get(5, TimeUnit.SECONDS).bytes());
  }

  @Test
  void flow_pastTheLimits_isRefused() throws Exception {
    Handle h = client.call(new PrecreateReq(1)).get(5, TimeUnit.SECONDS).handles().get(0);
    RequestSpec b = RequestSpec.of(Request.BYTE);
    DistSpec dist = DistSpec.of("simple_stripe", 65536);
    assertEquals(Errno.EINVAL, failure(client.call(new FlowReq(1, h, true, b, 0, 1L << 40, dist, 0, 1, 0, null))).errno());
    assertEquals(Errno.EINVAL, failure(client.call(new FlowReq(2, h, true, b, 0, 10, dist, 0, 1, 0, "no-such"))).errno());
    assertEquals(Errno.EINVAL, failure(client.call(new FlowReq(3, h, true, b, 0, 10, DistSpec.of("simple_stripe", 0), 0, 1, 0,
        null))).errno());
    // a small request whose parts would be copied into gigabytes: refused at once
    List<RequestSpec.Node> nodes = new ArrayList<>();
    nodes.add(new RequestSpec.Node(Request.Combiner.NAMED, Elementary.BYTE, 0, 0, 0, null, null, null, null, null, null, null));
    for (int i = 1; i < 4000; i++) {
      int prev = i % 16 == 1 ? 0 : i - 1;
      nodes.add(new RequestSpec.Node(Request.Combiner.STRUCT, null, 0, 0, 0, new long[] {1, 1}, new long[] {0, 1L << (i % 16 + 2)},
          new long[] {prev, prev}, null, null, null, null));
    }
    long t0 = System.nanoTime();
    FsException e = failure(client.call(new FlowReq(4, h, true, new RequestSpec(nodes), 0, 10, dist, 0, 1, 0, null)));
    assertEquals(Errno.EINVAL, e.errno(), e.getMessage());
    assertTrue(e.getMessage().contains("too complex"), e.getMessage());
    assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(2), "refused quickly");
    // flows in service per connection are bounded: the first are acknowledged, the rest refused
    List<CompletableFuture<FlowAck>> acks = new ArrayList<>();
    RpcClient.Conduit c = client.conduit().get(5, TimeUnit.SECONDS);
    for (int i = 0; i < IoServer.MAX_FLOWS_PER_CONNECTION + 20; i++) {
      acks.add(c.call(new FlowReq(1000 + i, h, true, b, 0, 4096, dist, 0, 1, 0, null)));
    }
    int acked = 0;
    int refused = 0;
    for (CompletableFuture<FlowAck> f : acks) {
      try {
        f.get(5, TimeUnit.SECONDS);
        acked++;
      } catch (ExecutionException x) {
        assertEquals(Errno.EAGAIN, assertInstanceOf(FsException.class, x.getCause()).errno());
        refused++;
      }
    }
    assertEquals(IoServer.MAX_FLOWS_PER_CONNECTION, acked);
    assertEquals(20, refused);
    // their data never comes: the stall timeout frees them, and the connection takes flows again
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    for (;;) {
      try {
        c.call(new FlowReq(5000, h, true, b, 0, 4096, dist, 0, 1, 0, null)).get(5, TimeUnit.SECONDS);
        break;
      } catch (ExecutionException x) {
        assertTrue(System.nanoTime() < deadline, "the stalled flows were never freed");
        Thread.sleep(100);
      }
    }
  }

  /**
   * Files of shared memory a connection has this server make: at most one per direction, of sizes
   * the server would map, and none left once the connection is gone, attached or not.
   */
  @Test
  void sharedMemory_madeHere_isBoundedPerConnection_andGoesWithIt() throws Exception {
    RpcClient.Conduit c = client.conduit().get(5, TimeUnit.SECONDS);
    assertEquals(Errno.EINVAL, failure(c.call(new ShmMakeReq(4, 1000))).errno(), "not a multiple of the page");
    assertEquals(Errno.EINVAL, failure(c.call(new ShmMakeReq(1_000_000, 4096))).errno(), "too many slots");
    List<Path> made = new ArrayList<>();
    for (int i = 0; i < ShmHost.MOST_MADE; i++) {
      ShmMadeResp r = c.call(new ShmMakeReq(4, 65536)).get(5, TimeUnit.SECONDS);
      made.add(Path.of(r.path()));
      assertTrue(Files.isRegularFile(made.get(i)), r.path());
    }
    FsException e = failure(c.call(new ShmMakeReq(4, 65536)));
    assertEquals(Errno.EBUSY, e.errno(), e.getMessage());
    // a file that is not the one the server made, by token: refused, and the connection goes on
    assertEquals(Errno.ENOTSUP, failure(c.call(new ShmAttachReq(made.get(0).toString(), new byte[16], 4, 65536, true))).errno());
    client.close();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (made.stream().anyMatch(Files::exists) && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertTrue(made.stream().noneMatch(Files::exists), "the files went with the connection: " + made);
  }

  private static FsException failure(CompletableFuture<?> f) {
    ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(10, TimeUnit.SECONDS));
    return assertInstanceOf(FsException.class, e.getCause());
  }
}
