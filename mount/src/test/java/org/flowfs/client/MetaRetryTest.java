package org.flowfs.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.flowfs.common.Attr;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FileType;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.rpc.Access;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.rpc.OpTable;
import org.flowfs.common.rpc.RpcServer;
import org.flowfs.common.wire.MessageRegistry;
import org.flowfs.common.wire.MetaOp.CreateBatchReq;
import org.flowfs.common.wire.MetaOp.CreateReq;
import org.flowfs.common.wire.MetaOp.DirLeaseReq;
import org.flowfs.common.wire.MetaOp.DirLeaseResp;
import org.flowfs.common.wire.MetaOp.HeadFlushReq;
import org.flowfs.common.wire.MetaOp.Reserved;
import org.flowfs.common.wire.MetaOp.EntryResp;
import org.flowfs.common.wire.MetaOp.GetattrReq;
import org.flowfs.common.wire.MetaOp.LookupReq;
import org.flowfs.common.wire.MetaOp.GetxattrReq;
import org.flowfs.common.wire.MetaOp.RemoveReq;
import org.flowfs.common.wire.MetaOp.RemovexattrReq;
import org.flowfs.common.wire.MetaOp.SetxattrReq;
import org.flowfs.common.wire.MetaOp.XattrResp;
import org.flowfs.common.wire.MetaOp.RenameReq;
import org.flowfs.common.wire.MetaOp.RenameResp;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * How {@link FileSystemClient} rides out a metadata server that goes away: against a stand-in
 * server whose handlers drop the connection instead of answering, it re-sends idempotent requests,
 * creates (with their verifier) and any request that never left, within {@code rpc.timeout}.
 */
class MetaRetryTest {
  private static final String SECRET = "fs.secret = retry-test-secret-0123456789abcdef\n";
  private static final Attr DIR = new Attr(Handle.of(0, 7), FileType.DIRECTORY, 0755, 0, 0, 2, 4096, 0, 0, 0, 0, null);

  private final NetRuntime net = NetRuntime.create("retry-test", 1);
  private RpcServer server;
  private FileSystemClient client;
  private final AtomicInteger getattrs = new AtomicInteger();
  private final AtomicInteger creates = new AtomicInteger();
  private final List<CreateReq> createsSeen = new CopyOnWriteArrayList<>();
  private final List<RenameReq> renamesSeen = new CopyOnWriteArrayList<>();
  private final AtomicInteger removes = new AtomicInteger();
  private final AtomicInteger xattrChanges = new AtomicInteger();
  private volatile boolean setWhenDropped = true;
  /** The stand-in's one extended attribute, as its set left it ({@code "other"} until then). */
  private final java.util.concurrent.atomic.AtomicReference<byte[]> xattr =
      new java.util.concurrent.atomic.AtomicReference<>("other".getBytes(StandardCharsets.UTF_8));

  @AfterEach
  void close() {
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.close();
    }
    net.close();
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private static FlowFsConfig config(int metaPort, String timeout) {
    return FlowFsConfig.parse("test", SECRET + "meta.address = 127.0.0.1:" + metaPort + "\n"
        + "io.0.address = 127.0.0.1:1\nrpc.timeout = " + timeout + "\nrpc.connect-timeout = 1s\n");
  }

  /**
   * A metadata server on {@code port} whose getattr drops the connection the first {@code dropGetattr}
   * times, and whose create always drops it (after counting); lookups answer ENOENT.
   */
  private void serve(int port, int dropGetattr) throws IOException {
    serve(port, dropGetattr, Integer.MAX_VALUE);
  }

  /** {@link #serve(int, int)}, with a create that drops the connection the first {@code dropCreates} times only. */
  private void serve(int port, int dropGetattr, int dropCreates) throws IOException {
    OpTable ops = new OpTable();
    ops.async(GetattrReq.class, Access.READ_ONLY, (q, ctx) -> {
      if (getattrs.incrementAndGet() <= dropGetattr) {
        ctx.channel().close();
        return new CompletableFuture<>();
      }
      return CompletableFuture.completedFuture(new EntryResp(DIR));
    });
    ops.async(CreateReq.class, Access.MODIFY, (q, ctx) -> {
      createsSeen.add(q);
      if (creates.incrementAndGet() <= dropCreates) {
        ctx.channel().close();
        return new CompletableFuture<>();
      }
      return CompletableFuture.completedFuture(new EntryResp(
          new Attr(Handle.of(0, 8), FileType.DIRECTORY, 0755, 0, 0, 2, 4096, 9, 9, 9, 0, null), 0));
    });
    ops.async(RenameReq.class, Access.MODIFY, (q, ctx) -> {
      renamesSeen.add(q);
      if (renamesSeen.size() <= dropCreates) {
        ctx.channel().close();
        return new CompletableFuture<>();
      }
      return CompletableFuture.completedFuture(new RenameResp(Handle.of(0, 9), null));
    });
    ops.async(RemoveReq.class, Access.MODIFY, (q, ctx) -> {
      if (removes.incrementAndGet() <= dropCreates) {
        ctx.channel().close(); // removed, but the answer never leaves: sent again, it finds no name
        return new CompletableFuture<>();
      }
      return CompletableFuture.failedFuture(new FsException(Errno.ENOENT, q.name()));
    });
    ops.async(SetxattrReq.class, Access.MODIFY, (q, ctx) -> {
      if (xattrChanges.incrementAndGet() <= dropCreates) {
        if (setWhenDropped) {
          xattr.set(q.value()); // set, but the answer never leaves
        }
        ctx.channel().close();
        return new CompletableFuture<>();
      }
      return CompletableFuture.failedFuture(new FsException(Errno.EEXIST, q.name()));
    });
    ops.async(GetxattrReq.class, Access.READ_ONLY, (q, ctx) -> CompletableFuture.completedFuture(new XattrResp(xattr.get())));
    ops.async(RemovexattrReq.class, Access.MODIFY, (q, ctx) -> {
      if (xattrChanges.incrementAndGet() <= dropCreates) {
        ctx.channel().close();
        return new CompletableFuture<>();
      }
      return CompletableFuture.failedFuture(new FsException(Errno.ENODATA, q.name()));
    });
    ops.async(LookupReq.class, Access.READ_ONLY, (q, ctx) -> CompletableFuture.failedFuture(new FsException(Errno.ENOENT, q.name())));
    server = new RpcServer("stand-in metaserver", net, new InetSocketAddress("127.0.0.1", port), ops,
        config(port, "5s").rpc(), MessageRegistry.DEFAULT, new Counters());
    server.start();
  }

  /**
   * A batch the server made but whose answer was lost with the connection: the file, closed
   * under the lease, is found under its reserved handle when it is made again, and what its close
   * recorded is applied again, with calls that do not wait for the file's own recovery.
   */
  @Test
  void aLeasedBatch_madeButUnanswered_isFound_andItsCloseRecordedAgain() throws Exception {
    int port = freePort();
    Attr root = new Attr(Handle.ROOT, FileType.DIRECTORY, 0755, 0, 0, 3, 4096, 1, 1, 1, 0, null);
    Attr dir = new Attr(Handle.of(0, 7), FileType.DIRECTORY, 0755, 0, 0, 2, 4096, 5, 5, 5, 0, null);
    Handle reserved = Handle.of(0, 100);
    Layout layout = new Layout(new org.flowfs.common.dist.Basic().spec(), List.of(Handle.of(1, 1)), 65536);
    Attr file = new Attr(reserved, FileType.REGULAR, 0644, 0, 0, 1, 0, 6, 6, 6, 0, layout);
    List<String> calls = new CopyOnWriteArrayList<>();
    CompletableFuture<HeadFlushReq> headFlushed = new CompletableFuture<>();
    OpTable ops = new OpTable();
    ops.async(GetattrReq.class, Access.READ_ONLY, (q, ctx) -> CompletableFuture.completedFuture(
        new EntryResp(q.handle().equals(Handle.ROOT) ? root : q.handle().equals(reserved) ? file : dir)));
    ops.async(CreateReq.class, Access.MODIFY, (q, ctx) -> CompletableFuture.completedFuture(new EntryResp(dir, 1)));
    List<Reserved> files = new java.util.ArrayList<>(); // as many as the client asks for: no top-up batch
    for (int i = 0; i < 32; i++) {
      files.add(new Reserved(Handle.of(0, reserved.local() + i), layout));
    }
    ops.async(DirLeaseReq.class, Access.MODIFY, (q, ctx) -> CompletableFuture.completedFuture(
        new DirLeaseResp(42, dir.ctimeNs(), 3_000_000_000L, files.subList(0, q.files()))));
    ops.async(CreateBatchReq.class, Access.MODIFY, (q, ctx) -> {
      q.payload().release();
      calls.add("batch " + q.creates().stream().map(c -> c.name()).toList());
      ctx.channel().close(); // made, but the answer never leaves
      return new CompletableFuture<>();
    });
    ops.async(LookupReq.class, Access.READ_ONLY, (q, ctx) -> {
      calls.add("lookup " + q.name());
      return q.name().equals("f") && calls.contains("batch [f]")
          ? CompletableFuture.completedFuture(new EntryResp(file))
          : CompletableFuture.failedFuture(new FsException(Errno.ENOENT, q.name()));
    });
    ops.async(HeadFlushReq.class, Access.MODIFY, (q, ctx) -> {
      calls.add("head-flush " + q.payload().readableBytes());
      q.payload().release();
      headFlushed.complete(q);
      return CompletableFuture.completedFuture(new EntryResp(file));
    });
    server = new RpcServer("stand-in metaserver", net, new InetSocketAddress("127.0.0.1", port), ops,
        config(port, "5s").rpc(), MessageRegistry.DEFAULT, new Counters());
    server.start();
    client = new FileSystemClient(config(port, "5s"), net);
    client.mkdir("/d", 0755, Caller.ROOT);
    OpenFile f = client.create("/d/f", 0644, 0, Caller.ROOT);
    assertEquals(reserved, f.state().handle, "made under the lease");
    client.write(f, 0, Unpooled.wrappedBuffer("hello".getBytes(StandardCharsets.UTF_8)));
    client.flush(f);
    client.release(f);
    HeadFlushReq again = headFlushed.get(4, TimeUnit.SECONDS); // within one rpc.timeout: nothing waited for itself
    assertEquals(reserved, again.record().handle());
    assertEquals(5, again.record().size());
    assertEquals(List.of("batch [f]", "lookup f", "head-flush 5"), calls.stream().filter(c -> !c.equals("lookup d")).toList());
    assertEquals(1L, client.counters().snapshot().get("lease.recreated"));
  }

  @Test
  void getattr_connectionDropsBeforeAnswer_isSentAgain() throws Exception {
    int port = freePort();
    serve(port, 2);
    client = new FileSystemClient(config(port, "5s"), net);
    assertEquals(DIR, client.getattr(DIR.handle()));
    assertEquals(3, getattrs.get());
    assertEquals(2L, client.counters().snapshot().get("meta.retries"));
  }

  /**
   * A create whose connection dropped after it was sent is sent again with the same verifier (the
   * server recognises it if it made it the first time), and its answer is the create's.
   */
  @Test
  void create_connectionDropsAfterSend_isSentAgainWithItsVerifier() throws Exception {
    int port = freePort();
    serve(port, 0, 1);
    client = new FileSystemClient(config(port, "5s"), net);
    assertEquals(Handle.of(0, 8), client.mkdir("/d", 0755, Caller.ROOT).handle());
    assertEquals(2, createsSeen.size());
    assertTrue(createsSeen.get(0).verifier() != 0, "sent with a verifier");
    assertEquals(createsSeen.get(0), createsSeen.get(1), "the same request, verifier and all");
    assertEquals(1L, client.counters().snapshot().get("meta.resent-after-lost"));
    client.mkdir("/e", 0755, Caller.ROOT);
    assertTrue(createsSeen.get(2).verifier() != createsSeen.get(0).verifier(), "each create has a verifier of its own");
  }

  /** A rename whose connection dropped after it was sent is sent again with the same verifier. */
  @Test
  void rename_connectionDropsAfterSend_isSentAgainWithItsVerifier() throws Exception {
    int port = freePort();
    serve(port, 0, 1);
    client = new FileSystemClient(config(port, "5s"), net);
    client.rename("/a", "/b", 0);
    assertEquals(2, renamesSeen.size());
    assertTrue(renamesSeen.get(0).verifier() != 0, "sent with a verifier");
    assertEquals(renamesSeen.get(0), renamesSeen.get(1));
  }

  /**
   * A remove whose connection dropped after it was sent is sent again, and ENOENT then is the
   * lost try's doing: the remove succeeds.
   */
  @Test
  void remove_connectionDropsAfterSend_sentAgain_enoentMeansItWasDone() throws Exception {
    int port = freePort();
    serve(port, 0, 1);
    client = new FileSystemClient(config(port, "5s"), net);
    client.unlink("/f");
    assertEquals(2, removes.get());
    assertEquals(1L, client.counters().snapshot().get("meta.done-before"));
  }

  /**
   * An exclusive xattr set whose answer was lost is sent again: its EEXIST then, with the value
   * it set in place, is the lost try's doing; with another value there, it is EEXIST.
   */
  @Test
  void setxattrCreate_connectionDropsAfterSend_eexistWithItsValueMeansItWasDone() throws Exception {
    int port = freePort();
    serve(port, 0, 1);
    client = new FileSystemClient(config(port, "5s"), net);
    client.setxattr("/", "user.k", "mine".getBytes(StandardCharsets.UTF_8), SetxattrReq.CREATE);
    assertEquals(2, xattrChanges.get());
    assertEquals(1L, client.counters().snapshot().get("meta.done-before"));
    xattr.set("theirs".getBytes(StandardCharsets.UTF_8));
    setWhenDropped = false; // dropped once more, unset: the value there is another's
    xattrChanges.set(0);
    FsException e = assertThrows(FsException.class,
        () -> client.setxattr("/", "user.k", "mine!".getBytes(StandardCharsets.UTF_8), SetxattrReq.CREATE));
    assertEquals(Errno.EEXIST, e.errno());
  }

  /** An xattr removal whose answer was lost is sent again: ENODATA then means it was removed. */
  @Test
  void removexattr_connectionDropsAfterSend_enodataMeansItWasDone() throws Exception {
    int port = freePort();
    serve(port, 0, 1);
    client = new FileSystemClient(config(port, "5s"), net);
    client.removexattr("/", "user.k");
    assertEquals(2, xattrChanges.get());
    assertEquals(1L, client.counters().snapshot().get("meta.done-before"));
  }

  /**
   * A remove whose connection keeps dropping after it was sent fails with EIO within {@code
   * rpc.timeout}, sent again with pauses between (not in a busy loop).
   */
  @Test
  void remove_connectionKeepsDropping_failsWithEioWithinTheTimeout() throws Exception {
    failsWithEioWithin1500ms(() -> client.unlink("/f"));
    assertTrue(removes.get() >= 2 && removes.get() <= 12, "sent again, with pauses: " + removes.get() + " times");
  }

  /** A remove answered ENOENT the first time fails with ENOENT. */
  @Test
  void remove_answeredEnoent_failsWithEnoent() throws Exception {
    int port = freePort();
    serve(port, 0, 0);
    client = new FileSystemClient(config(port, "5s"), net);
    assertEquals(Errno.ENOENT, assertThrows(FsException.class, () -> client.unlink("/f")).errno());
    assertEquals(1, removes.get());
  }

  /** A create whose connection keeps dropping fails with EIO within {@code rpc.timeout}. */
  @Test
  void create_connectionKeepsDropping_failsWithEioWithinTheTimeout() throws Exception {
    failsWithEioWithin1500ms(() -> client.mkdir("/d", 0755, Caller.ROOT));
    assertTrue(creates.get() >= 2, "sent again: " + creates.get());
  }

  /**
   * Against a stand-in whose changes always drop the connection, a client with an {@code
   * rpc.timeout} of 1500 ms fails {@code call} with EIO, in less than twice that.
   */
  private void failsWithEioWithin1500ms(org.junit.jupiter.api.function.Executable call) throws Exception {
    int port = freePort();
    serve(port, 0);
    client = new FileSystemClient(config(port, "1500ms"), net);
    long t0 = System.nanoTime();
    FsException e = assertThrows(FsException.class, call);
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertEquals(Errno.EIO, e.errno());
    assertTrue(ms < 3000, "failed after " + ms + " ms; rpc.timeout is 1500 ms");
  }

  @Test
  void getattr_serverDown_failsWithEioWithinTheTimeout() throws Exception {
    client = new FileSystemClient(config(freePort(), "1500ms"), net);
    long t0 = System.nanoTime();
    FsException e = assertThrows(FsException.class, () -> client.getattr(DIR.handle()));
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertEquals(Errno.EIO, e.errno());
    assertTrue(ms >= 1000 && ms < 3000, "failed after " + ms + " ms; rpc.timeout is 1500 ms");
    assertTrue(client.counters().snapshot().getOrDefault("meta.retries", 0L) >= 3);
  }

  @Test
  void getattr_afterGivingUpOnDownServer_failsFastUntilItIsBack() throws Exception {
    int port = freePort();
    client = new FileSystemClient(config(port, "1s"), net);
    assertThrows(FsException.class, () -> client.getattr(DIR.handle()));
    long t0 = System.nanoTime();
    FsException e = assertThrows(FsException.class, () -> client.getattr(DIR.handle()));
    assertEquals(Errno.EIO, e.errno());
    assertTrue(System.nanoTime() - t0 < 500_000_000L, "a server known to be down is tried once");
    serve(port, 0);
    assertEquals(DIR, client.getattr(DIR.handle()));
  }

  @Test
  void lookup_serverStartsDuringRetries_answers() throws Exception {
    int port = freePort();
    client = new FileSystemClient(config(port, "10s"), net);
    CompletableFuture<Void> later = CompletableFuture.runAsync(() -> {
      try {
        Thread.sleep(700);
        serve(port, 0);
      } catch (Exception e) {
        throw new RuntimeException(e);
      }
    });
    // the lookup is refused until the server is up, then it gets its (ENOENT) answer
    FsException e = assertThrows(FsException.class, () -> client.getattr("/missing"));
    assertEquals(Errno.ENOENT, e.errno());
    later.join();
    assertTrue(client.counters().snapshot().get("meta.retries") >= 1);
  }

  @Test
  void lookup_serverAnswersAnErrno_isNotSentAgain() throws Exception {
    int port = freePort();
    serve(port, 0);
    client = new FileSystemClient(config(port, "5s"), net);
    FsException e = assertThrows(FsException.class, () -> client.getattr("/missing"));
    assertEquals(Errno.ENOENT, e.errno());
    assertEquals(null, client.counters().snapshot().get("meta.retries"));
  }
}
