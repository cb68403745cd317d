package org.flowfs.meta;

import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.flowfs.common.Attr;
import org.flowfs.common.Counters;
import org.flowfs.common.DirLock;
import org.flowfs.common.FileType;
import org.flowfs.common.Handle;
import org.flowfs.common.NamedThreads;
import org.flowfs.common.StorageSpace;
import org.flowfs.common.Version;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.dist.DirStripe;
import org.flowfs.common.rpc.Access;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.rpc.OpTable;
import org.flowfs.common.rpc.Peers;
import org.flowfs.common.rpc.RpcServer;
import org.flowfs.common.wire.CommonOp.OkResp;
import org.flowfs.common.wire.CommonOp.PingReq;
import org.flowfs.common.wire.CommonOp.PingResp;
import org.flowfs.common.wire.CommonOp.StatsReq;
import org.flowfs.common.wire.CommonOp.StatsResp;
import org.flowfs.common.wire.MessageRegistry;
import org.flowfs.common.wire.MetaOp.CreateReq;
import org.flowfs.common.wire.MetaOp.Dirent;
import org.flowfs.common.wire.MetaOp.EntryResp;
import org.flowfs.common.wire.MetaOp.FsckDatafilesReq;
import org.flowfs.common.wire.MetaOp.FsckDatafilesResp;
import org.flowfs.common.wire.MetaOp.FsckNamespaceReq;
import org.flowfs.common.wire.MetaOp.FsckNamespaceResp;
import org.flowfs.common.wire.MetaOp.FsckReservedReq;
import org.flowfs.common.wire.MetaOp.GetattrReq;
import org.flowfs.common.wire.MetaOp.GetxattrReq;
import org.flowfs.common.wire.HasPayload;
import org.flowfs.common.wire.MetaOp.HeadFlushReq;
import org.flowfs.common.wire.MetaOp.HeadReadReq;
import org.flowfs.common.wire.MetaOp.HeadReadResp;
import org.flowfs.common.wire.MetaOp.OpenReq;
import org.flowfs.common.wire.MetaOp.OpenResp;
import org.flowfs.common.wire.MetaOp.HeadWriteReq;
import org.flowfs.common.wire.MetaOp.LinkReq;
import org.flowfs.common.wire.MetaOp.ListxattrReq;
import org.flowfs.common.wire.MetaOp.LookupReq;
import org.flowfs.common.wire.MetaOp.MetaStatfsReq;
import org.flowfs.common.wire.MetaOp.MetaStatfsResp;
import org.flowfs.common.wire.MetaOp.ReaddirReq;
import org.flowfs.common.wire.MetaOp.ReaddirResp;
import org.flowfs.common.wire.MetaOp.ReadlinkReq;
import org.flowfs.common.wire.MetaOp.ReadlinkResp;
import org.flowfs.common.wire.MetaOp.RemoveReq;
import org.flowfs.common.wire.MetaOp.RemoveResp;
import org.flowfs.common.wire.MetaOp.RemovexattrReq;
import org.flowfs.common.wire.MetaOp.RenameReq;
import org.flowfs.common.wire.MetaOp.RenameResp;
import org.flowfs.common.wire.MetaOp.SetattrReq;
import org.flowfs.common.wire.MetaOp.SetxattrReq;
import org.flowfs.common.wire.MetaOp.FlockReq;
import org.flowfs.common.wire.MetaOp.LockRenewReq;
import org.flowfs.common.wire.MetaOp.RecordLockReq;
import org.flowfs.common.wire.MetaOp.LockRenewResp;
import org.flowfs.common.wire.MetaOp.SymlinkReq;
import org.flowfs.common.wire.MetaOp.XattrNamesResp;
import org.flowfs.common.wire.MetaOp.XattrResp;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The metadata server: serves the namespace from a {@link MetadataStore}, lays out new files over
 * the I/O servers from precreated handle pools ({@link FileLayouts}), and removes the datafiles of
 * deleted files. It grants clients leases on directories, under which they create files locally
 * and send them in batches ({@link DirLeaseOps}); meanwhile every other request touching a leased
 * directory waits ({@link LeaseGate}). Reads run on the {@code meta-read} pool; mutations are
 * queued to the store's single writer and answered after their group commit.
 */
public final class MetaServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(MetaServer.class);

  private final FlowFsConfig config;
  private final DirLock lock;
  private final MetadataStore store;
  private final Peers peers;
  private final DatafilePools pools;
  private final DatafileReaper reaper;
  private final ExecutorService readers;
  private final Counters counters = new Counters();
  private final FileLayouts layouts;
  private final ScheduledExecutorService leaseTimer;
  private final DirLeases leases;
  private final DirLeaseOps leaseOps;
  private final LockTable locks;
  private final RpcServer rpc;

  private MetaServer(FlowFsConfig config, NetRuntime net, DirLock lock, MetadataStore store, Duration leaseTerm,
      Duration grace) {
    this.config = config;
    this.lock = lock;
    this.store = store;
    this.peers = new Peers(config, net);
    this.pools = new DatafilePools(peers, config.meta().precreateBatch(), config.meta().precreateLowWater());
    this.reaper = new DatafileReaper(peers, store);
    this.readers = NamedThreads.pool("meta-read", config.meta().threads());
    this.layouts = new FileLayouts(config, pools, store);
    this.leaseTimer = Executors.newSingleThreadScheduledExecutor(new NamedThreads("meta-leases"));
    this.leaseOps = new DirLeaseOps(store, layouts, reaper, counters, leaseTerm, grace,
        (delayNs, task) -> leaseTimer.schedule(task, delayNs, TimeUnit.NANOSECONDS), readers);
    this.leases = leaseOps.leases();
    this.locks = new LockTable(config.meta().lockTerm().toNanos(), config.meta().requireDir().resolve(LockTable.MARKER),
        counters, System.nanoTime());
    if (locks.inGrace(System.nanoTime())) {
      LOG.info("locks were held when the metadata server stopped: for {} only their holders' claims are granted",
          config.meta().lockTerm());
    }
    long tick = Math.max(locks.termNanos() / 4, TimeUnit.MILLISECONDS.toNanos(100));
    leaseTimer.scheduleWithFixedDelay(() -> locks.expire(System.nanoTime()), tick, tick, TimeUnit.NANOSECONDS);
    this.rpc = new RpcServer("metaserver", net, config.meta().address(), ops(), config.rpc(), MessageRegistry.DEFAULT, counters);
  }

  /** Opens the MapDB store in {@code meta.dir}; {@link #start()} then listens. */
  public static MetaServer open(FlowFsConfig config, NetRuntime net) throws IOException {
    return open(config, net, config.meta().dirLeaseTerm(), config.meta().dirLeaseGrace());
  }

  /**
   * As {@link #open(FlowFsConfig, NetRuntime)}, directory leases lasting {@code leaseTerm} without
   * a batch, and the unused reservations of an expired one kept for {@code grace}.
   */
  static MetaServer open(FlowFsConfig config, NetRuntime net, Duration leaseTerm, Duration grace) throws IOException {
    DirLock lock = DirLock.acquire(config.meta().requireDir(), "metadata server");
    try {
      MetadataStore store = new MapDbMetadataStore(config.meta());
      return new MetaServer(config, net, lock, store, leaseTerm, grace);
    } catch (RuntimeException e) {
      lock.close();
      throw e;
    }
  }

  public InetSocketAddress start() throws IOException {
    InetSocketAddress a = rpc.start();
    pools.prime();
    reaper.start(); // removes what a previous run left queued
    MetadataStore.Counts c = store.counts();
    LOG.info("metaserver started: {} store {} ({} objects), {} ioservers, listening on {}", Version.describe(),
        config.meta().dir(), c.objects(), config.ioServers().size(), a);
    return a;
  }

  public Counters counters() {
    return counters;
  }

  public MetadataStore store() {
    return store;
  }

  static long now() {
    Instant i = Instant.now();
    return i.getEpochSecond() * 1_000_000_000L + i.getNano();
  }

  /**
   * Head bytes an open may ask for and be answered on the event loop. Clients ask for a small
   * file's content (at most their eager read size, 64 KiB by default) with its open; handing such
   * an open to the reader pool and back cost two thread wake-ups, a third of the call: a cold read
   * of 10,000 files of 4 KiB through the mount, one open each, 5,348 files/s (wait per open 69 us).
   */
  static final int OPEN_ON_LOOP = 64 * 1024;

  /** Entries of a listing read on the event loop; the rest of a larger page is read on the reader pool. */
  static final int READDIR_ON_LOOP = 64;

  /**
   * A page of a directory: its first {@link #READDIR_ON_LOOP} entries on the event loop, like a
   * lookup (most directories have no more, and a hand-over would cost more than the listing); the
   * rest of a larger page on the reader pool, from where the first part ended, so a big directory
   * never holds the event loop for long.
   */
  private CompletableFuture<ReaddirResp> readdir(ReaddirReq q) {
    MetadataStore.DirPage head = store.readdir(q.dir(), q.cursor(), Math.min(q.max(), READDIR_ON_LOOP), q.plus());
    if (head.eof() || q.max() <= READDIR_ON_LOOP) {
      return CompletableFuture.completedFuture(new ReaddirResp(head.entries(), head.eof()));
    }
    String after = head.entries().get(head.entries().size() - 1).name();
    return CompletableFuture.supplyAsync(() -> {
      MetadataStore.DirPage rest = store.readdir(q.dir(), after, q.max() - head.entries().size(), q.plus());
      List<Dirent> all = new ArrayList<>(head.entries().size() + rest.entries().size());
      all.addAll(head.entries());
      all.addAll(rest.entries());
      return new ReaddirResp(all, rest.eof());
    }, readers);
  }

  private OpTable ops() {
    OpTable t = new OpTable();
    t.async(PingReq.class, Access.READ_ONLY, (q, ctx) ->
        CompletableFuture.completedFuture(new PingResp("metaserver", 0, Version.RELEASE, q.sentNanos())));
    t.async(StatsReq.class, Access.READ_ONLY, (q, ctx) ->
        CompletableFuture.completedFuture(new StatsResp("metaserver", 0, counters.snapshot())));
    // lookups, getattrs and the other reads of one record answer on the event loop: a hand-over to
    // the reader pool and back cost more CPU than the read itself (a B-tree lookup in memory)
    t.async(LookupReq.class, Access.READ_ONLY, (q, ctx) ->
        CompletableFuture.completedFuture(new EntryResp(store.lookup(q.parent(), q.name()))));
    t.async(GetattrReq.class, Access.READ_ONLY, (q, ctx) ->
        CompletableFuture.completedFuture(new EntryResp(store.getattr(q.handle()))));
    t.async(ReadlinkReq.class, Access.READ_ONLY, (q, ctx) ->
        CompletableFuture.completedFuture(new ReadlinkResp(store.readlink(q.handle()))));
    t.async(ReaddirReq.class, Access.READ_ONLY, (q, ctx) -> readdir(q));
    t.async(GetxattrReq.class, Access.READ_ONLY, (q, ctx) ->
        CompletableFuture.completedFuture(new XattrResp(store.getxattr(q.handle(), q.name()))));
    t.async(ListxattrReq.class, Access.READ_ONLY, (q, ctx) ->
        CompletableFuture.completedFuture(new XattrNamesResp(store.listxattr(q.handle()))));
    t.blocking(MetaStatfsReq.class, Access.READ_ONLY, readers, (q, ctx) -> {
      MetadataStore.Counts c = store.counts();
      StorageSpace disk = StorageSpace.of(config.meta().requireDir());
      return new MetaStatfsResp(c.objects(), c.directories(), config.ioServers().size(),
          disk.total(), disk.free(), disk.available(), disk.device());
    });
    t.blocking(org.flowfs.common.wire.MetaOp.MetaSyncReq.class, Access.MODIFY, readers, (q, ctx) -> {
      store.sync();
      return OkResp.INSTANCE;
    });
    t.async(CreateReq.class, Access.MODIFY, (q, ctx) -> create(q).thenApply(MetaServer::entryResp));
    t.async(SymlinkReq.class, Access.MODIFY, (q, ctx) ->
        store.createEntry(q.parent(), q.name(), new MetadataStore.NewObject(FileType.SYMLINK, 0777, q.uid(), q.gid(), 0, null, q.target(), q.verifier()), now())
            .thenApply(MetaServer::entryResp));
    t.async(LinkReq.class, Access.MODIFY, (q, ctx) ->
        store.linkEntry(q.target(), q.parent(), q.name(), q.verifier(), now()).thenApply(MetaServer::entryResp));
    t.async(RemoveReq.class, Access.MODIFY, (q, ctx) -> store.remove(q.parent(), q.name(), q.directory(), now()).thenApply(r -> {
      if (r.gone() && r.attr().layout() != null) {
        reaper.reap(r.attr().handle(), r.attr().layout().datafiles());
      }
      return new RemoveResp(r.attr().handle(), r.gone(), r.attr().ctimeNs(), r.parentWasNs()); // stamped like the parent
    }));
    t.async(RenameReq.class, Access.MODIFY, (q, ctx) ->
        store.rename(q.srcParent(), q.srcName(), q.dstParent(), q.dstName(), q.flags(), q.verifier(), now()).thenApply(r -> {
          if (r.replacedGone() && r.replaced().layout() != null) {
            reaper.reap(r.replaced().handle(), r.replaced().layout().datafiles());
          }
          return new RenameResp(r.moved().handle(), r.replaced() == null ? null : r.replaced().handle());
        }));
    t.async(SetattrReq.class, Access.MODIFY, (q, ctx) -> store.setattr(q.handle(), change(q), now())
        .thenApply(EntryResp::new));
    t.async(SetxattrReq.class, Access.MODIFY, (q, ctx) ->
        store.setxattr(q.handle(), q.name(), q.value(), q.flags(), now()).thenApply(v -> OkResp.INSTANCE));
    t.async(RemovexattrReq.class, Access.MODIFY, (q, ctx) ->
        store.removexattr(q.handle(), q.name(), now()).thenApply(v -> OkResp.INSTANCE));
    t.async(HeadWriteReq.class, Access.MODIFY, (q, ctx) ->
        store.headWrite(q.handle(), q.offset(), takeBytes(q)).thenApply(v -> OkResp.INSTANCE));
    t.async(HeadFlushReq.class, Access.MODIFY, (q, ctx) ->
        store.headFlush(q.record().handle(), q.offset(), takeBytes(q), change(q.record()), now()).thenApply(EntryResp::new));
    // a head may be a MiB that is not in the MapDB file's cached pages: read it off the event loop
    t.blocking(HeadReadReq.class, Access.READ_ONLY, readers, (q, ctx) ->
        new HeadReadResp(Unpooled.wrappedBuffer(store.headRead(q.handle(), q.offset(), q.length()))));
    // an open that asks for at most OPEN_ON_LOOP head bytes (a small file's whole content, as
    // clients ask) answers on the event loop, as a getattr: a record and a value of a few KiB; one
    // that asks for more may read a MiB off the disk, on the reader pool as a head read
    t.async(OpenReq.class, Access.READ_ONLY, (q, ctx) -> q.headLength() <= OPEN_ON_LOOP
        ? CompletableFuture.completedFuture(openResp(store.open(q.handle(), q.headLength())))
        : CompletableFuture.supplyAsync(() -> openResp(store.open(q.handle(), q.headLength())), readers));
    // flock and record locks: the metadata server's memory, on the event loop
    t.async(FlockReq.class, Access.MODIFY, (q, ctx) -> {
      locks.lock(q, System.nanoTime());
      return CompletableFuture.completedFuture(new LockRenewResp(true, locks.termNanos()));
    });
    t.async(RecordLockReq.class, Access.MODIFY, (q, ctx) -> CompletableFuture.completedFuture(locks.lock(q, System.nanoTime())));
    t.async(LockRenewReq.class, Access.MODIFY, (q, ctx) -> CompletableFuture.completedFuture(
        new LockRenewResp(locks.renew(q.client(), System.nanoTime()), locks.termNanos())));
    fsckOps(t);
    return leaseOps.guard(t);
  }

  private static OpenResp openResp(MetadataStore.Opened o) {
    return new OpenResp(o.attr(), Unpooled.wrappedBuffer(o.head()));
  }

  /** Objects read per step of an {@link FsckDatafilesReq}. */
  private static final int FSCK_PAGE = 256;

  /** The operations {@code flowfs fsck} asks for: read-only but for a namespace repair. */
  private void fsckOps(OpTable t) {
    t.async(FsckNamespaceReq.class, Access.MODIFY, (q, ctx) -> (q.repair()
        ? store.fsck(true, now())
        : CompletableFuture.supplyAsync(() -> store.fsck(false, now()).join(), readers))
        .thenApply(r -> {
          if (r.found() > 0) {
            LOG.warn("fsck {} {} problems in the namespace", q.repair() ? "repaired" : "found", r.found());
          }
          return new FsckNamespaceResp(r.objects(), r.entries(), r.found(), q.repair() && r.found() > 0, r.problems());
        }));
    t.blocking(FsckDatafilesReq.class, Access.READ_ONLY, readers, (q, ctx) -> {
      List<Handle> out = new ArrayList<>();
      long cursor = q.cursor();
      while (true) {
        List<Attr> page = store.objectsAfter(cursor, FSCK_PAGE);
        for (Attr a : page) {
          if (out.size() >= q.max()) {
            return new FsckDatafilesResp(out, cursor, false);
          }
          if (a.layout() != null) {
            out.addAll(a.layout().datafiles());
          }
          cursor = a.handle().id();
        }
        if (page.size() < FSCK_PAGE) {
          return new FsckDatafilesResp(out, cursor, true);
        }
      }
    });
    // reserved: handles in the precreate pools, in live leases and left by expired ones, and datafiles queued for
    // removal (not orphans)
    t.blocking(FsckReservedReq.class, Access.READ_ONLY, readers, (q, ctx) -> {
      List<Handle> reserved = new ArrayList<>(pools.pooled());
      reserved.addAll(leaseOps.reservedDatafiles());
      for (MetadataStore.Doomed d : store.doomed(Integer.MAX_VALUE)) {
        reserved.addAll(d.datafiles());
      }
      return new FsckDatafilesResp(reserved, 0, true);
    });
  }

  static MetadataStore.SetAttr change(SetattrReq q) {
    return new MetadataStore.SetAttr(q.mask(), q.mode(), q.uid(), q.gid(), q.size(), q.atimeNs(), q.mtimeNs());
  }

  /** A copy of a request's bytes; releases its payload, the reference the handler owns. */
  static byte[] takeBytes(HasPayload q) {
    try {
      return ByteBufUtil.getBytes(q.payload());
    } finally {
      q.release();
    }
  }

  private static EntryResp entryResp(MetadataStore.NewEntry e) {
    return new EntryResp(e.attr(), e.parentWasNs());
  }

  /**
   * Creates an object; a regular file gets its datafiles from the pools first (given back when
   * the create fails, or was made before: the same request sent again).
   */
  private CompletableFuture<MetadataStore.NewEntry> create(CreateReq q) {
    if (q.type() != FileType.REGULAR) {
      return store.createEntry(q.parent(), q.name(),
          new MetadataStore.NewObject(q.type(), q.mode(), q.uid(), q.gid(), q.rdev(), null, null, q.verifier(), q.umask()),
          now());
    }
    // the directory's default layout (flowfs setstripe): one B-tree read in memory, on the
    // event loop like a lookup, rather than a hand-over to the reader pool and back
    DirStripe stripe = q.dist() == null && q.servers() == 0 ? layouts.dirStripe(q.parent()) : null;
    FileLayouts.Placement p = layouts.place(q.dist(), q.servers(), stripe);
    return layouts.take(List.of(p)).thenCompose(ls -> store.createEntry(q.parent(), q.name(),
            new MetadataStore.NewObject(FileType.REGULAR, q.mode(), q.uid(), q.gid(), 0, ls.get(0), null, q.verifier(),
                q.umask()), now())
        .whenComplete((e, err) -> {
          if (err != null || !ls.get(0).equals(e.attr().layout())) {
            layouts.giveBack(ls.get(0));
          }
        }));
  }

  @Override
  public void close() {
    rpc.close();
    leases.close(); // requests waiting for a lease run (and release what they hold)
    leaseTimer.shutdownNow();
    reaper.close();
    NamedThreads.shutdown(readers, 5000);
    store.close();
    peers.close();
    lock.close();
    LOG.info("metaserver stopped");
  }
}
