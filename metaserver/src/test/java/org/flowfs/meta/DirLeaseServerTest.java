package org.flowfs.meta;

import static org.flowfs.meta.LoopbackMetaServer.call;
import static org.flowfs.meta.LoopbackMetaServer.errno;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.flowfs.common.Attr;
import org.flowfs.common.Errno;
import org.flowfs.common.FileType;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.rpc.RpcClient;
import org.flowfs.common.wire.LeakCheck;
import org.flowfs.common.wire.MetaOp;
import org.flowfs.common.wire.MetaOp.BatchCreate;
import org.flowfs.common.wire.MetaOp.BatchRemove;
import org.flowfs.common.wire.MetaOp.BatchResult;
import org.flowfs.common.wire.MetaOp.CreateBatchReq;
import org.flowfs.common.wire.MetaOp.CreateBatchResp;
import org.flowfs.common.wire.MetaOp.CreateReq;
import org.flowfs.common.wire.MetaOp.DirLeaseReq;
import org.flowfs.common.wire.MetaOp.DirLeaseResp;
import org.flowfs.common.wire.MetaOp.EntryResp;
import org.flowfs.common.wire.MetaOp.FsckDatafilesResp;
import org.flowfs.common.wire.MetaOp.FsckReservedReq;
import org.flowfs.common.wire.MetaOp.GetattrReq;
import org.flowfs.common.wire.MetaOp.HeadReadReq;
import org.flowfs.common.wire.MetaOp.HeadReadResp;
import org.flowfs.common.wire.MetaOp.LookupReq;
import org.flowfs.common.wire.MetaOp.OpenReq;
import org.flowfs.common.wire.MetaOp.OpenResp;
import org.flowfs.common.wire.MetaOp.ReaddirReq;
import org.flowfs.common.wire.MetaOp.ReclaimReq;
import org.flowfs.common.wire.MetaOp.ReaddirResp;
import org.flowfs.common.wire.MetaOp.RemoveReq;
import org.flowfs.common.wire.MetaOp.RemoveResult;
import org.flowfs.common.wire.MetaOp.RenameReq;
import org.flowfs.common.wire.MetaOp.Reserved;
import org.flowfs.common.wire.MetaOp.SetattrReq;
import org.flowfs.common.wire.MetaOp.SetxattrReq;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Directory leases over the wire: a holder creates files in batches while other clients'
 * requests on the directory wait for the end of its lease ({@link DirLeaseOps}, {@link
 * LeaseGate}).
 */
@ExtendWith(LeakCheck.class)
class DirLeaseServerTest {
  private static final int HEAD = 4096;
  /** How long a test watches a parked request to see that it stays parked. */
  private static final long PARKED_MS = 300;
  private static NetRuntime net;

  @TempDir
  Path dir;
  private LoopbackMetaServer meta;
  private RpcClient holder;
  private RpcClient other;
  private Handle d;

  @BeforeAll
  static void startLoops() {
    net = NetRuntime.create("dirlease-test", 2);
  }

  @AfterAll
  static void stopLoops() {
    net.close();
  }

  @BeforeEach
  void start() throws Exception {
    start(DirLeases.TERM);
  }

  private void start(Duration term) throws Exception {
    start(term, term);
  }

  private void start(Duration term, Duration grace) throws Exception {
    meta = new LoopbackMetaServer(net, dir.resolve("meta-" + term.toMillis()), HEAD, term, grace);
    holder = meta.client();
    other = meta.client();
    d = call(holder, new CreateReq(Handle.ROOT, "d", FileType.DIRECTORY, 0755, 0, 0, 0, null, 0)).attr().handle();
  }

  @AfterEach
  void stop() {
    if (meta != null) {
      meta.close();
    }
  }

  @Test
  void lease_grantsReservedFiles_andRefusesASecondOne() throws Exception {
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 4));
    assertNotEquals(0, r.lease());
    assertEquals(DirLeases.TERM.toNanos(), r.termNs());
    assertEquals(meta.server().store().getattr(d).ctimeNs(), r.ctimeNs());
    assertEquals(4, r.reserved().size());
    Set<Handle> handles = new HashSet<>();
    Set<Handle> datafiles = new HashSet<>();
    for (Reserved f : r.reserved()) {
      assertTrue(handles.add(f.handle()));
      assertEquals(HEAD, f.layout().headBytes(), "the layout a CreateReq would give");
      assertEquals(1, f.layout().datafiles().size());
      assertTrue(datafiles.addAll(f.layout().datafiles()));
      assertEquals(Errno.ENOENT, errno(holder, new GetattrReq(f.handle())), "no object yet");
    }
    DirLeaseResp second = call(other, new DirLeaseReq(d, 1));
    assertEquals(0, second.lease());
    assertEquals(List.of(), second.reserved());
    assertEquals(1, meta.server().counters().get("lease.granted"));
    assertEquals(1, meta.server().counters().get("lease.refused"));
    // after the end, unused datafiles are back in the pools and a new lease can be had
    CreateBatchResp end = batch(r.lease(), List.of(), true, 0);
    assertEquals(List.of(), end.results());
    assertTrue(reservedByServer().containsAll(datafiles), "given back to the pools");
    assertNotEquals(0, call(other, new DirLeaseReq(d, 1)).lease());
  }

  @Test
  void lease_listsTheNames_whenTheCtimeTheHolderKnowsThemAtMovedOn() throws Exception {
    call(other, new CreateReq(d, "x", FileType.REGULAR, 0644, 0, 0, 0, null, 0));
    long ctime = meta.server().store().getattr(d).ctimeNs();
    DirLeaseResp current = call(holder, new DirLeaseReq(d, 1, false, ctime));
    assertNotEquals(0, current.lease());
    assertNull(current.names(), "known at the directory's ctime: no names");
    batch(current.lease(), List.of(), true, 0);
    DirLeaseResp moved = call(holder, new DirLeaseReq(d, 1, false, ctime - 1));
    assertNotEquals(0, moved.lease());
    assertEquals(List.of("x"), moved.names(), "known at another ctime: the names, at the ctime reported");
    assertEquals(ctime, moved.ctimeNs());
    batch(moved.lease(), List.of(), true, 0);
  }

  @Test
  void lease_withTheNames_listsTheDirectoryAtTheCtimeItReports_andRefusesOneTooBig() throws Exception {
    for (String n : List.of("b", "a", "c")) {
      call(other, new CreateReq(d, n, FileType.REGULAR, 0644, 0, 0, 0, null, 0));
    }
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 2, true));
    assertNotEquals(0, r.lease());
    assertEquals(Set.of("a", "b", "c"), new HashSet<>(r.names()));
    assertEquals(meta.server().store().getattr(d).ctimeNs(), r.ctimeNs());
    assertEquals(1, meta.server().counters().get("lease.granted-listed"));
    assertNull(call(other, new DirLeaseReq(d, 1)).names(), "refused, and not asked");
    // a directory of more names than a grant lists: refused, its reservation given back
    CreateBatchResp filled = null;
    long lease = r.lease();
    List<Reserved> free = new ArrayList<>(r.reserved());
    int made = 3;
    while (made <= MetaOp.MAX_LEASE_NAMES) {
      List<BatchCreate> creates = new ArrayList<>();
      for (Reserved f : free) {
        creates.add(create("n" + made++, f));
      }
      filled = batch(lease, creates, false, MetaOp.MAX_LEASE_FILES);
      free = filled.reserved();
    }
    batch(lease, List.of(), true, 0);
    assertTrue(filled.results().stream().allMatch(b -> b.errno() == 0));
    DirLeaseResp big = call(holder, new DirLeaseReq(d, 2, true));
    assertEquals(0, big.lease(), MetaOp.MAX_LEASE_NAMES + 1 + " names");
    assertNull(big.names());
    assertNotEquals(0, call(other, new DirLeaseReq(d, 1)).lease(), "the refused one was ended");
  }

  @Test
  void lease_withTheNames_ofMoreThanAListingOnTheEventLoopTakes_listsEveryName() throws Exception {
    Set<String> names = new HashSet<>();
    for (int i = 0; i < MetaServer.READDIR_ON_LOOP * 2 + 1; i++) {
      names.add("f" + i);
      call(other, new CreateReq(d, "f" + i, FileType.REGULAR, 0644, 0, 0, 0, null, 0));
    }
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 1, true));
    assertNotEquals(0, r.lease());
    assertEquals(names, new HashSet<>(r.names()));
    assertEquals(names.size(), r.names().size());
    assertEquals(meta.server().store().getattr(d).ctimeNs(), r.ctimeNs());
  }

  @Test
  void lease_errorsAndRefusals() throws Exception {
    Attr f = call(holder, new CreateReq(Handle.ROOT, "f", FileType.REGULAR, 0644, 0, 0, 0, null, 0)).attr();
    assertEquals(Errno.ENOTDIR, errno(holder, new DirLeaseReq(f.handle(), 1)));
    assertEquals(Errno.ENOENT, errno(holder, new DirLeaseReq(Handle.of(0, 999_999), 1)));
    call(holder, new SetattrReq(d, SetattrReq.MODE, 02775, 0, 0, 0, 0, 0));
    assertEquals(0, call(holder, new DirLeaseReq(d, 1)).lease(), "set-group-id: the client cannot tell the group");
  }

  @Test
  void lease_ofADirectoryWithADefaultAcl_isRefused_whatItsFilesTakeFromItIsTheServers() throws Exception {
    org.flowfs.common.PosixAcl acl = new org.flowfs.common.PosixAcl(List.of(
        new org.flowfs.common.PosixAcl.Entry(1, 7, -1), new org.flowfs.common.PosixAcl.Entry(4, 5, -1),
        new org.flowfs.common.PosixAcl.Entry(0x20, 0, -1)));
    call(other, new SetxattrReq(d, org.flowfs.common.PosixAcl.DEFAULT, acl.bytes(), 0));
    assertEquals(0, call(holder, new DirLeaseReq(d, 1)).lease());
    assertEquals(0640, call(holder, new CreateReq(d, "f", FileType.REGULAR, 0666, 0, 0, 0, null, 0, 1, 022)).attr().mode(),
        "the default ACL's bits, not the umask");
    call(other, new org.flowfs.common.wire.MetaOp.RemovexattrReq(d, org.flowfs.common.PosixAcl.DEFAULT));
    assertNotEquals(0, call(holder, new DirLeaseReq(d, 1)).lease());
  }

  @Test
  void batch_createsFilesWithTheirHeads_visibleToOthersAfterTheEnd() throws Exception {
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 3));
    Reserved a = r.reserved().get(0);
    Reserved b = r.reserved().get(1);
    SetattrReq closedA = new SetattrReq(a.handle(), SetattrReq.SIZE_GROW | SetattrReq.MTIME, 0, 0, 0, 5, 0, 42L);
    CreateBatchResp first = batch(r.lease(), List.of(
        new BatchCreate("a", false, 0, a.handle(), 0640, 7, 8, closedA, 0, 5)), false, 2, new byte[] {1, 2, 3, 4, 5});
    assertFalse(first.recalled());
    assertEquals(2, first.reserved().size(), "more files on top");
    Attr fa = first.results().get(0).attr();
    assertEquals(a.handle(), fa.handle());
    assertEquals(a.layout(), fa.layout(), "the reserved layout");
    assertEquals(5, fa.size());
    assertEquals(42L, fa.mtimeNs());
    assertEquals(0640, fa.mode());
    assertEquals(7, fa.uid());
    assertEquals(8, fa.gid());
    assertEquals(r.ctimeNs(), first.results().get(0).parentWasNs(), "nothing came between the grant and the create");
    Reserved c = first.reserved().get(0);
    CreateBatchResp last = batch(r.lease(), List.of(
        new BatchCreate("b", false, 0, b.handle(), 0600, 7, 8, null, 0, 0),
        new BatchCreate("c", false, 0, c.handle(), 0600, 7, 8,
            new SetattrReq(c.handle(), SetattrReq.SIZE_GROW, 0, 0, 0, 103, 0, 0), 100, 3)), true, 0, new byte[] {9, 8, 7});
    assertEquals(fa.ctimeNs(), last.results().get(0).parentWasNs());
    assertEquals(List.of(), last.reserved(), "none once ended");
    assertEquals(3, meta.server().counters().get("batch.creates"));
    // another client sees them all, with their bytes
    assertEquals(fa, call(other, new LookupReq(d, "a")).attr());
    assertEquals(b.handle(), call(other, new LookupReq(d, "b")).attr().handle());
    OpenResp o = call(other, new OpenReq(a.handle(), HEAD));
    try {
      assertArrayEquals(new byte[] {1, 2, 3, 4, 5}, ByteBufUtil.getBytes(o.payload()));
    } finally {
      o.release();
    }
    HeadReadResp h = call(other, new HeadReadReq(c.handle(), 0, HEAD));
    try {
      byte[] want = new byte[103];
      want[100] = 9;
      want[101] = 8;
      want[102] = 7;
      assertArrayEquals(want, ByteBufUtil.getBytes(h.payload()));
    } finally {
      h.release();
    }
    assertEquals(103, meta.server().store().getattr(c.handle()).size());
  }

  @Test
  void batch_makesDirectories_whoseDatafilesGoBackToThePools() throws Exception {
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 2));
    Reserved s = r.reserved().get(0);
    CreateBatchResp made = batch(r.lease(), List.of(
        new BatchCreate("sub", true, 0, s.handle(), 0750, 7, 8, null, 0, 0),
        create("f", r.reserved().get(1))), true, 0);
    Attr sub = made.results().get(0).attr();
    assertEquals(s.handle(), sub.handle());
    assertTrue(sub.isDir());
    assertNull(sub.layout());
    assertEquals(0750, sub.mode());
    assertTrue(reservedByServer().containsAll(s.layout().datafiles()), "pooled again: the directory took its handle only");
    assertEquals(3, call(other, new GetattrReq(d)).attr().nlink());
    assertEquals(sub, call(other, new LookupReq(d, "sub")).attr());
    Attr inner = call(other, new CreateReq(sub.handle(), "inner", FileType.REGULAR, 0644, 0, 0, 0, null, 0)).attr();
    assertEquals(inner.handle(), call(holder, new LookupReq(sub.handle(), "inner")).attr().handle());
  }

  @Test
  void batch_grantsALeaseOnADirectoryItMakes_whenAskedTo() throws Exception {
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 4));
    CreateBatchResp made = batch(r.lease(), List.of(
        new BatchCreate("sub", true, 3, r.reserved().get(0).handle(), 0750, 7, 8, null, 0, 0),
        new BatchCreate("plain", true, 0, r.reserved().get(1).handle(), 0750, 7, 8, null, 0, 0),
        new BatchCreate("f", false, 3, r.reserved().get(2).handle(), 0644, 7, 8, null, 0, 0)), false, 0);
    BatchResult sub = made.results().get(0);
    DirLeaseResp l = sub.lease();
    assertTrue(l != null && l.lease() != 0, "granted with the batch");
    assertNotEquals(r.lease(), l.lease());
    assertEquals(3, l.reserved().size());
    assertEquals(sub.attr().ctimeNs(), l.ctimeNs(), "nothing changed it since it was made");
    assertNull(made.results().get(1).lease(), "not asked for");
    assertEquals(Errno.EINVAL.code(), made.results().get(2).errno(), "a lease on a regular file");
    Handle s = sub.attr().handle();
    // the new lease works as one granted by its own request: files made under it, another client waits
    CreateBatchResp inner = batchIn(s, l.lease(), List.of(create("inner", l.reserved().get(0))), false, 0, new byte[0]);
    assertEquals(0, inner.results().get(0).errno());
    assertEquals(0, call(other, new DirLeaseReq(s, 1)).lease(), "held by the holder");
    CompletableFuture<ReaddirResp> listing = other.call(new ReaddirReq(s, null, 100, false));
    Thread.sleep(PARKED_MS);
    assertFalse(listing.isDone(), "parked while the new directory's lease lives");
    batchIn(s, l.lease(), List.of(), true, 0, new byte[0]);
    assertEquals(List.of("inner"), listing.get(5, TimeUnit.SECONDS).entries().stream().map(e -> e.name()).toList());
    assertEquals(1, meta.server().counters().get("lease.granted-in-batch"));
  }

  @Test
  void batch_appliesTheDirectorysOwnChanges_afterItsCreates() throws Exception {
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 1));
    SetattrReq own = new SetattrReq(d, SetattrReq.MTIME | SetattrReq.MODE | SetattrReq.UID, 0700, 9, 0, 0, 0, 1234);
    assertEquals(Errno.EINVAL, errno(holder, batchReq(r.lease(), new SetattrReq(Handle.ROOT, SetattrReq.MODE,
        0700, 0, 0, 0, 0, 0))), "a record of another object");
    assertEquals(Errno.EINVAL, errno(holder, batchReq(r.lease(), new SetattrReq(d, SetattrReq.SIZE, 0, 0, 0,
        5, 0, 0))), "a size");
    CreateBatchResp made = call(holder, new CreateBatchReq(d, r.lease(), List.of(create("f", r.reserved().get(0))), own,
        false, 0, Unpooled.EMPTY_BUFFER));
    assertEquals(0, made.results().get(0).errno());
    Attr dir = meta.server().store().getattr(d);
    assertEquals(List.of(1234L, 0700, 9), List.of(dir.mtimeNs(), dir.mode(), dir.uid()), "after the create, which moved the mtime");
    assertEquals(1, meta.server().counters().get("batch.dir-records"));
    batch(r.lease(), List.of(), true, 0);
    assertEquals(Errno.ESTALE, errno(holder, batchReq(r.lease(), new SetattrReq(d, SetattrReq.MODE, 0711, 0, 0, 0, 0, 0))),
        "a lease not known");
    assertEquals(0700, meta.server().store().getattr(d).mode(), "nothing changed");
  }

  private CreateBatchReq batchReq(long lease, SetattrReq record) {
    return new CreateBatchReq(d, lease, List.of(), record, false, 0, Unpooled.EMPTY_BUFFER);
  }

  @Test
  void batch_ofARecalledLease_grantsNoLeaseOnTheDirectoriesItMakes() throws Exception {
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 2));
    CompletableFuture<EntryResp> waiting = other.call(new LookupReq(d, "sub"));
    for (int i = 0; i < 500 && meta.server().counters().get("lease.parked") == 0; i++) {
      Thread.sleep(10);
    }
    assertTrue(batch(r.lease(), List.of(), false, 0).recalled());
    CreateBatchResp made = batch(r.lease(), List.of(
        new BatchCreate("sub", true, 3, r.reserved().get(0).handle(), 0750, 7, 8, null, 0, 0)), true, 0);
    assertEquals(0, made.results().get(0).errno());
    assertNull(made.results().get(0).lease(), "another client waits in the parent and may look inside next");
    Handle sub = waiting.get(5, TimeUnit.SECONDS).attr().handle();
    assertEquals(0, call(other, new ReaddirReq(sub, null, 100, false)).entries().size(), "answered: no lease there");
  }

  @Test
  void lookupOfAnother_waitsForTheHoldersLastBatch_andSeesItsFiles() throws Exception {
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 2));
    assertFalse(batch(r.lease(), List.of(create("a", r.reserved().get(0))), false, 0).recalled());
    CompletableFuture<EntryResp> lookup = other.call(new LookupReq(d, "b"));
    CompletableFuture<ReaddirResp> listing = other.call(new ReaddirReq(d, null, 100, false));
    CompletableFuture<EntryResp> getattr = other.call(new GetattrReq(d));
    CompletableFuture<EntryResp> elsewhere = other.call(new GetattrReq(Handle.ROOT));
    assertEquals(FileType.DIRECTORY, elsewhere.get(5, TimeUnit.SECONDS).attr().type(), "other directories answer");
    Thread.sleep(PARKED_MS);
    assertFalse(lookup.isDone() || listing.isDone() || getattr.isDone(), "parked while the lease lives");
    CreateBatchResp next = batch(r.lease(), List.of(), false, 1);
    assertTrue(next.recalled(), "the holder learns of the waiting request with its next batch");
    assertEquals(List.of(), next.reserved(), "no more files once recalled");
    Thread.sleep(PARKED_MS);
    assertFalse(lookup.isDone(), "still parked: the lease has not ended");
    batch(r.lease(), List.of(create("b", r.reserved().get(1))), true, 0);
    // well within the term the end renewed: released by the end, not by an expiry
    assertEquals(r.reserved().get(1).handle(), lookup.get(2, TimeUnit.SECONDS).attr().handle());
    assertEquals(List.of("a", "b"), listing.get(5, TimeUnit.SECONDS).entries().stream().map(e -> e.name()).toList());
    assertEquals(meta.server().store().getattr(d), getattr.get(5, TimeUnit.SECONDS).attr());
    assertEquals(1, meta.server().counters().get("lease.recalled"));
    assertEquals(3, meta.server().counters().get("lease.parked"));
  }

  @Test
  void changesOfAnother_wait_rmdirAndRenameOfTheLeasedDirectoryToo() throws Exception {
    Handle sub = call(holder, new CreateReq(d, "sub", FileType.DIRECTORY, 0755, 0, 0, 0, null, 0)).attr().handle();
    DirLeaseResp r = call(holder, new DirLeaseReq(sub, 1));
    CompletableFuture<?> rmdir = other.call(new RemoveReq(d, "sub", true));
    CompletableFuture<?> create = other.call(new CreateReq(sub, "x", FileType.REGULAR, 0644, 0, 0, 0, null, 0));
    CompletableFuture<?> xattr = other.call(new SetxattrReq(sub, "user.k", new byte[] {1}, 0));
    CompletableFuture<HeadReadResp> onPool = other.call(new HeadReadReq(sub, 0, 1)); // a blocking operation
    Thread.sleep(PARKED_MS);
    for (CompletableFuture<?> f : List.of(rmdir, create, xattr, onPool)) {
      assertFalse(f.isDone(), "parked while the lease lives");
    }
    CreateBatchResp held = batchIn(sub, r.lease(), List.of(create("held", r.reserved().get(0))), true, 0, new byte[0]);
    assertEquals(0, held.results().get(0).errno());
    assertEquals(Errno.ENOTEMPTY, errnoOf(rmdir), "after the batch: the directory has a file");
    create.get(5, TimeUnit.SECONDS);
    xattr.get(5, TimeUnit.SECONDS);
    assertEquals(Errno.EISDIR, errnoOf(onPool), "ran on the reader pool after the end");
    // a rename of the leased directory, and one replacing it
    Handle empty = call(holder, new CreateReq(d, "empty", FileType.DIRECTORY, 0755, 0, 0, 0, null, 0)).attr().handle();
    DirLeaseResp r2 = call(holder, new DirLeaseReq(sub, 1));
    DirLeaseResp r3 = call(holder, new DirLeaseReq(empty, 1));
    CompletableFuture<?> rename = other.call(new RenameReq(d, "sub", Handle.ROOT, "moved", 0));
    CompletableFuture<?> replace = other.call(new RenameReq(Handle.ROOT, "d", Handle.ROOT, "d2", 0));
    CompletableFuture<?> over = other.call(new RenameReq(Handle.ROOT, "d2", d, "empty", 0));
    Thread.sleep(PARKED_MS);
    assertFalse(rename.isDone(), "moves a leased directory");
    assertTrue(replace.isDone(), "a rename touching no leased directory goes ahead");
    assertFalse(over.isDone(), "replaces a leased directory");
    batchIn(sub, r2.lease(), List.of(), true, 0, new byte[0]);
    rename.get(5, TimeUnit.SECONDS);
    assertEquals(sub, call(other, new LookupReq(Handle.ROOT, "moved")).attr().handle());
    Thread.sleep(PARKED_MS);
    assertFalse(over.isDone(), "still waits for the other lease");
    batchIn(empty, r3.lease(), List.of(), true, 0, new byte[0]);
    assertEquals(Errno.EINVAL, errnoOf(over), "d into its own subtree, once it may run");
  }

  @Test
  void expiry_releasesWaitingRequests_andRemovesTheUnusedDatafiles() throws Exception {
    stop();
    Duration term = Duration.ofMillis(400);
    start(term);
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 2));
    assertEquals(term.toNanos(), r.termNs());
    long t0 = System.nanoTime();
    EntryResp seen = call(other, new LookupReq(d, "."));
    long waitedMs = (System.nanoTime() - t0) / 1_000_000;
    assertEquals(d, seen.attr().handle());
    assertTrue(waitedMs >= term.toMillis() / 2, "waited for the expiry: " + waitedMs + " ms");
    assertTrue(waitedMs < term.toMillis() + 2000, "released within about the term: " + waitedMs + " ms");
    assertEquals(1, meta.server().counters().get("lease.expired"));
    List<Handle> datafiles = new ArrayList<>();
    r.reserved().forEach(f -> datafiles.addAll(f.layout().datafiles()));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (!meta.removed().containsAll(datafiles) && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertTrue(meta.removed().containsAll(datafiles), "the reaper removed " + meta.removed());
    assertFalse(reservedByServer().stream().anyMatch(datafiles::contains), "not given back to the pools");
    CreateBatchResp late = batch(r.lease(), List.of(create("a", r.reserved().get(0))), true, 0);
    assertEquals(Errno.ESTALE.code(), late.results().get(0).errno());
    assertEquals(Errno.ENOENT, errno(other, new LookupReq(d, "a")));
  }

  @Test
  void batch_unlinksAfterItsCreates_inOrder_andTheirDatafilesGo() throws Exception {
    Attr old = call(holder, new CreateReq(d, "old", FileType.REGULAR, 0644, 0, 0, 0, null, 0)).attr();
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 2));
    Reserved a = r.reserved().get(0);
    ByteBuf none = Unpooled.EMPTY_BUFFER;
    CreateBatchResp b = call(holder, new CreateBatchReq(d, r.lease(), List.of(create("a", a)),
        Stream.of("old", "a", "missing", "a").map(BatchRemove::unlink).toList(), null, true, 0, none));
    assertEquals(a.handle(), b.results().get(0).attr().handle());
    List<RemoveResult> rm = b.removed();
    assertEquals(4, rm.size());
    assertEquals(old.handle(), rm.get(0).handle());
    assertTrue(rm.get(0).gone());
    assertEquals(a.handle(), rm.get(1).handle(), "made and unlinked in one batch");
    assertEquals(List.of(0, 0, Errno.ENOENT.code(), Errno.ENOENT.code()), rm.stream().map(RemoveResult::errno).toList());
    assertNull(rm.get(2).handle());
    assertEquals(rm.get(0).parentNowNs(), rm.get(1).parentWasNs(), "the directory's ctimes follow from unlink to unlink");
    assertTrue(rm.get(1).parentNowNs() > rm.get(1).parentWasNs());
    assertEquals(rm.get(1).parentNowNs(), call(other, new GetattrReq(d)).attr().ctimeNs());
    assertEquals(Errno.ENOENT, errno(other, new LookupReq(d, "old")));
    assertEquals(Errno.ENOENT, errno(other, new LookupReq(d, "a")));
    assertEquals(Errno.ENOENT, errno(other, new GetattrReq(old.handle())), "its last name: gone");
    assertEquals(2, meta.server().counters().get("batch.removes"));
    assertEquals(2, meta.server().counters().get("batch.removes-failed"));
    List<Handle> doomed = new ArrayList<>();
    meta.server().store().doomed(100).forEach(x -> doomed.addAll(x.datafiles()));
    assertTrue(doomed.containsAll(old.layout().datafiles()), "the removed file's datafiles wait for removal: " + doomed);
  }

  @Test
  void batch_removesAnEmptyDirectoryTheHolderLeases_andItsLeaseEndsWithIt() throws Exception {
    Handle y = call(holder, new CreateReq(d, "y", FileType.DIRECTORY, 0755, 0, 0, 0, null, 0)).attr().handle();
    Handle full = call(holder, new CreateReq(d, "full", FileType.DIRECTORY, 0755, 0, 0, 0, null, 0)).attr().handle();
    call(holder, new CreateReq(full, "f", FileType.REGULAR, 0644, 0, 0, 0, null, 0));
    DirLeaseResp onD = call(holder, new DirLeaseReq(d, 1));
    DirLeaseResp onY = call(holder, new DirLeaseReq(y, 2));
    DirLeaseResp onFull = call(holder, new DirLeaseReq(full, 1));
    List<Handle> yReserved = onY.reserved().stream().flatMap(f -> f.layout().datafiles().stream()).toList();
    CreateBatchResp b = call(holder, new CreateBatchReq(d, onD.lease(), List.of(), List.of(
        new BatchRemove("y", onY.lease() + 1), new BatchRemove("full", onFull.lease()), new BatchRemove("y", onY.lease())),
        null, false, 0, Unpooled.EMPTY_BUFFER));
    assertEquals(List.of(Errno.ESTALE.code(), Errno.ENOTEMPTY.code(), 0),
        b.removed().stream().map(RemoveResult::errno).toList(), "another lease; not empty; removed");
    assertEquals(y, b.removed().get(2).handle());
    assertTrue(b.removed().get(2).gone());
    batch(onD.lease(), List.of(), true, 0);
    long parked = meta.server().counters().get("lease.parked");
    assertEquals(Errno.ENOENT, errno(other, new LookupReq(d, "y")));
    assertEquals(Errno.ENOENT, errno(other, new GetattrReq(y)));
    assertEquals(parked, meta.server().counters().get("lease.parked"), "no request waits for a lease on it: ended");
    assertTrue(reservedByServer().containsAll(yReserved), "its lease's reservations pooled again");
    assertEquals(3, call(other, new GetattrReq(d)).attr().nlink(), "d holds full only");
    // the lease on the directory that was not empty goes on
    assertNotNull(batchIn(full, onFull.lease(), List.of(), true, 0, new byte[0]));
  }

  @Test
  void batch_removingALeasedDirectory_waitsForTheBatchesItsHolderSentUnderThatLease() throws Exception {
    Handle y = call(holder, new CreateReq(d, "y", FileType.DIRECTORY, 0755, 0, 0, 0, null, 0)).attr().handle();
    Handle z = call(holder, new CreateReq(d, "z", FileType.DIRECTORY, 0755, 0, 0, 0, null, 0)).attr().handle();
    Handle w = call(holder, new CreateReq(d, "w", FileType.DIRECTORY, 0755, 0, 0, 0, null, 0)).attr().handle();
    call(holder, new CreateReq(y, "last", FileType.REGULAR, 0644, 0, 0, 0, null, 0));
    call(holder, new CreateReq(w, "f", FileType.REGULAR, 0644, 0, 0, 0, null, 0));
    DirLeaseResp onD = call(holder, new DirLeaseReq(d, 1));
    DirLeaseResp onY = call(holder, new DirLeaseReq(y, 1));
    DirLeaseResp onZ = call(holder, new DirLeaseReq(z, 1));
    DirLeaseResp onW = call(holder, new DirLeaseReq(w, 1));
    // the rmdir comes first (another connection was quicker), naming the one batch sent under y's lease
    CompletableFuture<CreateBatchResp> rmdir = holder.call(new CreateBatchReq(d, onD.lease(), List.of(),
        List.of(BatchRemove.afterBatches("y", onY.lease(), 1)), null, false, 0, Unpooled.EMPTY_BUFFER));
    Thread.sleep(300);
    assertFalse(rmdir.isDone(), "held back until y's batch is taken in");
    CreateBatchResp emptied = call(holder, new CreateBatchReq(y, onY.lease(), List.of(), List.of(BatchRemove.unlink("last")),
        null, false, 0, Unpooled.EMPTY_BUFFER));
    assertEquals(0, emptied.removed().get(0).errno());
    CreateBatchResp b = rmdir.get(10, TimeUnit.SECONDS);
    assertEquals(List.of(0), b.removed().stream().map(RemoveResult::errno).toList(), "empty by then: removed");
    assertEquals(y, b.removed().get(0).handle());
    assertEquals(1, meta.server().counters().get("lease.rmdir-waits"));
    // one whose batch was taken in goes at once; one whose batch never comes, after a lease term
    batchIn(z, onZ.lease(), List.of(), false, 0, new byte[0]);
    long t0 = System.nanoTime();
    CreateBatchResp both = call(holder, new CreateBatchReq(d, onD.lease(), List.of(),
        List.of(BatchRemove.afterBatches("z", onZ.lease(), 1), BatchRemove.afterBatches("w", onW.lease(), 1)), null, false, 0,
        Unpooled.EMPTY_BUFFER));
    assertEquals(List.of(0, Errno.ENOTEMPTY.code()), both.removed().stream().map(RemoveResult::errno).toList(),
        "z empty; w's batch never came: not empty, after the wait");
    assertTrue(System.nanoTime() - t0 >= DirLeases.TERM.toNanos() - 100_000_000L, "waited a lease term for w's batch");
    assertEquals(2, meta.server().counters().get("lease.rmdir-waits"));
    assertNotNull(batchIn(w, onW.lease(), List.of(), true, 0, new byte[0]), "w's lease goes on");
  }

  @Test
  void batch_removesEmptyDirectoriesMadeUnderItsLease_unlessLeasedNow() throws Exception {
    call(holder, new CreateReq(d, "file", FileType.REGULAR, 0644, 0, 0, 0, null, 0));
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 4));
    List<String> names = List.of("empty", "full", "leased", "quick");
    List<BatchCreate> dirs = new ArrayList<>();
    for (int i = 0; i < names.size(); i++) {
      dirs.add(new BatchCreate(names.get(i), true, 0, r.reserved().get(i).handle(), 0755, 0, 0, null, 0, 0));
    }
    CreateBatchResp made = call(holder, new CreateBatchReq(d, r.lease(), dirs.subList(0, 3), List.of(), null, false, 0,
        Unpooled.EMPTY_BUFFER));
    made.results().forEach(x -> assertEquals(0, x.errno()));
    Handle full = made.results().get(1).attr().handle();
    Handle leased = made.results().get(2).attr().handle();
    call(holder, new CreateReq(full, "f", FileType.REGULAR, 0644, 0, 0, 0, null, 0));
    DirLeaseResp onLeased = call(holder, new DirLeaseReq(leased, 1));
    CreateBatchResp b = call(holder, new CreateBatchReq(d, r.lease(), dirs.subList(3, 4),
        Stream.of("empty", "full", "leased", "quick", "missing", "file").map(BatchRemove::madeDir).toList(), null, false, 0,
        Unpooled.EMPTY_BUFFER));
    assertEquals(List.of(0, Errno.ENOTEMPTY.code(), Errno.ESTALE.code(), 0, Errno.ENOENT.code(), Errno.ENOTDIR.code()),
        b.removed().stream().map(RemoveResult::errno).toList(),
        "removed; not empty; a lease stands on it (its holder may hold creates); made and removed in one batch; no such name; no directory");
    assertEquals(made.results().get(0).attr().handle(), b.removed().get(0).handle());
    assertTrue(b.removed().get(0).gone());
    batch(r.lease(), List.of(), true, 0);
    assertEquals(Errno.ENOENT, errno(other, new LookupReq(d, "empty")));
    assertEquals(Errno.ENOENT, errno(other, new LookupReq(d, "quick")));
    assertEquals(full, call(other, new LookupReq(d, "full")).attr().handle());
    assertNotNull(batchIn(leased, onLeased.lease(), List.of(), true, 0, new byte[0]), "the lease on it goes on");
    assertEquals(leased, call(other, new LookupReq(d, "leased")).attr().handle());
    assertEquals(4, call(other, new GetattrReq(d)).attr().nlink(), "d holds full and leased");
  }

  @Test
  void batch_ofAnUnknownLease_unlinksNothing() throws Exception {
    call(holder, new CreateReq(d, "keep", FileType.REGULAR, 0644, 0, 0, 0, null, 0));
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 1));
    CreateBatchResp b = call(holder, new CreateBatchReq(d, r.lease() + 1, List.of(), List.of(BatchRemove.unlink("keep")),
        null, false, 0, Unpooled.EMPTY_BUFFER));
    assertEquals(List.of(Errno.ESTALE.code()), b.removed().stream().map(RemoveResult::errno).toList());
    batch(r.lease(), List.of(), true, 0);
    assertNotNull(call(other, new LookupReq(d, "keep")).attr(), "still there");
  }

  @Test
  void batch_ofAnUnknownLease_failsEveryEntryWithESTALE() throws Exception {
    Handle e = call(holder, new CreateReq(Handle.ROOT, "e", FileType.DIRECTORY, 0755, 0, 0, 0, null, 0)).attr().handle();
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 2));
    Reserved f = r.reserved().get(0);
    CreateBatchResp unknown = batch(r.lease() + 1, List.of(create("a", f), create("b", r.reserved().get(1))), false, 1);
    assertEquals(List.of(Errno.ESTALE.code(), Errno.ESTALE.code()), unknown.results().stream().map(BatchResult::errno).toList());
    unknown.results().forEach(x -> assertNull(x.attr()));
    assertTrue(unknown.recalled());
    assertEquals(List.of(), unknown.reserved());
    CreateBatchResp otherDir = batchIn(e, r.lease(), List.of(create("a", f)), false, 0, new byte[0]);
    assertEquals(Errno.ESTALE.code(), otherDir.results().get(0).errno(), "a lease of another directory");
    assertEquals(Errno.ENOENT, errno(other, new LookupReq(e, "a")));
    batch(r.lease(), List.of(), true, 0);
    assertEquals(Errno.ENOENT, errno(other, new LookupReq(d, "a")), "nothing created");
    assertEquals(3, meta.server().counters().get("batch.failed"));
  }

  @Test
  void batch_aHandleUsedTwiceOrNotReserved_EINVAL() throws Exception {
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 2));
    Reserved f = r.reserved().get(0);
    CreateBatchResp once = batch(r.lease(), List.of(create("a", f), create("b", f)), false, 0);
    assertEquals(f.handle(), once.results().get(0).attr().handle());
    assertEquals(Errno.EINVAL.code(), once.results().get(1).errno(), "used in the same batch");
    CreateBatchResp again = batch(r.lease(), List.of(create("c", f),
        new BatchCreate("d", false, 0, Handle.of(0, 999_999), 0644, 0, 0, null, 0, 0)), true, 0);
    assertEquals(Errno.EINVAL.code(), again.results().get(0).errno(), "used in an earlier batch");
    assertEquals(Errno.EINVAL.code(), again.results().get(1).errno(), "never reserved");
    assertEquals(List.of("a"), call(other, new ReaddirReq(d, null, 100, false)).entries().stream()
        .map(e -> e.name()).toList());
    Thread.sleep(DatafileReaper.LINGER_MS * 5);
    assertTrue(meta.removed().stream().noneMatch(f.layout().datafiles()::contains),
        "a refused second use removes nothing of the file that has the datafiles");
  }

  @Test
  void reclaim_ofAnExpiredLeasesFile_makesItWithItsReservation_untilTheGraceIsOver() throws Exception {
    stop();
    Duration term = Duration.ofMillis(300);
    start(term, Duration.ofMillis(1500));
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 3));
    Reserved a = r.reserved().get(0);
    Reserved b = r.reserved().get(1);
    Reserved late = r.reserved().get(2);
    call(other, new LookupReq(d, ".")); // waits for the expiry: the holder stalled, its batch is lost
    assertEquals(1, meta.server().counters().get("lease.expired"));
    List<Handle> reserved = reservedByServer();
    r.reserved().forEach(f -> assertTrue(reserved.containsAll(f.layout().datafiles()), f + " kept for its holder"));
    SetattrReq closed = new SetattrReq(a.handle(), SetattrReq.SIZE_GROW, 0, 0, 0, 3, 0, 0);
    Layout notItsOwn = b.layout(); // the server's own word counts, not the holder's
    EntryResp made = call(holder, new ReclaimReq(d, new BatchCreate("a", false, 0, a.handle(), 0640, 7, 8, closed, 0, 3),
        notItsOwn, Unpooled.wrappedBuffer(new byte[] {4, 5, 6})));
    assertEquals(a.handle(), made.attr().handle());
    assertEquals(a.layout(), made.attr().layout(), "the reserved layout");
    assertEquals(3, made.attr().size());
    HeadReadResp h = call(other, new HeadReadReq(a.handle(), 0, HEAD));
    try {
      assertArrayEquals(new byte[] {4, 5, 6}, ByteBufUtil.getBytes(h.payload()));
    } finally {
      h.release();
    }
    assertEquals(b.handle(), call(holder, new ReclaimReq(d, new BatchCreate("b", true, 0, b.handle(), 0755, 7, 8, null,
        0, 0), null, Unpooled.EMPTY_BUFFER)).attr().handle(), "a directory, its datafiles back in the pools");
    assertEquals(Errno.ESTALE, errno(holder, new ReclaimReq(d, create("again", a), a.layout(), Unpooled.EMPTY_BUFFER)),
        "used: no reservation of it left");
    assertEquals(Errno.EINVAL, errno(holder, new ReclaimReq(d, create("dir", late), null, Unpooled.EMPTY_BUFFER)),
        "a file without its layout");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!meta.removed().containsAll(late.layout().datafiles()) && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertTrue(meta.removed().containsAll(late.layout().datafiles()), "removed after the grace: " + meta.removed());
    assertEquals(Errno.ESTALE, errno(holder, new ReclaimReq(d, create("late", late), late.layout(), Unpooled.EMPTY_BUFFER)));
    assertEquals(Errno.ENOENT, errno(other, new LookupReq(d, "late")));
    assertTrue(meta.removed().stream().noneMatch(a.layout().datafiles()::contains), "a's datafiles are its own");
    assertEquals(2, meta.server().counters().get("lease.reclaimed"));
  }

  @Test
  void reclaim_afterARestart_takesTheHoldersWordForTheLayout_ofAHandleReservedBefore() throws Exception {
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 2));
    Reserved a = r.reserved().get(0);
    Reserved b = r.reserved().get(1);
    Path store = dir.resolve("meta-" + DirLeases.TERM.toMillis());
    meta.close(); // the batch is lost with the server
    meta = new LoopbackMetaServer(net, store, HEAD, DirLeases.TERM);
    holder = meta.client();
    other = meta.client();
    Layout elsewhere = new Layout(a.layout().dist(), List.of(Handle.of(Handle.serverOfIo(7), 5)), HEAD);
    assertEquals(Errno.EINVAL, errno(holder, new ReclaimReq(d, create("b", b), elsewhere, Unpooled.EMPTY_BUFFER)),
        "a datafile on an I/O server this file system does not have");
    Layout otherHead = new Layout(b.layout().dist(), b.layout().datafiles(), HEAD * 2);
    assertEquals(Errno.EINVAL, errno(holder, new ReclaimReq(d, create("b", b), otherHead, Unpooled.EMPTY_BUFFER)));
    EntryResp made = call(holder, new ReclaimReq(d, create("a", a), a.layout(), Unpooled.EMPTY_BUFFER));
    assertEquals(a.handle(), made.attr().handle());
    assertEquals(a.layout(), made.attr().layout());
    assertEquals(a.handle(), call(other, new LookupReq(d, "a")).attr().handle());
    assertEquals(Errno.EINVAL, errno(holder, new ReclaimReq(d, create("again", a), a.layout(), Unpooled.EMPTY_BUFFER)),
        "in use");
    Handle never = Handle.of(Handle.META_SERVER, a.handle().local() + 1_000_000);
    assertEquals(Errno.EINVAL, errno(holder, new ReclaimReq(d, new BatchCreate("b", false, 0, never, 0644, 0, 0, null, 0,
        0), a.layout(), Unpooled.EMPTY_BUFFER)), "never handed out");
    // reserved since the restart: only a lease or its leftovers hold it
    DirLeaseResp now = call(holder, new DirLeaseReq(d, 1));
    batch(now.lease(), List.of(), true, 0);
    Reserved given = now.reserved().get(0);
    assertEquals(Errno.ESTALE, errno(holder, new ReclaimReq(d, create("c", given), given.layout(), Unpooled.EMPTY_BUFFER)),
        "given back with its lease's end");
  }

  @Test
  void fsckReserved_listsTheDatafilesOfLiveLeases() throws Exception {
    DirLeaseResp r = call(holder, new DirLeaseReq(d, 3));
    List<Handle> reserved = reservedByServer();
    for (Reserved f : r.reserved()) {
      assertTrue(reserved.containsAll(f.layout().datafiles()), f + " listed");
    }
    batch(r.lease(), List.of(create("a", r.reserved().get(0))), false, 0);
    assertFalse(reservedByServer().containsAll(r.reserved().get(0).layout().datafiles()), "used: in a layout now");
  }

  // ---- helpers --------------------------------------------------------------------------------

  private static BatchCreate create(String name, Reserved f) {
    return new BatchCreate(name, false, 0, f.handle(), 0644, 0, 0, null, 0, 0);
  }

  private CreateBatchResp batch(long lease, List<BatchCreate> creates, boolean end, int more) throws Exception {
    return batch(lease, creates, end, more, new byte[0]);
  }

  private CreateBatchResp batch(long lease, List<BatchCreate> creates, boolean end, int more, byte[] heads)
      throws Exception {
    return batchIn(d, lease, creates, end, more, heads);
  }

  private CreateBatchResp batchIn(Handle in, long lease, List<BatchCreate> creates, boolean end, int more, byte[] heads)
      throws Exception {
    ByteBuf payload = Unpooled.wrappedBuffer(heads);
    return call(holder, new CreateBatchReq(in, lease, creates, null, end, more, payload));
  }

  private List<Handle> reservedByServer() throws Exception {
    FsckDatafilesResp r = call(other, new FsckReservedReq());
    return r.datafiles();
  }

  private static Errno errnoOf(CompletableFuture<?> f) throws Exception {
    try {
      Object v = f.get(5, TimeUnit.SECONDS);
      if (v instanceof io.netty.util.ReferenceCounted rc) {
        rc.release();
      }
      throw new AssertionError("succeeded: " + v);
    } catch (ExecutionException e) {
      return ((FsException) e.getCause()).errno();
    }
  }
}
