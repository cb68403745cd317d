package org.flowfs.meta;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.nio.file.Path;
import org.flowfs.common.Attr;
import org.flowfs.common.Errno;
import org.flowfs.common.FileType;
import org.flowfs.common.Handle;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.rpc.RpcClient;
import org.flowfs.common.wire.LeakCheck;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.MetaOp.CreateReq;
import org.flowfs.common.wire.MetaOp.EntryResp;
import org.flowfs.common.wire.MetaOp.HeadFlushReq;
import org.flowfs.common.wire.MetaOp.HeadReadReq;
import org.flowfs.common.wire.MetaOp.HeadReadResp;
import org.flowfs.common.wire.MetaOp.OpenReq;
import org.flowfs.common.wire.MetaOp.OpenResp;
import org.flowfs.common.wire.MetaOp.HeadWriteReq;
import org.flowfs.common.wire.MetaOp.RemoveReq;
import org.flowfs.common.wire.MetaOp.SetattrReq;
import org.flowfs.common.wire.Req;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A metadata server on loopback ({@link LoopbackMetaServer}), driven by a real {@link RpcClient}:
 * the operations that need no datafile bytes, heads first.
 */
@ExtendWith(LeakCheck.class)
class MetaServerTest {
  private static final int HEAD = 4096;
  private static NetRuntime net;

  @TempDir
  Path dir;
  private LoopbackMetaServer meta;
  private MetaServer server;
  private RpcClient client;

  @BeforeAll
  static void startLoops() {
    net = NetRuntime.create("metaserver-test", 2);
  }

  @AfterAll
  static void stopLoops() {
    net.close();
  }

  @BeforeEach
  void start() throws IOException {
    meta = new LoopbackMetaServer(net, dir, HEAD, DirLeases.TERM);
    server = meta.server();
    client = meta.client();
  }

  @AfterEach
  void stop() {
    if (meta != null) {
      meta.close();
    }
  }

  @Test
  void create_regularFile_hasTheConfiguredHead() throws Exception {
    Attr f = create("f");
    assertEquals(HEAD, f.layout().headBytes());
    assertEquals(HEAD, server.store().getattr(f.handle()).layout().headBytes());
  }

  @Test
  void head_writeThenRead_overTheWire() throws Exception {
    Handle f = create("f").handle();
    byte[] data = new byte[300];
    new java.util.Random(5).nextBytes(data);
    call(new HeadWriteReq(f, 0, Unpooled.wrappedBuffer(data)));
    call(new HeadWriteReq(f, 400, Unpooled.wrappedBuffer(new byte[] {7, 8})));
    assertArrayEquals(data, read(f, 0, 300));
    byte[] tail = read(f, 290, HEAD);
    assertEquals(112, tail.length);
    assertArrayEquals(new byte[] {0, 0, 7, 8}, java.util.Arrays.copyOfRange(tail, 108, 112));
    assertArrayEquals(new byte[0], read(f, 402, 10), "nothing past the written end");
    assertEquals(0, server.store().getattr(f).size(), "the size is the writer's to record");
  }

  @Test
  void head_refusedWrites_answerTheirErrnoAndReleaseThePayload() throws Exception {
    Handle f = create("f").handle();
    assertEquals(Errno.EINVAL, errno(new HeadWriteReq(f, HEAD - 1, Unpooled.wrappedBuffer(new byte[2]))));
    assertEquals(Errno.EISDIR, errno(new HeadWriteReq(Handle.ROOT, 0, Unpooled.wrappedBuffer(new byte[1]))));
    assertEquals(Errno.ENOENT, errno(new HeadWriteReq(Handle.of(0, 999_999), 0, Unpooled.wrappedBuffer(new byte[1]))));
    assertEquals(Errno.EISDIR, errno(new HeadReadReq(Handle.ROOT, 0, 1)));
    assertArrayEquals(new byte[0], read(f, 0, HEAD), "refused writes wrote nothing");
    // the server's copies of the refused payloads are checked by LeakCheck after the class
  }

  @Test
  void head_truncateAndRemove_overTheWire() throws Exception {
    Handle f = create("f").handle();
    call(new HeadWriteReq(f, 0, Unpooled.wrappedBuffer(new byte[] {1, 2, 3, 4, 5})));
    call(new SetattrReq(f, SetattrReq.SIZE, 0, 0, 0, 2, 0, 0));
    assertArrayEquals(new byte[] {1, 2}, read(f, 0, HEAD));
    call(new RemoveReq(Handle.ROOT, "f", false));
    assertEquals(Errno.ENOENT, errno(new HeadReadReq(f, 0, 1)));
  }

  @Test
  void head_flush_writesTheBytesAndRecordsTheirSize_inOneCall() throws Exception {
    Handle f = create("f").handle();
    SetattrReq record = new SetattrReq(f, SetattrReq.SIZE_GROW | SetattrReq.MTIME, 0, 0, 0, 3, 0, 42L);
    Attr a = call(new HeadFlushReq(record, 0, Unpooled.wrappedBuffer(new byte[] {1, 2, 3}))).attr();
    assertEquals(3, a.size());
    assertEquals(42L, a.mtimeNs());
    assertEquals(a, server.store().getattr(f));
    assertArrayEquals(new byte[] {1, 2, 3}, read(f, 0, HEAD));
    SetattrReq past = new SetattrReq(f, SetattrReq.SIZE_GROW, 0, 0, 0, HEAD + 1, 0, 0);
    assertEquals(Errno.EINVAL, errno(new HeadFlushReq(past, HEAD, Unpooled.wrappedBuffer(new byte[1]))));
    assertEquals(3, server.store().getattr(f).size(), "a refused flush records no size either");
  }

  @Test
  void open_answersTheAttributesAndTheHeadsFirstBytes_inOneCall() throws Exception {
    Handle f = create("f").handle();
    SetattrReq record = new SetattrReq(f, SetattrReq.SIZE_GROW | SetattrReq.MTIME, 0, 0, 0, 5, 0, 42L);
    call(new HeadFlushReq(record, 0, Unpooled.wrappedBuffer(new byte[] {1, 2, 3, 4, 5})));
    OpenResp r = call(new OpenReq(f, 4));
    try {
      assertEquals(server.store().getattr(f), r.attr());
      assertArrayEquals(new byte[] {1, 2, 3, 4}, ByteBufUtil.getBytes(r.payload()));
    } finally {
      r.release();
    }
    r = call(new OpenReq(Handle.ROOT, 0)); // attributes only, answered on the event loop
    try {
      assertEquals(server.store().getattr(Handle.ROOT), r.attr());
      assertEquals(0, r.payload().readableBytes());
    } finally {
      r.release();
    }
    assertEquals(Errno.ENOENT, errno(new OpenReq(Handle.of(0, 999_999), 10)));
    assertEquals(Errno.ENOENT, errno(new OpenReq(Handle.of(0, 999_999), 0)));
  }

  /**
   * A create sent again with its verifier is answered with the file the first one made, and the
   * datafiles taken for it go back to the pools (the pools' handles before it are all there after).
   */
  @Test
  void create_sentAgainWithItsVerifier_answersTheFileMade_andKeepsNoDatafiles() throws Exception {
    CreateReq q = new CreateReq(Handle.ROOT, "v", FileType.REGULAR, 0644, 0, 0, 0, null, 0).verified(0x1234_5678_9abcL);
    Attr first = call(q).attr();
    java.util.List<Handle> pooled = call(new org.flowfs.common.wire.MetaOp.FsckReservedReq()).datafiles();
    EntryResp again = call(q);
    assertEquals(first, again.attr());
    assertEquals(0, again.parentWasNs());
    java.util.List<Handle> after = call(new org.flowfs.common.wire.MetaOp.FsckReservedReq()).datafiles();
    assertTrue(after.containsAll(pooled), "the datafiles taken for the second are back in the pools");
    assertEquals(Errno.EEXIST, errno(q.verified(0x1234_5678_9abdL)));
    assertEquals(Errno.EEXIST, errno(new CreateReq(Handle.ROOT, "v", FileType.REGULAR, 0644, 0, 0, 0, null, 0)));
  }

  private Attr create(String name) throws Exception {
    return call(new CreateReq(Handle.ROOT, name, FileType.REGULAR, 0644, 0, 0, 0, null, 0)).attr();
  }

  private byte[] read(Handle h, long offset, int length) throws Exception {
    HeadReadResp r = call(new HeadReadReq(h, offset, length));
    try {
      return ByteBufUtil.getBytes(r.payload());
    } finally {
      r.release();
    }
  }

  private <R extends Message> R call(Req<R> req) throws Exception {
    return LoopbackMetaServer.call(client, req);
  }

  private Errno errno(Req<?> req) throws Exception {
    return LoopbackMetaServer.errno(client, req);
  }
}
