package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.flowfs.cli.EmbeddedCluster;
import org.flowfs.client.Caller;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.common.Attr;
import org.flowfs.common.Counters;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Errno;
import org.flowfs.common.FileType;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.config.FsConfig;
import org.flowfs.common.config.RpcConfig;
import org.flowfs.common.config.Secret;
import org.flowfs.common.request.Request;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.rpc.RawPeer;
import org.flowfs.common.rpc.RpcClient;
import org.flowfs.common.wire.CommonOp.AuthChallenge;
import org.flowfs.common.wire.CommonOp.PingReq;
import org.flowfs.common.wire.CommonOp.StatsReq;
import org.flowfs.common.wire.Envelope;
import org.flowfs.common.wire.IoOp.AllocateReq;
import org.flowfs.common.wire.IoOp.DataRemoveReq;
import org.flowfs.common.wire.IoOp.EagerWriteReq;
import org.flowfs.common.wire.IoOp.FlowReq;
import org.flowfs.common.wire.IoOp.IoStatfsReq;
import org.flowfs.common.wire.IoOp.ListReq;
import org.flowfs.common.wire.IoOp.PrecreateReq;
import org.flowfs.common.wire.IoOp.ReadReq;
import org.flowfs.common.wire.IoOp.SizesReq;
import org.flowfs.common.wire.IoOp.SyncReq;
import org.flowfs.common.wire.IoOp.TruncateReq;
import org.flowfs.common.wire.IoOp.WriteReq;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.MessageRegistry;
import org.flowfs.common.wire.MetaOp.CreateReq;
import org.flowfs.common.wire.MetaOp.GetattrReq;
import org.flowfs.common.wire.MetaOp.GetxattrReq;
import org.flowfs.common.wire.MetaOp.LinkReq;
import org.flowfs.common.wire.MetaOp.ListxattrReq;
import org.flowfs.common.wire.MetaOp.LookupReq;
import org.flowfs.common.wire.MetaOp.MetaStatfsReq;
import org.flowfs.common.wire.MetaOp.ReaddirReq;
import org.flowfs.common.wire.MetaOp.ReadlinkReq;
import org.flowfs.common.wire.MetaOp.RemoveReq;
import org.flowfs.common.wire.MetaOp.RenameReq;
import org.flowfs.common.wire.MetaOp.SetattrReq;
import org.flowfs.common.wire.MetaOp.SetxattrReq;
import org.flowfs.common.wire.MetaOp.SymlinkReq;
import org.flowfs.common.wire.Req;
import org.flowfs.common.wire.LeakCheck;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Only members of the file system talk to its servers: real servers (in this JVM) refuse every
 * request of a client with the wrong secret, and of a peer that sends requests without proving
 * any, while the members they serve carry on; the servers listen only where the config says.
 */
@ExtendWith(LeakCheck.class)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class AuthTest {
  private static final byte[] CONTENT = "members only: the data a stranger must not see\n".getBytes(StandardCharsets.UTF_8);
  @TempDir static Path dir;
  static EmbeddedCluster cluster;
  static NetRuntime net;
  static FileSystemClient member;
  static Attr file;

  @BeforeAll
  static void up() throws Exception {
    Path data = dir.resolve("data");
    Files.createDirectories(data);
    Files.writeString(data.resolve("flowfs.conf"), EmbeddedCluster.configText(data, 2, 0) + "rpc.auth-timeout = 500ms\n");
    cluster = EmbeddedCluster.start(FlowFsConfig.load(data.resolve("flowfs.conf")));
    net = NetRuntime.create("auth-test", 2);
    member = new FileSystemClient(cluster.config(), net);
    member.mkdir("/dir", 0755, Caller.ROOT);
    OpenFile f = member.create("/dir/secret.txt", 0644, 0, Caller.ROOT);
    member.write(f, 0, Unpooled.wrappedBuffer(CONTENT));
    member.release(f);
    file = member.getattr("/dir/secret.txt");
    member.syncMetadata(); // the member's lease on /dir ends now, not during a test that counts requests
  }

  @AfterAll
  static void down() {
    if (member != null) {
      member.close();
    }
    if (net != null) {
      net.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void clientWithWrongSecret_canNeitherReadWriteNorList() throws Exception {
    FlowFsConfig stranger = withSecret(cluster.config(), "not-the-secret-of-this-file-system");
    long servedBefore = served();
    try (FileSystemClient c = new FileSystemClient(stranger, net)) {
      assertErrno(Errno.EACCES, () -> c.getattr("/"));
      assertErrno(Errno.EACCES, () -> c.getattr("/dir/secret.txt"));
      assertErrno(Errno.EACCES, () -> c.opendir("/dir"));
      assertErrno(Errno.EACCES, () -> c.open("/dir/secret.txt", 0));
      assertErrno(Errno.EACCES, () -> c.create("/evil", 0644, 0, Caller.ROOT));
      assertErrno(Errno.EACCES, () -> c.mkdir("/evil-dir", 0755, Caller.ROOT));
      assertErrno(Errno.EACCES, () -> {
        c.unlink("/dir/secret.txt");
        return null;
      });
      assertErrno(Errno.EACCES, c::statfs);
      assertErrno(Errno.EACCES, c::ping);
    }
    // every request type, straight to each server, from an RPC client with the wrong secret
    RpcConfig wrong = stranger.rpc();
    int refused = 0;
    for (Target t : targets()) {
      try (RpcClient c = new RpcClient(t.name, net, t.address, wrong, MessageRegistry.DEFAULT)) {
        for (Supplier<Req<?>> q : t.requests) {
          Req<?> req = q.get();
          FsException e = failure(c.call(req));
          assertEquals(Errno.EACCES, e.errno(), t.name + " " + req.getClass().getSimpleName() + ": " + e.getMessage());
          assertTrue(e.getMessage().contains(t.name), e.getMessage());
          refused++;
        }
      }
    }
    assertTrue(refused >= 30, refused + " requests tried");
    assertEquals(servedBefore, served(), "no request of the stranger's reached a handler");
    assertMemberStillServed();
  }

  @Test
  void peerWithoutSecret_sendingRequests_isClosedUnserved() throws Exception {
    long servedBefore = served();
    long refusedBefore = counter("connections.auth-refused");
    int tried = 0;
    for (Target t : targets()) {
      for (Supplier<Req<?>> q : t.requests) {
        Req<?> req = q.get();
        try (RawPeer p = RawPeer.connect(t.address, 5000)) {
          // no handshake: the request right away, as an old or foreign client would send it
          p.send(Envelope.request(1, req));
          assertTrue(p.closedByPeer(), t.name + " kept a connection open after " + req.getClass().getSimpleName());
          tried++;
        }
      }
    }
    assertEquals(servedBefore, served(), "no request of a peer without the secret reached a handler");
    assertEquals(refusedBefore + tried, counter("connections.auth-refused"));
    assertMemberStillServed();
  }

  @Test
  void peerThatNeverProves_isClosedAfterTheAuthTimeout() throws Exception {
    for (Target t : targets()) {
      try (RawPeer p = RawPeer.connect(t.address, 10_000)) {
        long t0 = System.nanoTime();
        assertEquals(t.name, assertInstanceOf(AuthChallenge.class, p.read().message()).server());
        assertTrue(p.closedByPeer(), t.name + " kept a silent connection open");
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(ms >= 400 && ms < 5000, t.name + " closed after " + ms + " ms with a 500 ms auth timeout");
      }
    }
    assertMemberStillServed();
  }

  @Test
  void servers_listenOnlyOnTheConfiguredAddress() throws Exception {
    for (Target t : targets()) {
      assertEquals("127.0.0.1", t.address.getHostString());
      // the whole of 127/8 is this machine: a server bound to the wildcard address would answer here
      try (Socket s = new Socket()) {
        IOException e = assertThrows(IOException.class,
            () -> s.connect(new InetSocketAddress("127.0.0.2", t.address.getPort()), 2000), t.name);
        assertInstanceOf(ConnectException.class, e, t.name + ": " + e);
      }
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", t.address.getPort()), 2000); // where it is configured
      }
    }
  }

  // ---- helpers --------------------------------------------------------------------------------

  /** A server and every kind of request it serves, aimed at real objects where that matters. */
  private record Target(String name, InetSocketAddress address, List<Supplier<Req<?>>> requests) {}

  private static List<Target> targets() {
    FlowFsConfig c = cluster.config();
    List<Target> out = new ArrayList<>();
    Handle dirH = member.getattr("/dir").handle();
    Handle fileH = file.handle();
    out.add(new Target("metaserver", resolved(c.meta().address()), List.of(
        () -> new PingReq(1),
        StatsReq::new,
        () -> new LookupReq(dirH, "secret.txt"),
        () -> new GetattrReq(fileH),
        () -> new ReaddirReq(dirH, null, 100, true),
        () -> new CreateReq(Handle.ROOT, "evil", FileType.REGULAR, 0644, 0, 0, 0, null, 0),
        () -> new CreateReq(Handle.ROOT, "evil-dir", FileType.DIRECTORY, 0755, 0, 0, 0, null, 0),
        () -> new SymlinkReq(Handle.ROOT, "evil-link", "/etc/passwd", 0, 0),
        () -> new ReadlinkReq(fileH),
        () -> new LinkReq(fileH, Handle.ROOT, "stolen"),
        () -> new RemoveReq(dirH, "secret.txt", false),
        () -> new RenameReq(dirH, "secret.txt", Handle.ROOT, "moved", 0),
        () -> new SetattrReq(fileH, SetattrReq.MODE, 0777, 0, 0, 0, 0, 0),
        () -> new SetxattrReq(fileH, "user.x", new byte[] {1}, 0),
        () -> new GetxattrReq(fileH, "user.x"),
        () -> new ListxattrReq(fileH),
        () -> new org.flowfs.common.wire.MetaOp.FlockReq(fileH, 1, 1, org.flowfs.common.wire.MetaOp.FlockReq.EXCLUSIVE, false),
        () -> new org.flowfs.common.wire.MetaOp.LockRenewReq(1),
        () -> new org.flowfs.common.wire.MetaOp.RecordLockReq(fileH, 1, 1, org.flowfs.common.RecordLocks.WRITE, 0,
            org.flowfs.common.RecordLocks.EOF, 1, false, false),
        MetaStatfsReq::new)));
    for (int i = 0; i < c.ioServers().size(); i++) {
      int server = i;
      Handle df = file.layout().datafiles().stream().filter(h -> h.ioServer() == server).findFirst()
          .orElse(Handle.of(Handle.serverOfIo(server), 1));
      out.add(new Target("ioserver " + i, resolved(c.ioServer(i).address()), List.of(
          () -> new PingReq(1),
          StatsReq::new,
          () -> new ReadReq(df, 0, 4096),
          () -> new WriteReq(df, 0, Unpooled.wrappedBuffer("overwritten".getBytes(StandardCharsets.UTF_8))),
          () -> new EagerWriteReq(7, df, 0, 16),
          () -> new FlowReq(9, df, false, org.flowfs.common.wire.RequestSpec.of(Request.BYTE), 0, 4096,
              DistSpec.of("simple_stripe", 65536), server, c.ioServers().size(), 1 << 20, null),
          () -> new FlowReq(10, df, true, org.flowfs.common.wire.RequestSpec.of(Request.BYTE), 0, 4096,
              DistSpec.of("simple_stripe", 65536), server, c.ioServers().size(), 0, null),
          () -> new TruncateReq(df, 0),
          () -> new AllocateReq(df, 0, 4096, false),
          () -> new SizesReq(List.of(df)),
          () -> new DataRemoveReq(List.of(df)),
          () -> new SyncReq(df, false),
          () -> new PrecreateReq(16),
          () -> new ListReq(0, 100),
          IoStatfsReq::new)));
    }
    return out;
  }

  private static InetSocketAddress resolved(InetSocketAddress a) {
    return new InetSocketAddress(a.getHostString(), a.getPort());
  }

  /** Requests the servers' handlers have taken, over all servers. */
  private static long served() {
    return opCount(cluster.meta().counters()) + opCount(cluster.io(0).counters()) + opCount(cluster.io(1).counters());
  }

  private static long opCount(Counters c) {
    return c.snapshot().entrySet().stream().filter(e -> e.getKey().startsWith("op.")).mapToLong(Map.Entry::getValue).sum();
  }

  private static long counter(String name) {
    return cluster.meta().counters().get(name) + cluster.io(0).counters().get(name) + cluster.io(1).counters().get(name);
  }

  private static void assertMemberStillServed() {
    Attr a = member.getattr("/dir/secret.txt");
    assertEquals(file.handle(), a.handle());
    assertEquals(file.mode(), a.mode());
    assertEquals(CONTENT.length, a.size());
    OpenFile f = member.open("/dir/secret.txt", 0);
    ByteBuf dst = Unpooled.buffer(CONTENT.length);
    try {
      assertEquals(CONTENT.length, member.read(f, 0, CONTENT.length, dst));
      byte[] back = new byte[CONTENT.length];
      dst.getBytes(0, back);
      assertArrayEquals(CONTENT, back, "the data is intact");
    } finally {
      member.release(f);
      dst.release();
    }
    long dirId = member.opendir("/");
    try {
      List<String> names = new ArrayList<>();
      for (int i = 0; ; i++) {
        var d = member.readdir(dirId, i);
        if (d == null) {
          break;
        }
        names.add(d.name());
      }
      assertTrue(names.contains("dir"), names.toString());
      for (String evil : List.of("evil", "evil-dir", "evil-link", "stolen", "moved")) {
        assertFalse(names.contains(evil), evil + " was created: " + names);
      }
    } finally {
      member.releasedir(dirId);
    }
    assertNotEquals(0, member.ping().version().length());
  }

  private static FlowFsConfig withSecret(FlowFsConfig c, String secret) {
    RpcConfig r = c.rpc();
    return new FlowFsConfig(new FsConfig(c.fs().name(), secret), c.meta(), c.ioServers(), c.io(), c.layout(),
        new RpcConfig(r.timeout(), r.connectTimeout(), r.maxFrame(), r.connections(), r.authTimeout(), Secret.of(secret)),
        c.client(), c.flow(), c.node(), c.effective());
  }

  private static FsException failure(CompletableFuture<? extends Message> f) {
    ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(20, TimeUnit.SECONDS));
    return assertInstanceOf(FsException.class, e.getCause());
  }

  private static void assertErrno(Errno expected, java.util.concurrent.Callable<?> op) {
    FsException e = assertThrows(FsException.class, op::call);
    assertEquals(expected, e.errno(), e.getMessage());
  }
}
