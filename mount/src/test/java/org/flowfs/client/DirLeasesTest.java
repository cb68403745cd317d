package org.flowfs.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.flowfs.common.Attr;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FileType;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.dist.Basic;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.MetaOp;
import org.flowfs.common.wire.MetaOp.BatchCreate;
import org.flowfs.common.wire.MetaOp.BatchRemove;
import org.flowfs.common.wire.MetaOp.BatchResult;
import org.flowfs.common.wire.MetaOp.CreateBatchReq;
import org.flowfs.common.wire.MetaOp.CreateBatchResp;
import org.flowfs.common.wire.MetaOp.DirLeaseReq;
import org.flowfs.common.wire.MetaOp.DirLeaseResp;
import org.flowfs.common.wire.MetaOp.GetattrReq;
import org.flowfs.common.wire.MetaOp.LookupReq;
import org.flowfs.common.wire.MetaOp.RemoveReq;
import org.flowfs.common.wire.MetaOp.RemoveResult;
import org.flowfs.common.wire.MetaOp.RenameReq;
import org.flowfs.common.wire.MetaOp.Reserved;
import org.flowfs.common.wire.MetaOp.SetattrReq;
import org.flowfs.common.wire.Req;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The client's side of directory leases against a metadata server played here: batches carry
 * closed files with their records and head bytes, a settle sends what a request depends on and
 * waits for it, a recall ends the lease, errors reach the file.
 */
class DirLeasesTest {
  static final Handle DIR = Handle.of(Handle.META_SERVER, 100);
  static final long CTIME = 5_000;

  /** The metadata server: grants, and answers batches when the test says so (or at once). */
  final class Server implements DirLeases.Host {
    final BlockingQueue<CreateBatchReq> batches = new LinkedBlockingQueue<>();
    final List<CompletableFuture<CreateBatchResp>> answers = new ArrayList<>();
    final List<String> heads = new ArrayList<>();
    final AtomicLong nextHandle = new AtomicLong(1000);
    volatile boolean answerAtOnce = true;
    volatile boolean recall;
    volatile int failErrno;
    /** When not 0, what the removes of leased directories fail with. */
    volatile int dirRemoveErrno;
    /** Refuses leases (another client holds one); counts the asks. */
    volatile boolean refuse;
    volatile int asks;
    final List<Handle> askedFor = new ArrayList<>();
    /** The ctimes the names were known at, ask by ask. */
    final List<Long> askedAt = new ArrayList<>();
    /** The directories a lease with the names was asked for on. */
    final List<Handle> askedListed = new ArrayList<>();
    /** The ctime a grant reports. */
    volatile long listedCtime = CTIME;
    /** Grants the leases a batch asks for on the directories it makes (as the server does unless recalled). */
    volatile boolean grantInBatch = true;
    /** Answers every create ESTALE (the server restarted and forgot the lease). */
    volatile boolean stale;
    /** Answers the removes of directories made under the batch's lease ESTALE (one is leased now). */
    volatile boolean madeDirLeased;
    final List<String> created = new ArrayList<>();
    final List<String> failed = new ArrayList<>();
    volatile long knownCtime = CTIME;

    List<Reserved> reserve(int n) {
      List<Reserved> r = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        r.add(new Reserved(Handle.of(Handle.META_SERVER, nextHandle.getAndIncrement()),
            new Layout(new Basic().spec(), List.of(Handle.of(1, 1 + i)), 65536)));
      }
      return r;
    }

    @Override
    @SuppressWarnings("unchecked")
    public synchronized <R extends Message> CompletableFuture<R> send(Req<R> req) {
      if (req instanceof DirLeaseReq q) {
        asks++;
        askedFor.add(q.dir());
        askedAt.add(q.knownCtimeNs());
        if (q.names()) {
          askedListed.add(q.dir());
        }
        return CompletableFuture.completedFuture((R) (refuse ? new DirLeaseResp(0, 0, 0, List.of())
            : new DirLeaseResp(77, listedCtime, 3_000_000_000L, reserve(q.files()),
                q.names() || (q.knownCtimeNs() != 0 && q.knownCtimeNs() != listedCtime) ? List.of("old") : null)));
      }
      CreateBatchReq q = (CreateBatchReq) req;
      if (stale && q.dirRecord() != null) {
        q.payload().release();
        batches.add(q);
        return CompletableFuture.failedFuture(new FsException(Errno.ESTALE, "lease not known"));
      }
      ByteBuf p = q.payload();
      for (BatchCreate c : q.creates()) {
        heads.add(p.readCharSequence(c.headLength(), StandardCharsets.UTF_8).toString());
      }
      p.release();
      List<BatchResult> results = new ArrayList<>();
      for (BatchCreate c : q.creates()) {
        int errno = stale ? Errno.ESTALE.code() : failErrno;
        DirLeaseResp lease = c.leaseFiles() > 0 && grantInBatch
            ? new DirLeaseResp(78, CTIME, 3_000_000_000L, reserve(c.leaseFiles())) : null;
        results.add(errno != 0 ? new BatchResult(null, 0, errno, null)
            : new BatchResult(new Attr(c.handle(), c.type(), c.mode(), c.uid(), c.gid(), 1,
                c.record() == null ? 0 : c.record().size(), 1, 1, 1, 0, null), CTIME, 0, lease));
      }
      List<RemoveResult> removed = new ArrayList<>();
      long ctime = CTIME;
      for (BatchRemove rm : q.removes()) {
        int errno = stale || rm.made() && madeDirLeased ? Errno.ESTALE.code()
            : rm.dirLease() != 0 && dirRemoveErrno != 0 ? dirRemoveErrno : failErrno;
        removed.add(errno != 0 ? new RemoveResult(null, false, 0, 0, errno)
            : new RemoveResult(Handle.of(Handle.META_SERVER, 1), true, ctime, ++ctime, 0));
      }
      CreateBatchResp resp = new CreateBatchResp(results, removed, recall, q.end() ? List.of() : reserve(q.more()));
      batches.add(q);
      CompletableFuture<CreateBatchResp> f = new CompletableFuture<>();
      if (answerAtOnce) {
        f.complete(resp);
      } else {
        answers.add(f);
        pendingResp.add(resp);
      }
      return (CompletableFuture<R>) f;
    }

    final List<CreateBatchResp> pendingResp = new ArrayList<>();

    synchronized void answerAll() {
      for (int i = 0; i < answers.size(); i++) {
        answers.get(i).complete(pendingResp.get(i));
      }
      answers.clear();
      pendingResp.clear();
    }

    @Override
    public synchronized void created(Handle dir, String name, Attr attr, long parentWasNs, long askedNanos) {
      created.add(name);
    }

    @Override
    public synchronized void failed(Handle dir, String name, Handle file) {
      failed.add(name);
    }

    /** Unlinks answered in batches, and those made again with calls of their own. */
    final List<String> unlinked = new ArrayList<>();
    final List<String> unlinkedAgain = new ArrayList<>();

    @Override
    public synchronized void unlinked(Handle dir, String name, RemoveResult r, boolean directory, long askedNanos) {
      unlinked.add(name + (directory ? "/" : ""));
    }

    @Override
    public synchronized void unlinkAgain(Handle dir, String name, boolean directory) {
      unlinkedAgain.add(name + (directory ? "/" : ""));
    }

    @Override
    public void listed(Handle dir, List<String> names, long ctimeNs, long askedNanos) {
      listings.add(dir + ":" + names + "@" + ctimeNs);
      knownCtime = ctimeNs;
    }

    final List<String> listings = new ArrayList<>();

    /** When not 0, the ctime a lease is asked at (else {@link #knownCtime}). */
    volatile long askCtime;

    @Override
    public long knownCtime(Handle dir) {
      return askCtime != 0 ? askCtime : knownCtime;
    }

    @Override
    public boolean knownAt(Handle dir, long ctimeNs, long askedNanos) {
      return ctimeNs == knownCtime;
    }

    /** The directory changes applied with calls of their own (their batch was lost). */
    final List<SetattrReq> records = new ArrayList<>();

    @Override
    public synchronized void record(SetattrReq record) {
      records.add(record);
    }

    /** The names this client knows the objects of ("dir/name"), and those it knows are free. */
    final java.util.Map<String, Handle> names = new java.util.concurrent.ConcurrentHashMap<>();
    final java.util.Set<String> free = java.util.concurrent.ConcurrentHashMap.newKeySet();

    @Override
    public Handle known(Handle dir, String name) {
      return names.get(dir + "/" + name);
    }

    @Override
    public boolean free(Handle dir, String name) {
      return free.contains(dir + "/" + name);
    }

    final List<String> recreated = new ArrayList<>();
    /** The layouts the files made again brought (null for a directory). */
    final List<Layout> reclaimedLayouts = new ArrayList<>();
    /** Recreates that fail with EIO first (the server is not back yet). */
    volatile int recreateFailures;

    @Override
    public synchronized Attr reclaim(Handle dir, BatchCreate c, Layout layout, ByteBuf head) {
      if (recreateFailures > 0) {
        recreateFailures--;
        throw new FsException(Errno.EIO, "connection refused");
      }
      assertEquals(head == null ? 0 : head.readableBytes(), c.headLength());
      assertEquals(0, c.leaseFiles());
      recreated.add(c.name() + (c.directory() ? "/" : "") + ":"
          + (head == null ? "" : head.toString(StandardCharsets.UTF_8)) + ":" + (c.record() == null ? -1 : c.record().size()));
      reclaimedLayouts.add(layout);
      return new Attr(c.handle(), c.type(), c.mode(), c.uid(), c.gid(), 1, 0, 1, 1, 1, 0, layout);
    }
  }

  final Server server = new Server();
  final Counters counters = new Counters();
  /** Closes linger 300 ms, files open or idle for 10 s: a slow machine cannot split what a test puts in one batch. */
  DirLeases leases = new DirLeases(server, 8, Duration.ofSeconds(5), counters, 300_000_000L, 10_000_000_000L,
      10_000_000_000L);

  @AfterEach
  void close() {
    server.answerAtOnce = true;
    server.answerAll();
    leases.close();
  }

  private void granted() throws InterruptedException {
    leases.want(DIR);
    for (int i = 0; i < 500 && !leases.holds(DIR); i++) {
      Thread.sleep(2);
    }
    assertTrue(leases.holds(DIR), "lease granted");
  }

  private Attr make(String name) {
    return leases.create(DIR, name, 0644, 1, 2, 1, () -> true);
  }

  private static SetattrReq record(Handle h, long size) {
    return new SetattrReq(h, SetattrReq.SIZE_GROW | SetattrReq.MTIME, 0, 0, 0, size, 0, 9);
  }

  private static ByteBuf bytes(String s) {
    return Unpooled.copiedBuffer(s, StandardCharsets.UTF_8);
  }

  @Test
  void closedFiles_goInOneBatch_withTheirRecordsAndHeads() throws Exception {
    granted();
    List<Attr> made = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      Attr a = make("f" + i);
      assertNotNull(a);
      assertEquals(0644, a.mode());
      made.add(a);
    }
    assertEquals(5, made.stream().map(Attr::handle).distinct().count(), "a reserved handle each");
    for (int i = 0; i < 5; i++) {
      assertTrue(leases.absorb(made.get(i).handle(), record(made.get(i).handle(), 2), 0, bytes("h" + i)), "close " + i);
    }
    CreateBatchReq b = server.batches.poll(5, TimeUnit.SECONDS);
    assertNotNull(b, "the closes lingered, then left together");
    assertEquals(List.of("f0", "f1", "f2", "f3", "f4"), b.creates().stream().map(BatchCreate::name).toList());
    assertEquals(List.of("h0", "h1", "h2", "h3", "h4"), server.heads);
    assertEquals(2, b.creates().get(3).record().size());
    assertFalse(b.end());
    for (int i = 0; i < 500 && server.created.size() < 5; i++) {
      Thread.sleep(2);
    }
    assertEquals(5, server.created.size());
    assertFalse(leases.absorb(made.get(0).handle(), null, 0, null), "answered: recorded as usual from now on");
  }

  @Test
  void unlinks_goInTheBatch_afterTheCreatesMadeBeforeThem() throws Exception {
    granted();
    Attr a = make("a");
    assertTrue(leases.absorb(a.handle(), null, 0, null));
    Handle old = Handle.of(Handle.META_SERVER, 555);
    assertTrue(leases.unlink(DIR, "old", old, () -> true));
    assertTrue(leases.unlink(DIR, "a", a.handle(), () -> true), "a closed file made here: unlinked after its create");
    CreateBatchReq b = server.batches.poll(5, TimeUnit.SECONDS);
    assertNotNull(b, "the unlinks lingered, then left with the create");
    assertEquals(List.of("a"), b.creates().stream().map(BatchCreate::name).toList());
    assertEquals(List.of(BatchRemove.unlink("old"), BatchRemove.unlink("a")), b.removes());
    for (int i = 0; i < 500 && server.unlinked.size() < 2; i++) {
      Thread.sleep(2);
    }
    assertEquals(List.of("old", "a"), server.unlinked);
    assertEquals(1, counters.get("lease.batches"));
  }

  @Test
  void unlinks_thatMustBeCallsOfTheirOwn_areRefused() throws Exception {
    assertFalse(leases.unlink(DIR, "x", Handle.of(Handle.META_SERVER, 556), () -> true), "no lease");
    granted();
    Attr open = make("open");
    assertFalse(leases.unlink(DIR, "open", open.handle(), () -> true), "made here and still open: its close is to come");
    assertFalse(leases.unlink(DIR, "y", Handle.of(Handle.META_SERVER, 557), () -> false), "a name not known here");
    server.answerAtOnce = false;
    Handle z = Handle.of(Handle.META_SERVER, 558);
    assertTrue(leases.unlink(DIR, "z", z, () -> true));
    assertFalse(leases.unlink(DIR, "z", z, () -> true), "unlinked already, not answered");
    assertNull(make("z"), "a name unlinked here and not answered is not made again under the lease");
    assertTrue(leases.absorb(open.handle(), null, 0, null));
  }

  @Test
  void settlingAnUnlinkedFile_sendsItsBatch_andWaitsForTheAnswer() throws Exception {
    granted();
    Handle f = Handle.of(Handle.META_SERVER, 559);
    assertTrue(leases.unlink(DIR, "f", f, () -> true));
    leases.settle(f); // long before the 300 ms linger
    assertEquals(List.of("f"), server.unlinked);
    assertTrue(leases.holds(DIR), "the lease goes on");
  }

  private Handle leasedSub() throws InterruptedException {
    return leased(Handle.of(Handle.META_SERVER, 200));
  }

  private Handle leased(Handle dir) throws InterruptedException {
    leases.want(dir);
    for (int i = 0; i < 500 && !leases.holds(dir); i++) {
      Thread.sleep(2);
    }
    assertTrue(leases.holds(dir));
    return dir;
  }

  @Test
  void anRmdirOfADirectoryKnownHere_endsTheLeasesOnItAndItsParent_notOthers() throws Exception {
    granted();
    Handle sub = leasedSub();
    Handle other = leased(Handle.of(Handle.META_SERVER, 300));
    server.names.put(DIR + "/sub", sub);
    leases.settle(new RemoveReq(DIR, "sub", true));
    assertFalse(leases.holds(sub), "the directory's lease ended: its creates first, then the rmdir");
    assertFalse(leases.holds(DIR), "the parent's lease ended, as for any request naming it");
    assertTrue(leases.holds(other), "a lease elsewhere goes on");
    assertEquals(0, counters.get("lease.settled-all"));
  }

  @Test
  void anRmdirOfANameNotKnownHere_endsEveryLease() throws Exception {
    granted();
    Handle other = leased(Handle.of(Handle.META_SERVER, 300));
    leases.settle(new RemoveReq(DIR, "sub", true)); // it may be a directory leased here
    assertFalse(leases.holds(DIR));
    assertFalse(leases.holds(other), "the name may be this lease's directory: ended");
    assertEquals(1, counters.get("lease.settled-all"));
  }

  @Test
  void aRenameOfAFileKnownHere_toAFreeName_endsTheLeasesOnBothParents_only() throws Exception {
    granted();
    Handle to = leasedSub();
    Handle other = leased(Handle.of(Handle.META_SERVER, 300));
    Attr f = make("f"); // made here, not sent yet: the rename waits for its batch
    server.names.put(DIR + "/f", f.handle());
    server.free.add(to + "/g");
    leases.settle(new RenameReq(DIR, "f", to, "g", 0, 1));
    assertEquals(List.of("f"), server.created, "the file's create was answered first");
    assertFalse(leases.holds(DIR));
    assertFalse(leases.holds(to));
    assertTrue(leases.holds(other), "a lease elsewhere goes on");
    assertEquals(0, counters.get("lease.settled-all"));
  }

  @Test
  void aRenameOverADirectoryLeasedHere_endsItsLease_andOneToANameNotKnown_endsEveryLease() throws Exception {
    granted();
    Handle sub = leasedSub();
    Handle moved = Handle.of(Handle.META_SERVER, 400);
    Handle other = leased(Handle.of(Handle.META_SERVER, 300));
    server.names.put(DIR + "/d", moved);
    server.names.put(DIR + "/sub", sub);
    leases.settle(new RenameReq(DIR, "d", DIR, "sub", 0, 1));
    assertFalse(leases.holds(sub), "the directory it replaces was leased here: its creates go first");
    assertTrue(leases.holds(other));
    Handle third = leased(Handle.of(Handle.META_SERVER, 500));
    leases.settle(new RenameReq(DIR, "d", DIR, "unknown", 0, 2));
    assertFalse(leases.holds(other), "what the name is, is not known: every lease ended");
    assertFalse(leases.holds(third));
    assertEquals(1, counters.get("lease.settled-all"));
  }

  @Test
  void anEmptyDirectoryLeasedHere_isRemovedInItsParentsBatch_afterItsOwn() throws Exception {
    granted();
    assertFalse(leases.rmdir(DIR, "sub", Handle.of(Handle.META_SERVER, 200), () -> true), "not leased here: a call");
    Handle sub = leasedSub();
    assertTrue(leases.unlink(sub, "last", Handle.of(Handle.META_SERVER, 201), () -> true));
    assertTrue(leases.rmdir(DIR, "sub", sub, () -> true));
    assertFalse(leases.unlink(sub, "more", Handle.of(Handle.META_SERVER, 202), () -> true), "nothing more in it");
    leases.settleAll();
    CreateBatchReq first = server.batches.poll(5, TimeUnit.SECONDS);
    CreateBatchReq second = server.batches.poll(5, TimeUnit.SECONDS);
    assertEquals(sub, first.dir(), "the directory's own batch first");
    assertEquals(List.of(BatchRemove.unlink("last")), first.removes());
    assertFalse(first.end(), "its lease goes on until the directory is gone");
    assertEquals(DIR, second.dir());
    assertEquals(List.of(BatchRemove.afterBatches("sub", 77, 1)), second.removes(),
        "naming the directory's lease and the batch that went under it");
    assertEquals(List.of("last", "sub/"), server.unlinked);
    assertFalse(leases.holds(sub), "its lease ended with it");
    assertTrue(leases.holds(DIR));
    assertEquals(1, counters.get("lease.rmdirs"));
  }

  @Test
  void anRmdir_waitsForNoAnswerOfItsDirectorysLastBatch() throws Exception {
    granted();
    Handle sub = leasedSub();
    server.answerAtOnce = false;
    assertTrue(leases.unlink(sub, "last", Handle.of(Handle.META_SERVER, 201), () -> true));
    assertTrue(leases.rmdir(DIR, "sub", sub, () -> true), "queued while the directory's batch is not answered");
    CreateBatchReq first = server.batches.poll(5, TimeUnit.SECONDS);
    CreateBatchReq second = server.batches.poll(5, TimeUnit.SECONDS);
    assertEquals(sub, first.dir());
    assertEquals(List.of(BatchRemove.unlink("last")), first.removes());
    assertEquals(DIR, second.dir(), "the parent's batch left after its linger, the directory's still unanswered");
    assertEquals(List.of(BatchRemove.afterBatches("sub", 77, 1)), second.removes());
    synchronized (server) {
      assertEquals(2, server.answers.size());
    }
    server.answerAll();
    for (int i = 0; i < 500 && leases.holds(sub); i++) {
      Thread.sleep(2);
    }
    assertFalse(leases.holds(sub), "its lease ended with it");
    assertNull(server.batches.poll(100, TimeUnit.MILLISECONDS), "nothing more went under the directory's lease");
    assertEquals(List.of("last", "sub/"), server.unlinked);
  }

  @Test
  void anRmdirTheServerTookBeforeItsDirectorysUnlinks_isMadeAgainWithACallOfItsOwn_afterThem() throws Exception {
    granted();
    Handle sub = leasedSub();
    server.dirRemoveErrno = Errno.ENOTEMPTY.code();
    assertTrue(leases.unlink(sub, "last", Handle.of(Handle.META_SERVER, 201), () -> true));
    assertTrue(leases.rmdir(DIR, "sub", sub, () -> true));
    leases.settleAll();
    for (int i = 0; i < 500 && (server.unlinkedAgain.isEmpty() || leases.holds(sub)); i++) {
      Thread.sleep(2);
    }
    synchronized (server) {
      assertEquals(List.of("last"), server.unlinked);
      assertEquals(List.of("sub/"), server.unlinkedAgain, "the rmdir made again once the unlinks in it were answered");
    }
    assertEquals(1, counters.get("lease.rmdir-again"));
    assertFalse(leases.holds(sub), "its lease ended as any other");
    assertEquals(0, counters.get("lease.unlink-failed"));
  }

  @Test
  void aDirectoryMadeUnderTheLease_isKnownByName_andRemovedInItsBatchWithoutALeaseOfItsOwn() throws Exception {
    granted();
    Attr sub = mkdir(DIR, "sub");
    Attr quick = mkdir(DIR, "quick");
    assertEquals(sub.handle(), leases.madeHere(DIR, "sub"), "no lookup: that would end the lease");
    CompletableFuture<Void> until = leases.madeUntil(DIR, "sub", sub.handle());
    assertNotNull(until, "nobody else can reach it while the lease lives");
    assertNull(leases.madeUntil(DIR, "sub", Handle.of(Handle.META_SERVER, 999)), "another object");
    leases.settle(sub.handle()); // their batch answered: made on the server; settled each, since
    leases.settle(quick.handle()); // sub's settle may return before the answer's handling reaches quick
    assertEquals(List.of("sub", "quick"), server.created);
    assertFalse(leases.rmdir(DIR, "old", Handle.of(Handle.META_SERVER, 300), () -> true),
        "not made under this lease (another client may have reached it): a call");
    assertFalse(leases.rmdir(DIR, "sub", sub.handle(), () -> false), "not empty as far as this client knows: a call");
    assertTrue(leases.rmdir(DIR, "sub", sub.handle(), () -> true));
    assertNull(leases.madeHere(DIR, "sub"), "gone from the names made here");
    assertTrue(leases.rmdir(DIR, "quick", quick.handle(), () -> true));
    leases.settleAll();
    List<BatchRemove> removes = new ArrayList<>();
    int creates = 0;
    while (removes.size() < 2) {
      CreateBatchReq b = server.batches.poll(5, TimeUnit.SECONDS);
      assertNotNull(b, "a batch with the removes");
      creates += b.creates().size();
      removes.addAll(b.removes());
    }
    assertEquals(2, creates, "the creates went in batches before the removes");
    assertEquals(List.of(BatchRemove.madeDir("sub"), BatchRemove.madeDir("quick")), removes,
        "removes of directories made under the batch's lease, naming no lease");
    assertEquals(List.of("sub/", "quick/"), server.unlinked);
    assertEquals(2, counters.get("lease.rmdirs-made"));
    assertTrue(leases.holds(DIR), "the lease goes on");
    assertFalse(until.isDone());
    leases.settle(DIR); // a request naming the directory ends the lease
    assertTrue(until.isDone(), "the lease ended: others may reach what was made under it");
  }

  @Test
  void aMadeDirectoryTheServerRefuses_isRemovedWithACallOfItsOwn_andTheLeaseGoesOn() throws Exception {
    granted();
    Attr sub = mkdir(DIR, "sub");
    server.madeDirLeased = true; // a lease on it stands at the server: the remove may not go with the batch
    assertTrue(leases.rmdir(DIR, "sub", sub.handle(), () -> true));
    leases.settleAll();
    for (int i = 0; i < 500 && server.unlinkedAgain.isEmpty(); i++) {
      Thread.sleep(2);
    }
    assertEquals(List.of("sub/"), server.unlinkedAgain, "made again with a call, which waits for that lease");
    assertEquals(List.of(), server.unlinked);
    assertTrue(leases.holds(DIR), "an rmdir's ESTALE is not the parent's");
  }

  @Test
  void unlinksWaitForRoomInTheBatch_ratherThanEndTheLeaseWithACall() throws Exception {
    granted();
    server.answerAtOnce = false; // the batch out is slow to be answered: unlinks pile up behind it
    CompletableFuture<Boolean> all = CompletableFuture.supplyAsync(() -> {
      for (int i = 0; i < MetaOp.MAX_LEASE_FILES + BATCH_EXTRA; i++) {
        if (!leases.unlink(DIR, "u" + i, Handle.of(Handle.META_SERVER, 5000 + i), () -> true)) {
          return false;
        }
      }
      return true;
    });
    for (int i = 0; i < 2500 && counters.get("lease.unlinks-full") == 0 && !all.isDone(); i++) {
      Thread.sleep(2);
    }
    assertFalse(all.isDone(), "the unlink past a batch's most waits for an answer (a call of its own would end the lease)");
    assertEquals(1, counters.get("lease.unlinks-full"));
    for (int i = 0; i < 2500 && !all.isDone(); i++) {
      server.answerAll();
      Thread.sleep(2);
    }
    assertTrue(all.get(5, TimeUnit.SECONDS), "every unlink went with a batch");
    assertTrue(leases.holds(DIR));
  }

  /** Unlinks past what the batch out and the next hold. */
  private static final int BATCH_EXTRA = DirLeases.BATCH + 10;

  @Test
  void anRmdirTheServerKnowsNoLeaseFor_isACallOfItsOwn() throws Exception {
    granted();
    Handle sub = leasedSub();
    assertTrue(leases.rmdir(DIR, "sub", sub, () -> true));
    server.stale = true; // ESTALE for every entry: for an rmdir, the directory's lease is not known
    leases.settle(sub);
    assertEquals(List.of("sub/"), server.unlinkedAgain);
    for (int i = 0; i < 500 && leases.holds(sub); i++) {
      Thread.sleep(2);
    }
    assertFalse(leases.holds(sub), "its lease ended as any other");
    assertTrue(leases.holds(DIR), "an rmdir's ESTALE is not the parent's: its lease goes on");
  }

  @Test
  void unlinksOfALostBatch_areMadeWithCallsOfTheirOwn() throws Exception {
    granted();
    server.stale = true; // the server restarted: it knows no lease
    assertTrue(leases.unlink(DIR, "p", Handle.of(Handle.META_SERVER, 560), () -> true));
    assertTrue(leases.unlink(DIR, "q", Handle.of(Handle.META_SERVER, 561), () -> true));
    leases.settle(Handle.of(Handle.META_SERVER, 561));
    assertEquals(List.of("p", "q"), server.unlinkedAgain);
    assertEquals(List.of(), server.unlinked);
    assertFalse(leases.holds(DIR), "the lease is given up");
  }

  @Test
  void headsPastTheBatchBound_goInTheNextBatch() throws Exception {
    granted();
    List<Attr> made = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      made.add(make("big" + i));
    }
    for (int i = 0; i < 6; i++) {
      ByteBuf head = Unpooled.buffer((int) Layout.MAX_HEAD).writeZero((int) Layout.MAX_HEAD);
      assertTrue(leases.absorb(made.get(i).handle(), record(made.get(i).handle(), Layout.MAX_HEAD), 0, head));
    }
    leases.settle(made.get(5).handle());
    List<CreateBatchReq> all = new ArrayList<>();
    server.batches.drainTo(all);
    assertEquals(List.of(4, 2), all.stream().map(b -> b.creates().size()).toList(),
        "heads of 1 MiB: at most " + DirLeases.MAX_BATCH_BYTES + " bytes a batch");
  }

  @Test
  void aSecondClose_isNotTaken() throws Exception {
    granted();
    Attr a = make("x");
    assertTrue(leases.absorb(a.handle(), null, 0, null));
    ByteBuf more = bytes("more");
    assertFalse(leases.absorb(a.handle(), record(a.handle(), 4), 0, more), "one close per file goes with its create");
    more.release();
  }

  @Test
  void settle_sendsAnOpenFileAndWaitsForTheAnswer() throws Exception {
    granted();
    Attr a = make("open");
    server.answerAtOnce = false;
    CompletableFuture<Void> settled = CompletableFuture.runAsync(() -> leases.settle(new GetattrReq(a.handle())));
    CreateBatchReq b = server.batches.poll(5, TimeUnit.SECONDS);
    assertNotNull(b);
    assertNull(b.creates().get(0).record(), "still open: created only");
    Thread.sleep(50);
    assertFalse(settled.isDone(), "waits for the answer");
    server.answerAll();
    settled.get(5, TimeUnit.SECONDS);
    assertFalse(leases.absorb(a.handle(), null, 0, null));
  }

  @Test
  void aRequestInTheDirectory_endsTheLeaseWithEverythingSent() throws Exception {
    granted();
    Attr a = make("a");
    make("b");
    assertTrue(leases.absorb(a.handle(), record(a.handle(), 1), 0, bytes("A")));
    leases.settle(new LookupReq(DIR, "c"));
    assertFalse(leases.holds(DIR));
    List<CreateBatchReq> all = new ArrayList<>();
    server.batches.drainTo(all);
    assertTrue(all.get(all.size() - 1).end(), "the last batch ends the lease");
    assertEquals(2, all.stream().mapToInt(x -> x.creates().size()).sum(), "both files, the open one too");
    assertNull(make("late"), "no lease: a create of its own");
  }

  @Test
  void aRecall_endsTheLease() throws Exception {
    granted();
    server.recall = true;
    Attr a = make("r");
    assertTrue(leases.absorb(a.handle(), null, 0, null));
    for (int i = 0; i < 1000 && leases.holds(DIR); i++) {
      Thread.sleep(2);
    }
    assertFalse(leases.holds(DIR), "recalled: ended by the holder");
    assertEquals(1, counters.get("lease.recalled"));
  }

  private Attr mkdir(Handle parent, String name) {
    return leases.make(FileType.DIRECTORY, parent, name, 0750, 1, 2, 1, () -> true);
  }

  @Test
  void directories_goWithTheNextBatch_closedFromTheStart() throws Exception {
    granted();
    Attr d = mkdir(DIR, "sub");
    assertNotNull(d);
    assertTrue(d.isDir());
    assertEquals(2, d.nlink());
    assertEquals(0750, d.mode());
    assertNull(d.layout(), "a reserved handle, no layout");
    Attr f = make("f");
    CreateBatchReq b = server.batches.poll(5, TimeUnit.SECONDS);
    assertNotNull(b, "a directory lingers as a closed file does, then leaves");
    assertEquals(1, b.creates().size(), "the open file stays");
    BatchCreate c = b.creates().get(0);
    assertEquals("sub", c.name());
    assertEquals(FileType.DIRECTORY, c.type());
    assertEquals(d.handle(), c.handle());
    assertNull(c.record());
    assertEquals(0, c.headLength());
    leases.settle(d.handle()); // its answer is handled
    assertEquals(List.of("sub"), server.created);
    assertFalse(leases.absorb(d.handle(), null, 0, null), "nothing to close");
    assertEquals(1, counters.get("lease.mkdirs"));
    assertTrue(leases.absorb(f.handle(), record(f.handle(), 0), 0, null));
  }

  @Test
  void aLeaseOnADirectoryMadeHere_comesWithTheBatchThatMakesIt() throws Exception {
    Attr d = madeAndWanted(() -> {
      assertEquals(List.of(DIR), server.askedFor);
      server.answerAtOnce = true;
    });
    assertEquals(8, server.batches.stream().findFirst().orElseThrow().creates().get(0).leaseFiles(),
        "its batch asked for the lease on it");
    assertEquals(List.of(DIR), server.askedFor, "no lease request of its own");
    assertEquals(1, counters.get("lease.granted-in-batch"));
    Attr other = mkdir(DIR, "other"); // nobody wants to create in it: its batch asks for nothing
    leases.settle(other.handle());
    assertEquals(List.of(0), server.batches.stream().flatMap(q -> q.creates().stream())
        .filter(c -> c.name().equals("other")).map(BatchCreate::leaseFiles).toList());
  }

  @Test
  void aLeaseOnADirectoryMadeHere_notGrantedWithItsBatch_isAskedForOnceItsBatchIsAnswered() throws Exception {
    server.grantInBatch = false;
    Attr d = madeAndWanted(() -> {
      Thread.sleep(50);
      assertEquals(List.of(DIR), server.askedFor, "the server does not know it before the answer");
    });
    assertEquals(List.of(DIR, d.handle()), server.askedFor);
  }

  /**
   * Makes directory "sub" under a lease on DIR and wants a lease on it: its batch goes at once
   * and stays unanswered while {@code beforeAnswer} runs; then a file is made in it under its own
   * lease. Returns the directory; the batch stays in {@code server.batches}.
   */
  private Attr madeAndWanted(Step beforeAnswer) throws Exception {
    granted();
    server.answerAtOnce = false;
    Attr d = mkdir(DIR, "sub");
    leases.want(d.handle());
    CreateBatchReq b = server.batches.peek();
    for (int i = 0; i < 500 && b == null; i++) {
      Thread.sleep(10);
      b = server.batches.peek();
    }
    assertNotNull(b, "the batch that makes it goes at once");
    assertEquals(List.of("sub"), b.creates().stream().map(BatchCreate::name).toList());
    beforeAnswer.run();
    server.answerAll();
    Attr inner = leases.create(d.handle(), "inner", 0644, 1, 2, 1, () -> true);
    assertNotNull(inner, "made under the new directory's lease");
    assertTrue(leases.holds(d.handle()));
    return d;
  }

  interface Step {
    void run() throws Exception;
  }

  @Test
  void aLostBatch_makesItsDirectoriesAgain() throws Exception {
    granted();
    server.stale = true;
    Attr d = mkdir(DIR, "sub");
    leases.settle(d.handle());
    assertEquals(List.of("sub/::-1"), server.recreated);
    assertEquals(List.of(), server.failed);
  }

  @Test
  void theDirectorysOwnChanges_goAfterTheCreatesBeforeThem_andBeforeThoseAfter() throws Exception {
    granted();
    Attr f = make("f");
    assertTrue(leases.absorb(f.handle(), record(f.handle(), 0), 0, null));
    assertTrue(leases.deferAttrs(DIR, SetattrReq.MTIME, 0, 0, 0, 0, 42), "kept with the lease");
    CreateBatchReq first = server.batches.poll(5, TimeUnit.SECONDS);
    assertEquals(List.of("f"), first.creates().stream().map(BatchCreate::name).toList(), "the create before it sent first");
    assertNull(first.dirRecord());
    assertTrue(leases.deferAttrs(DIR, SetattrReq.MODE | SetattrReq.UID, 0700, 5, 0, 0, 0), "nothing waits now: kept at once");
    assertFalse(leases.deferAttrs(DIR, SetattrReq.MODE, 02755, 0, 0, 0, 0), "set-group-ID: a call of its own");
    assertFalse(leases.deferAttrs(DIR, SetattrReq.SIZE, 0, 0, 0, 0, 0), "a call of its own");
    Attr g = make("g"); // after the changes: they left first (with the linger of f's close, or now)
    assertEquals(2, counters.get("lease.dir-attrs"));
    CreateBatchReq withRecord = server.batches.poll(5, TimeUnit.SECONDS);
    assertEquals(List.of(), withRecord.creates());
    SetattrReq r = withRecord.dirRecord();
    assertEquals(DIR, r.handle());
    assertEquals(SetattrReq.MTIME | SetattrReq.MODE | SetattrReq.UID, r.mask());
    assertEquals(List.of(42L, 0700, 5), List.of(r.mtimeNs(), r.mode(), r.uid()));
    assertTrue(leases.absorb(g.handle(), record(g.handle(), 0), 0, null));
    leases.settle(g.handle());
    CreateBatchReq last = server.batches.poll(5, TimeUnit.SECONDS);
    assertEquals(List.of("g"), last.creates().stream().map(BatchCreate::name).toList());
    assertNull(last.dirRecord());
  }

  @Test
  void theDirectorysOwnChanges_ofALostBatch_areMadeAgain() throws Exception {
    granted();
    assertTrue(leases.deferAttrs(DIR, SetattrReq.MODE, 0711, 0, 0, 0, 0));
    server.stale = true;
    leases.endAll();
    for (int i = 0; i < 2500 && server.records.isEmpty(); i++) {
      Thread.sleep(2);
    }
    assertEquals(1, server.records.size());
    assertEquals(0711, server.records.get(0).mode());
    assertEquals(DIR, server.records.get(0).handle());
    assertEquals(1, counters.get("lease.dir-attrs-again"));
  }

  @Test
  void aFailedCreate_failsTheFile() throws Exception {
    granted();
    server.failErrno = Errno.ENOSPC.code();
    Attr a = make("full");
    FsException e = assertThrows(FsException.class, () -> leases.settle(a.handle()));
    assertEquals(Errno.ENOSPC, e.errno());
    assertEquals(List.of("full"), server.failed);
  }

  @Test
  void aLostLease_makesItsFilesAgain_oneByOne_underTheirReservations_openOnesAtOnce() throws Exception {
    granted();
    server.stale = true;
    Attr small = make("small");
    Attr big = make("big");
    Attr open = make("open");
    assertTrue(leases.absorb(small.handle(), record(small.handle(), 5), 0, bytes("bytes")));
    assertTrue(leases.absorb(big.handle(), record(big.handle(), 1 << 20), 0, null)); // past its 64 KiB head
    leases.released(small.handle());
    leases.released(big.handle());
    leases.settle(small.handle());
    leases.settle(big.handle());
    leases.settle(open.handle()); // made bare at once: an open of it is good, and waits for nothing
    assertEquals(List.of("small:bytes:5", "big::1048576", "open::-1"), server.recreated);
    assertEquals(List.of(small.layout(), big.layout(), open.layout()), server.reclaimedLayouts,
        "under the reserved layouts: bytes in their datafiles stay theirs");
    assertEquals(List.of(), server.failed);
    assertEquals(0, counters.get("lease.create-failed"));
    assertFalse(leases.holds(DIR));
    assertFalse(leases.absorb(open.handle(), record(open.handle(), 4), 0, bytes("late")),
        "its close is an ordinary call now");
  }

  @Test
  void aLostBatch_isMadeAgain_whenTheServerIsBackAfterAWhile() throws Exception {
    granted();
    server.stale = true;
    server.recreateFailures = 3;
    Attr f = make("f");
    assertTrue(leases.absorb(f.handle(), record(f.handle(), 2), 0, bytes("hi")));
    leases.released(f.handle());
    leases.settle(f.handle());
    assertEquals(List.of("f:hi:2"), server.recreated);
    assertEquals(3, counters.get("lease.recover-retries"));
    assertEquals(List.of(), server.failed);
  }

  @Test
  void aFileSentOpen_inALostBatch_isMadeAgainAtOnce_andAFlushWaitingForItGoesOn() throws Exception {
    granted();
    Attr open = make("open");
    server.stale = true;
    leases.settle(open.handle()); // a flush of the open file: sent, lost, made again; no wait for its close
    assertNotNull(server.batches.poll(5, TimeUnit.SECONDS), "sent open");
    assertEquals(List.of("open::-1"), server.recreated);
    assertEquals(List.of(), server.failed);
    assertFalse(leases.absorb(open.handle(), record(open.handle(), 3), 0, bytes("end")), "its close is an ordinary call");
  }

  @Test
  void aGrantAtAnotherCtimeThanTheNamesKnownHere_comesWithTheNames_andTheLeaseIsKept() throws Exception {
    server.knownCtime = CTIME - 3; // the directory's own attributes changed since, say
    leases.want(DIR);
    for (int i = 0; i < 500 && !leases.holds(DIR); i++) {
      Thread.sleep(2);
    }
    assertTrue(leases.holds(DIR), "granted, with the names: not given back as stale");
    assertEquals(List.of(DIR + ":[old]@" + CTIME), server.listings);
    assertEquals(0, counters.get("lease.stale"));
    assertEquals(List.of(), server.askedListed, "asked without the names: they came because the ctime moved");
    assertEquals(List.of(CTIME - 3), server.askedAt);
    assertEquals(1, counters.get("lease.relisted"));
  }

  @Test
  void whereAnotherClientWorksToo_aGrantAtAnotherCtimeIsGivenBack_notRelisted() throws Exception {
    server.knownCtime = CTIME - 3;
    server.refuse = true; // another client holds a lease there: a listing is not asked for again soon
    for (int i = 0; i < DirLeases.LISTING_AFTER; i++) {
      leases.unlisted(DIR);
    }
    assertNull(leases.create(DIR, "f", 0644, 1, 2, 1, () -> true));
    server.refuse = false;
    Thread.sleep(DirLeases.REFUSED_NANOS / 1_000_000 + 100); // past the refusal, not past the listing's
    leases.want(DIR);
    assertNotNull(server.batches.poll(5, TimeUnit.SECONDS), "the lease given back");
    assertEquals(0L, server.askedAt.get(server.askedAt.size() - 1), "asked without the ctime: no names come");
    assertEquals(1, counters.get("lease.stale"));
    assertEquals(0, counters.get("lease.relisted"));
    assertFalse(leases.holds(DIR));
  }

  @Test
  void createsInADirectoryWhoseNamesAreNotKnown_askForALeaseWithTheNames_afterAFew() throws Exception {
    server.knownCtime = -1; // nothing known here
    server.listedCtime = CTIME + 7;
    for (int i = 1; i < DirLeases.LISTING_AFTER; i++) {
      leases.unlisted(DIR);
    }
    assertEquals(List.of(), server.askedListed, "a few creates of their own do not pay for a listing");
    leases.unlisted(DIR);
    Attr a = leases.create(DIR, "f", 0644, 1, 2, 1, () -> true); // waits for the grant
    assertNotNull(a, "made under the lease the listing came with");
    assertEquals(List.of(DIR), server.askedListed);
    assertEquals(List.of(DIR + ":[old]@" + (CTIME + 7)), server.listings);
    assertEquals(1, counters.get("lease.asked-listed"));
  }

  @Test
  void aListingLeaseRefusedOrRecalled_isNotAskedForAgainSoon() throws Exception {
    server.knownCtime = -1;
    server.refuse = true;
    for (int i = 0; i < DirLeases.LISTING_AFTER; i++) {
      leases.unlisted(DIR);
    }
    assertNull(leases.create(DIR, "f", 0644, 1, 2, 1, () -> true), "refused: a call of its own");
    assertEquals(List.of(DIR), server.askedListed);
    server.refuse = false;
    for (int i = 0; i < 3 * DirLeases.LISTING_AFTER; i++) {
      leases.unlisted(DIR);
    }
    assertEquals(List.of(DIR), server.askedListed, "not asked again within " + DirLeases.NO_LISTING_NANOS / 1e9 + " s");
    Handle other = Handle.of(Handle.META_SERVER, 101);
    server.recall = true;
    for (int i = 0; i < DirLeases.LISTING_AFTER; i++) {
      leases.unlisted(other);
    }
    Attr a = leases.create(other, "g", 0644, 1, 2, 1, () -> true);
    assertNotNull(a);
    assertTrue(leases.absorb(a.handle(), record(a.handle(), 0), 0, null));
    leases.settle(a.handle()); // its batch's answer says the lease is recalled
    for (int i = 0; i < 5000 && leases.holds(other); i++) {
      Thread.sleep(2);
    }
    assertFalse(leases.holds(other), "ended once recalled");
    for (int i = 0; i < 3 * DirLeases.LISTING_AFTER; i++) {
      leases.unlisted(other);
    }
    assertEquals(List.of(DIR, other), server.askedListed, "another client works there: not again soon");
  }

  @Test
  void aDirectoryChangedBetweenTheAskAndTheGrant_isGivenBack() throws Exception {
    server.askCtime = CTIME; // asked at the grant's ctime: no names come with it
    server.knownCtime = CTIME + 1; // and by the grant a change of this client was answered
    leases.want(DIR);
    CreateBatchReq b = server.batches.poll(5, TimeUnit.SECONDS);
    assertNotNull(b);
    assertTrue(b.end() && b.creates().isEmpty());
    assertFalse(leases.holds(DIR));
  }

  @Test
  void aRenameEndingALeaseThatMadeOneFile_holdsFurtherLeasesOffThereForASecond() throws Exception {
    granted();
    Attr f = make(".f.tmp"); // written under a temporary name, then renamed: an editor's save
    server.names.put(DIR + "/.f.tmp", f.handle());
    server.free.add(DIR + "/f");
    leases.settle(new RenameReq(DIR, ".f.tmp", DIR, "f", 0, 1));
    assertFalse(leases.holds(DIR));
    int asks = server.asks;
    for (int i = 0; i < 5; i++) {
      leases.want(DIR);
      assertNull(make("g" + i), "held off: a create of its own");
    }
    assertEquals(asks, server.asks, "not asked while the hold-off stands");
    assertEquals(5, counters.get("lease.held-off"));
  }

  @Test
  void aRenameEndingALeaseThatMadeMore_doesNotHoldLeasesOff() throws Exception {
    granted();
    for (int i = 0; i < DirLeases.RENAMED_AFTER + 1; i++) {
      make("f" + i);
    }
    Attr f = make("last");
    server.names.put(DIR + "/last", f.handle());
    server.free.add(DIR + "/renamed");
    leases.settle(new RenameReq(DIR, "last", DIR, "renamed", 0, 1));
    assertFalse(leases.holds(DIR));
    granted(); // asked again at once: an untar with a rename in it keeps its leases
    assertEquals(0, counters.get("lease.held-off"));
  }

  @Test
  void aRefusal_standsForASecond_createsAreCallsOfTheirOwnMeanwhile() throws Exception {
    server.refuse = true;
    leases.want(DIR);
    for (int i = 0; i < 500 && server.asks == 0; i++) {
      Thread.sleep(2);
    }
    Thread.sleep(20);
    for (int i = 0; i < 10; i++) {
      leases.want(DIR);
      assertNull(make("r" + i), "no lease: a create of its own");
    }
    assertEquals(1, server.asks, "asked once while the refusal stands");
    assertFalse(leases.holds(DIR));
  }

  @Test
  void anIdleLease_ends() throws Exception {
    leases.close();
    leases = new DirLeases(server, 8, Duration.ofSeconds(5), counters);
    granted();
    for (int i = 0; i < 1000 && leases.holds(DIR); i++) {
      Thread.sleep(2);
    }
    assertFalse(leases.holds(DIR));
    assertTrue(counters.get("lease.idle-ended") >= 1);
  }

  @Test
  void theReserve_isToppedUp() throws Exception {
    granted();
    for (int i = 0; i < 20; i++) {
      Attr a = make("t" + i);
      if (a == null) {
        Thread.sleep(20); // the reserve ran out: the top-up is on its way
        a = make("t" + i);
      }
      assertNotNull(a, "file " + i);
      leases.absorb(a.handle(), null, 0, null);
    }
  }
}
