package org.flowfs.meta;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.DefaultEventLoop;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.flowfs.common.Attr;
import org.flowfs.common.Errno;
import org.flowfs.common.FileType;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.meta.MetadataStore.Counts;
import org.flowfs.meta.MetadataStore.NewObject;
import org.junit.jupiter.api.Test;
import org.mapdb.BTreeMap;
import org.mapdb.DB;
import org.mapdb.Serializer;
import org.junit.jupiter.api.io.TempDir;

/** The contract on MapDB, and what only a durable store does: reopen, group commit, rollback. */
class MapDbMetadataStoreTest extends MetadataStoreContract {
  @TempDir
  Path dir;

  @Override
  MetadataStore open() {
    try {
      Path d = Files.createTempDirectory(dir, "store");
      return new MapDbMetadataStore(d, 64);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @Override
  int randomOps() {
    return 700; // each waits for its own commit (a sync)
  }

  private MapDbMetadataStore mapdb() {
    return (MapDbMetadataStore) store;
  }

  private MapDbMetadataStore reopen() {
    return reopen(java.time.Duration.ZERO);
  }

  /** Reopens the store with commits durable within {@code syncInterval} (zero: at once). */
  private MapDbMetadataStore reopen(java.time.Duration syncInterval) {
    Path d = mapdb().file().getParent();
    store.close();
    store = new MapDbMetadataStore(d, 64, null, syncInterval);
    return mapdb();
  }

  @Test
  void reopen_keepsEverything() {
    Attr d = mkdir(ROOT, "d");
    Attr f = mkfile(d.handle(), "f");
    join(store.link(f.handle(), ROOT, "f2", tick()));
    Attr s = join(store.create(d.handle(), "s", new NewObject(FileType.SYMLINK, 0777, 5, 6, 0, null, "../f2"), tick()));
    Attr dev = join(store.create(ROOT, "dev", new NewObject(FileType.BLOCK_DEVICE, 0660, 0, 6, 0x0801, null, null), tick()));
    join(store.setxattr(f.handle(), "user.k", new byte[] {4, 5}, 0, tick()));
    join(store.setattr(f.handle(), new MetadataStore.SetAttr(org.flowfs.common.wire.MetaOp.SetattrReq.SIZE, 0, 0, 0, 12345, 0, 0), tick()));
    List<Attr> before = new ArrayList<>();
    store.forEachObject(before::add);
    Counts counts = store.counts();

    reopen();

    List<Attr> after = new ArrayList<>();
    store.forEachObject(after::add);
    assertEquals(before, after);
    assertEquals(counts, store.counts());
    assertEquals(List.of("d", "dev", "f2"), names(ROOT));
    assertEquals(List.of("f", "s"), names(d.handle()));
    assertEquals("../f2", store.readlink(s.handle()));
    assertEquals(0x0801, attr(dev.handle()).rdev());
    assertEquals(LAYOUT, attr(f.handle()).layout());
    assertEquals(2, attr(f.handle()).nlink());
    assertArrayEquals(new byte[] {4, 5}, store.getxattr(f.handle(), "user.k"));
    assertEquals(d.handle(), store.lookup(d.handle(), ".").handle());
    assertEquals(ROOT, store.lookup(d.handle(), "..").handle());
  }

  /** A create's verifier is kept on disk: the create sent again after a restart is recognised. */
  @Test
  void reopen_keepsTheVerifierOfACreate() {
    NewObject v = new NewObject(FileType.REGULAR, 0644, 1, 1, 0, LAYOUT, null, -42);
    Attr f = join(store.create(ROOT, "f", v, tick()));
    join(store.setattr(f.handle(), new MetadataStore.SetAttr(org.flowfs.common.wire.MetaOp.SetattrReq.SIZE, 0, 0, 0, 7, 0, 0), tick()));
    reopen();
    assertEquals(f.handle(), join(store.createEntry(ROOT, "f", v, tick())).attr().handle());
    assertEquals(7, attr(f.handle()).size());
  }

  @Test
  void reopen_keepsRootAsCreated() {
    Attr root = attr(ROOT);
    reopen();
    assertEquals(root, attr(ROOT));
    assertEquals(new Counts(1, 1), store.counts());
  }

  @Test
  void reopen_neverReusesHandles() {
    Set<Handle> used = new HashSet<>();
    for (int round = 0; round < 3; round++) {
      for (int i = 0; i < 5; i++) {
        assertTrue(used.add(mkfile(ROOT, "f" + i).handle()));
        join(store.remove(ROOT, "f" + i, false, tick()));
      }
      reopen();
    }
  }

  @Test
  void groupCommit_concurrentCreatesShareCommits() {
    long commitsBefore = mapdb().commits();
    int n = 2000;
    List<CompletableFuture<Attr>> fs = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      fs.add(store.create(ROOT, "g" + i, obj(FileType.REGULAR, 0644), tick()));
    }
    fs.forEach(MetadataStoreContract::join);
    long commits = mapdb().commits() - commitsBefore;
    assertTrue(commits >= n / 64, "a group holds at most 64: " + commits);
    assertTrue(commits <= n / 10, "expected far fewer commits than " + n + " creates, got " + commits);
  }

  @Test
  void groupCommit_failedMutationsNeedNoCommit() {
    mkfile(ROOT, "x");
    long before = mapdb().commits();
    assertEquals(Errno.EEXIST, errno(store.create(ROOT, "x", obj(FileType.REGULAR, 0644), tick())));
    assertEquals(before, mapdb().commits());
  }

  @Test
  void groupCommit_completesOffTheWriterThread() {
    AtomicReference<String> thread = new AtomicReference<>();
    join(store.create(ROOT, "t", obj(FileType.REGULAR, 0644), tick()).whenComplete((a, e) ->
        thread.set(Thread.currentThread().getName())));
    assertTrue(thread.get().startsWith("meta-complete-") || thread.get().equals(Thread.currentThread().getName()),
        thread.get());
    assertNotEquals("meta-writer", thread.get());
  }

  /** Keeps the writer busy with a mutation until {@code hold} opens; returns once it is busy. */
  private CompletableFuture<Object> occupyWriter(CountDownLatch hold) throws InterruptedException {
    CountDownLatch holding = new CountDownLatch(1);
    CompletableFuture<Object> blocker = mapdb().mutate(ns -> {
      holding.countDown();
      try {
        hold.await(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return null;
    });
    assertTrue(holding.await(10, TimeUnit.SECONDS));
    return blocker;
  }

  /**
   * From a network event loop, with the writer idle, a mutation is applied and committed right
   * there and is done when submit returns; while the writer applies a group, it queues and
   * completes on its event loop later. Two event loops at once lose nothing. (Commits that only
   * reach the operating system: the server's default sync interval.)
   */
  @Test
  void groupCommit_onAnIdleWriter_appliesOnTheEventLoop() throws Exception {
    reopen(java.time.Duration.ofSeconds(1));
    DefaultEventLoop a = new DefaultEventLoop();
    DefaultEventLoop b = new DefaultEventLoop();
    try {
      long inlinedBefore = mapdb().inlined();
      CompletableFuture<Attr> first = a.submit(() -> {
        CompletableFuture<Attr> f = store.create(ROOT, "inline", obj(FileType.REGULAR, 0644), tick());
        assertTrue(f.isDone(), "applied before submit returned");
        return f;
      }).get(10, TimeUnit.SECONDS);
      assertEquals(join(first).handle(), store.lookup(ROOT, "inline").handle());
      assertEquals(inlinedBefore + 1, mapdb().inlined());

      CountDownLatch hold = new CountDownLatch(1);
      CompletableFuture<Object> blocker = occupyWriter(hold);
      AtomicReference<String> completedOn = new AtomicReference<>();
      CompletableFuture<Attr> queued = a.submit(() -> {
        CompletableFuture<Attr> f = store.create(ROOT, "queued", obj(FileType.REGULAR, 0644), tick());
        assertFalse(f.isDone(), "the writer is busy: queued");
        return f.whenComplete((v, e) -> completedOn.set(Thread.currentThread().getName()));
      }).get(10, TimeUnit.SECONDS);
      hold.countDown();
      join(blocker);
      join(queued);
      assertTrue(a.submit(() -> completedOn.get()).get(10, TimeUnit.SECONDS) != null);
      assertEquals(a.submit(() -> Thread.currentThread().getName()).get(10, TimeUnit.SECONDS), completedOn.get(),
          "completed on its event loop");

      int n = 500;
      List<CompletableFuture<CompletableFuture<Attr>>> submitted = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        String name = "x" + i;
        DefaultEventLoop loop = i % 2 == 0 ? a : b;
        CompletableFuture<CompletableFuture<Attr>> s = new CompletableFuture<>();
        loop.execute(() -> s.complete(store.create(ROOT, name, obj(FileType.REGULAR, 0644), tick())));
        submitted.add(s);
      }
      Set<Handle> handles = new HashSet<>();
      for (CompletableFuture<CompletableFuture<Attr>> s : submitted) {
        assertTrue(handles.add(join(s.get(10, TimeUnit.SECONDS)).handle()));
      }
      assertTrue(mapdb().inlined() > inlinedBefore + 1, "idle moments were used inline");
      reopen();
      for (int i = 0; i < n; i++) {
        assertTrue(handles.contains(store.lookup(ROOT, "x" + i).handle()), "committed: x" + i);
      }
    } finally {
      a.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      b.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }
  }

  /**
   * A mutation that breaks half way (a bug) sits in one group with good ones: it fails with EIO
   * and leaves nothing behind; the others succeed.
   */
  /** A store that forces every commit to disk never commits on an event loop: the writer does, and the answer still completes there. */
  @Test
  void groupCommit_thatWaitsForTheDisk_neverRunsOnTheEventLoop() throws Exception {
    DefaultEventLoop a = new DefaultEventLoop();
    try {
      long inlinedBefore = mapdb().inlined();
      AtomicReference<String> completedOn = new AtomicReference<>();
      CompletableFuture<Attr> f = a.submit(() -> store.create(ROOT, "forced", obj(FileType.REGULAR, 0644), tick())
          .whenComplete((v, e) -> completedOn.set(Thread.currentThread().getName()))).get(10, TimeUnit.SECONDS);
      Handle h = join(f).handle();
      assertEquals(inlinedBefore, mapdb().inlined(), "committed by the writer, not inline");
      assertEquals(a.submit(() -> Thread.currentThread().getName()).get(10, TimeUnit.SECONDS), completedOn.get(),
          "completed on its event loop");
      reopen();
      assertEquals(h, store.lookup(ROOT, "forced").handle());
    } finally {
      a.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }
  }

  @Test
  void groupCommit_brokenMutationRollsBackAlone() throws Exception {
    CountDownLatch hold = new CountDownLatch(1);
    CompletableFuture<Object> blocker = occupyWriter(hold); // the next mutations queue up into one group
    CompletableFuture<Attr> before = store.create(ROOT, "before", obj(FileType.REGULAR, 0644), tick());
    long now = tick();
    CompletableFuture<Attr> broken = mapdb().mutate(ns -> {
      ns.create(ROOT, "half", obj(FileType.DIRECTORY, 0755), now);
      throw new IllegalStateException("bug after a change");
    });
    CompletableFuture<Attr> exists = store.create(ROOT, "before", obj(FileType.REGULAR, 0644), tick());
    CompletableFuture<Attr> after = store.create(ROOT, "after", obj(FileType.DIRECTORY, 0755), tick());
    hold.countDown();
    join(blocker);
    Attr b = join(before);
    Attr a = join(after);
    assertEquals(Errno.EIO, errno(broken));
    assertEquals(Errno.EEXIST, errno(exists));
    assertEquals(List.of("after", "before"), names(ROOT));
    assertEquals(new Counts(3, 2), store.counts());
    assertEquals(3, attr(ROOT).nlink());
    assertEquals(b, store.lookup(ROOT, "before"));
    reopen();
    assertEquals(List.of("after", "before"), names(ROOT));
    assertEquals(a.handle(), store.lookup(ROOT, "after").handle());
    assertEquals(3, attr(ROOT).nlink());
  }

  @Test
  void close_finishesQueuedMutations() {
    List<CompletableFuture<Attr>> fs = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      fs.add(store.create(ROOT, "q" + i, obj(FileType.REGULAR, 0644), tick()));
    }
    Path d = mapdb().file().getParent();
    store.close();
    fs.forEach(f -> assertTrue(f.isDone()));
    fs.forEach(MetadataStoreContract::join);
    store = new MapDbMetadataStore(d, 64);
    assertEquals(500, names(ROOT).size());
  }

  @Test
  void close_fromContinuation_doesNotWaitOnItself() {
    CompletableFuture<Void> closed = store.create(ROOT, "last", obj(FileType.REGULAR, 0644), tick())
        .thenRun(store::close);
    join(closed);
    assertEquals(Errno.EIO, errnoOf(() -> store.getattr(ROOT)));
  }

  @Test
  void commitBatchOfOne_commitsEveryMutation() {
    Path d = mapdb().file().getParent();
    store.close();
    store = new MapDbMetadataStore(d, 1);
    List<CompletableFuture<Attr>> fs = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      fs.add(store.create(ROOT, "one" + i, obj(FileType.REGULAR, 0644), tick()));
    }
    fs.forEach(MetadataStoreContract::join);
    assertEquals(20, mapdb().commits());
    assertEquals(20, mapdb().mutations());
  }

  @Test
  void open_garbageFile_EIO() throws Exception {
    Path d = Files.createTempDirectory(dir, "garbage");
    byte[] junk = new byte[64 * 1024];
    new java.util.Random(7).nextBytes(junk);
    Files.write(d.resolve(MapDbMetadataStore.FILE_NAME), junk);
    FsException e = assertThrows(FsException.class, () -> new MapDbMetadataStore(d, 8).close());
    assertEquals(Errno.EIO, e.errno());
    assertTrue(e.getMessage().contains(MapDbMetadataStore.FILE_NAME), e.getMessage());
  }

  @Test
  void open_twice_refused() {
    Path d = mapdb().file().getParent();
    assertThrows(FsException.class, () -> new MapDbMetadataStore(d, 8).close());
    assertFalse(names(ROOT).contains("x"));
  }

  @Test
  void removalQueue_survivesAReopen() {
    Attr f = join(store.create(ROOT, "f", new NewObject(FileType.REGULAR, 0644, 1, 1, 0, LAYOUT, null), tick()));
    join(store.remove(ROOT, "f", false, tick()));
    reopen();
    assertEquals(List.of(new MetadataStore.Doomed(f.handle(), LAYOUT.datafiles())), store.doomed(10));
  }

  @Test
  void heads_surviveAReopen() {
    Layout big = new Layout(LAYOUT.dist(), LAYOUT.datafiles(), Layout.MAX_HEAD);
    Attr f = join(store.create(ROOT, "f", new NewObject(FileType.REGULAR, 0644, 1, 1, 0, big, null), tick()));
    Attr g = mkheaded(ROOT, "g");
    byte[] whole = bytes((int) Layout.MAX_HEAD, 3);
    join(store.headWrite(f.handle(), 0, whole));
    join(store.headWrite(g.handle(), 7, bytes(9, 0)));
    join(store.headWrite(f.handle(), 100, bytes(5, 77))); // a second version of a MiB value
    System.arraycopy(bytes(5, 77), 0, whole, 100, 5);

    reopen();

    assertEquals(big, attr(f.handle()).layout());
    assertEquals(HEAD_LAYOUT, attr(g.handle()).layout());
    assertArrayEquals(whole, store.headRead(f.handle(), 0, Integer.MAX_VALUE));
    assertArrayEquals(concat(new byte[7], bytes(9, 0)), store.headRead(g.handle(), 0, 4096));
    join(store.setattr(g.handle(), new MetadataStore.SetAttr(org.flowfs.common.wire.MetaOp.SetattrReq.SIZE, 0, 0, 0, 8, 0, 0), tick()));
    join(store.remove(ROOT, "f", false, tick()));
    reopen();
    assertArrayEquals(concat(new byte[7], bytes(1, 0)), store.headRead(g.handle(), 0, 4096));
    assertEquals(0, join(store.fsck(false, tick())).found());
  }

  @Test
  void heads_keepTheirValuesOutsideTheTreeNodes() throws Exception {
    Path d = Files.createTempDirectory(dir, "raw");
    for (int open = 0; open < 2; open++) { // as created, then as opened
      DB db = RedoVolumes.open(d.resolve(MapDbMetadataStore.FILE_NAME));
      try {
        assertFalse(((BTreeMap<?, ?>) new MapDbTables(db).heads()).getValueInline());
        db.commit();
      } finally {
        db.close();
      }
    }
  }

  /** A store as versions before heads left it: format 1, without the heads table. */
  @Test
  void open_storeFromBeforeHeads_getsAnEmptyHeadsTable() throws Exception {
    Path d = Files.createTempDirectory(dir, "old");
    DB db = RedoVolumes.open(d.resolve(MapDbMetadataStore.FILE_NAME));
    try {
      db.atomicLong("format", 1).create();
      db.treeMap("objects", Serializer.LONG, Serializer.BYTE_ARRAY).create();
      db.treeMap("entries", Serializer.BYTE_ARRAY, Serializer.BYTE_ARRAY).create();
      db.treeMap("xattrs", Serializer.BYTE_ARRAY, Serializer.BYTE_ARRAY).create();
      db.treeMap("doomed", Serializer.LONG, Serializer.BYTE_ARRAY).create();
      db.commit();
      assertFalse(db.exists("heads"));
    } finally {
      db.close();
    }
    store.close();
    store = new MapDbMetadataStore(d, 8);
    Attr f = mkheaded(ROOT, "f");
    join(store.headWrite(f.handle(), 0, bytes(3, 0)));
    reopen();
    assertArrayEquals(bytes(3, 0), store.headRead(f.handle(), 0, 10));
  }
}
