package org.flowfs.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.rpc.RpcClient;
import org.flowfs.common.wire.CommonOp.OkResp;
import org.flowfs.common.wire.CommonOp.PingReq;
import org.flowfs.common.wire.CommonOp.StatsReq;
import org.flowfs.common.wire.IoOp.DataRemoveReq;
import org.flowfs.common.wire.IoOp.IoStatfsReq;
import org.flowfs.common.wire.IoOp.IoStatfsResp;
import org.flowfs.common.wire.IoOp.ListReq;
import org.flowfs.common.wire.IoOp.PrecreateReq;
import org.flowfs.common.wire.IoOp.ReadReq;
import org.flowfs.common.wire.IoOp.ReadResp;
import org.flowfs.common.wire.IoOp.SizesReq;
import org.flowfs.common.wire.IoOp.SyncReq;
import org.flowfs.common.wire.IoOp.TruncateReq;
import org.flowfs.common.wire.IoOp.WriteReq;
import org.flowfs.common.wire.IoOp.WriteResp;
import org.flowfs.common.wire.HasPayload;
import org.flowfs.common.wire.LeakCheck;
import org.flowfs.common.wire.MessageRegistry;
import org.flowfs.common.wire.Req;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** An I/O server on loopback, driven by a real {@link RpcClient}, as the metadata server and clients drive it. */
@ExtendWith(LeakCheck.class)
class IoServerTest {
  private static final int ID = 1;
  private static NetRuntime net;

  @TempDir
  Path dir;
  private FlowFsConfig config;
  private IoServer server;
  private RpcClient client;

  @BeforeAll
  static void startLoops() {
    net = NetRuntime.create("ioserver-test", 2);
  }

  @AfterAll
  static void stopLoops() {
    net.close();
  }

  @BeforeEach
  void start() throws IOException {
    config = FlowFsConfig.of(Map.of(
        "fs.secret", "ioserver-test-secret-0123",
        "meta.address", "127.0.0.1:1",
        "io.0.address", "127.0.0.1:1",
        "io.1.address", "127.0.0.1:0",
        "io.1.dir", dir.toString(),
        "io.threads", "2",
        "io.open-files", "16",
        "rpc.max-frame", "1MiB",
        "rpc.timeout", "10s"));
    startServer();
  }

  private void startServer() throws IOException {
    server = IoServer.open(config, ID, net);
    InetSocketAddress a = server.start();
    client = new RpcClient("ioserver 1", net, InetSocketAddress.createUnresolved("127.0.0.1", a.getPort()), config.rpc(),
        MessageRegistry.DEFAULT);
  }

  @AfterEach
  void stop() {
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.close();
    }
  }

  @Test
  void precreate_handsOutNewHandlesOfThisServer() throws Exception {
    List<Handle> a = call(new PrecreateReq(10)).handles();
    List<Handle> b = call(new PrecreateReq(3)).handles();
    HashSet<Handle> all = new HashSet<>(a);
    all.addAll(b);
    assertEquals(13, all.size());
    for (Handle h : all) {
      assertEquals(ID, h.ioServer());
    }
    // precreating costs no datafile
    assertEquals(0, call(new IoStatfsReq()).datafiles());
  }

  @Test
  void writeThenRead_bytesRoundTrip() throws Exception {
    Handle h = precreate();
    byte[] data = new byte[200_000];
    new Random(1).nextBytes(data);
    ByteBuf payload = ByteBufAllocator.DEFAULT.directBuffer(data.length).writeBytes(data);
    assertEquals(new WriteResp(data.length, 100 + data.length), call(new WriteReq(h, 100, payload)));
    assertEquals(0, payload.refCnt(), "the payload was consumed");
    assertArrayEquals(data, read(h, 100, data.length));
    assertArrayEquals(new byte[100], read(h, 0, 100), "a hole before the first write");
    assertEquals(data.length - 10, read(h, 110, data.length).length, "short at the end");
    assertArrayEquals(new byte[0], read(precreate(), 0, 10), "a precreated datafile reads empty");
  }

  @Test
  void sizes_inOrderAndZeroForNeverWritten() throws Exception {
    Handle a = precreate();
    Handle b = precreate();
    Handle c = precreate();
    write(a, 0, new byte[10]);
    write(c, 1000, new byte[1]);
    assertArrayEquals(new long[] {10, 0, 1001, 10}, call(new SizesReq(List.of(a, b, c, a))).sizes());
    assertArrayEquals(new long[0], call(new SizesReq(List.of())).sizes());
  }

  @Test
  void truncate_growsAndShrinks() throws Exception {
    Handle h = precreate();
    write(h, 0, new byte[] {1, 2, 3, 4, 5});
    assertEquals(OkResp.INSTANCE, call(new TruncateReq(h, 2)));
    assertArrayEquals(new byte[] {1, 2}, read(h, 0, 10));
    call(new TruncateReq(h, 4));
    assertArrayEquals(new byte[] {1, 2, 0, 0}, read(h, 0, 10));
    Handle fresh = precreate();
    call(new TruncateReq(fresh, 7));
    assertArrayEquals(new long[] {4, 7}, call(new SizesReq(List.of(h, fresh))).sizes());
  }

  @Test
  void remove_datafilesAndMissingOnes() throws Exception {
    Handle a = precreate();
    Handle b = precreate();
    Handle never = precreate();
    write(a, 0, new byte[10]);
    write(b, 0, new byte[10]);
    assertEquals(2, call(new IoStatfsReq()).datafiles());
    assertEquals(OkResp.INSTANCE, call(new DataRemoveReq(List.of(a, never))));
    assertArrayEquals(new long[] {0, 10}, call(new SizesReq(List.of(a, b))).sizes());
    assertEquals(List.of(b), call(new ListReq(0, 100)).handles());
    assertEquals(1, call(new IoStatfsReq()).datafiles());
    call(new DataRemoveReq(List.of(a)));
  }

  @Test
  void statfsSyncListPingAndStats() throws Exception {
    Handle a = precreate();
    Handle b = precreate();
    write(b, 0, new byte[1]);
    write(a, 0, new byte[1]);
    IoStatfsResp s = call(new IoStatfsReq());
    assertTrue(s.total() > 0 && s.free() <= s.total() && s.available() <= s.free(), s::toString);
    assertTrue(s.device() != 0, s::toString);
    assertEquals(2, s.datafiles());
    assertEquals(OkResp.INSTANCE, call(new SyncReq(a, false)));
    assertEquals(OkResp.INSTANCE, call(new SyncReq(precreate(), true)));
    assertEquals(List.of(a, b), call(new ListReq(0, 10)).handles());
    assertEquals(List.of(b), call(new ListReq(a.id(), 10)).handles());
    assertEquals(List.of(a), call(new ListReq(0, 1)).handles());
    assertEquals(ID, call(new PingReq(42)).serverId());
    assertEquals(42, call(new PingReq(42)).sentNanos());
    assertTrue(call(new StatsReq()).counters().getOrDefault("op.WriteReq", 0L) >= 2);
  }

  @Test
  void handleNeverIssued_isEstale() throws Exception {
    precreate();
    Handle notYet = Handle.of(Handle.serverOfIo(ID), 1000);
    Handle otherServer = Handle.of(Handle.serverOfIo(0), 1);
    Handle meta = Handle.of(Handle.META_SERVER, 1);
    Handle localZero = new Handle((long) Handle.serverOfIo(ID) << Handle.LOCAL_BITS);
    for (Handle h : new Handle[] {notYet, otherServer, meta, localZero}) {
      assertEquals(Errno.ESTALE, errno(new ReadReq(h, 0, 1)), h.toString());
      ByteBuf payload = ByteBufAllocator.DEFAULT.directBuffer(4).writeInt(7);
      assertEquals(Errno.ESTALE, errno(new WriteReq(h, 0, payload)), h.toString());
      assertEquals(0, payload.refCnt(), "a refused write's payload is released");
      assertEquals(Errno.ESTALE, errno(new TruncateReq(h, 0)));
      assertEquals(Errno.ESTALE, errno(new SizesReq(List.of(h))));
      assertEquals(Errno.ESTALE, errno(new DataRemoveReq(List.of(h))));
      assertEquals(Errno.ESTALE, errno(new SyncReq(h, true)));
    }
    assertEquals(List.of(), call(new ListReq(0, 10)).handles(), "nothing was created");
  }

  @Test
  void read_largerThanAFrame_isEinval() throws Exception {
    Handle h = precreate();
    assertEquals(Errno.EINVAL, errno(new ReadReq(h, 0, 1 << 20)));
    assertEquals(0, read(h, 0, (1 << 20) - 1024).length, "a read that fits a frame is fine");
  }

  @Test
  void restart_keepsDatafilesAndNeverReissuesHandles() throws Exception {
    List<Handle> before = call(new PrecreateReq(5)).handles();
    write(before.get(0), 0, new byte[] {9, 8, 7});
    stop();
    startServer();
    assertArrayEquals(new byte[] {9, 8, 7}, read(before.get(0), 0, 3));
    assertArrayEquals(new byte[0], read(before.get(4), 0, 3), "handles issued before the restart are still valid");
    for (Handle h : call(new PrecreateReq(5)).handles()) {
      assertTrue(!before.contains(h) && h.local() > before.get(4).local(), h + " handed out again");
    }
  }

  @Test
  void open_storageDirectoryInUse_isRefusedNamingIt() {
    IOException e = assertThrows(IOException.class, () -> IoServer.open(config, ID, net));
    assertTrue(e.getMessage().contains(dir.toString()), e.getMessage());
  }

  // ---- helpers --------------------------------------------------------------------------------

  private Handle precreate() throws Exception {
    return call(new PrecreateReq(1)).handles().get(0);
  }

  private void write(Handle h, long offset, byte[] data) throws Exception {
    call(new WriteReq(h, offset, ByteBufAllocator.DEFAULT.directBuffer(data.length).writeBytes(data)));
  }

  private byte[] read(Handle h, long offset, int length) throws Exception {
    ReadResp r = call(new ReadReq(h, offset, length));
    try {
      return ByteBufUtil.getBytes(r.payload());
    } finally {
      r.release();
    }
  }

  private <R extends org.flowfs.common.wire.Message> R call(Req<R> req) throws Exception {
    return client.call(req).get(10, TimeUnit.SECONDS);
  }

  /** The errno a request fails with (an unexpected answer is released before the test fails). */
  private Errno errno(Req<?> req) throws Exception {
    CompletableFuture<?> f = client.call(req);
    Object answer;
    try {
      answer = f.get(10, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      return assertInstanceOf(FsException.class, e.getCause()).errno();
    }
    if (answer instanceof HasPayload p) {
      p.release();
    }
    return fail(req + " succeeded: " + answer);
  }
}
