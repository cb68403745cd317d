package org.flowfs.meta;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import org.flowfs.common.Attr;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.PosixAcl;
import org.flowfs.common.dist.DirStripe;
import org.flowfs.common.rpc.Access;
import org.flowfs.common.rpc.OpTable;
import org.flowfs.common.wire.MetaOp;
import org.flowfs.common.wire.MetaOp.BatchCreate;
import org.flowfs.common.wire.MetaOp.BatchRemove;
import org.flowfs.common.wire.MetaOp.BatchResult;
import org.flowfs.common.wire.MetaOp.CreateBatchReq;
import org.flowfs.common.wire.MetaOp.CreateBatchResp;
import org.flowfs.common.wire.MetaOp.DirLeaseReq;
import org.flowfs.common.wire.MetaOp.DirLeaseResp;
import org.flowfs.common.wire.MetaOp.EntryResp;
import org.flowfs.common.wire.MetaOp.ReclaimReq;
import org.flowfs.common.wire.MetaOp.RemoveResult;
import org.flowfs.common.wire.MetaOp.Reserved;
import org.flowfs.common.wire.MetaOp.SetattrReq;
import org.flowfs.meta.DirLeases.Lease;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The metadata server's side of directory leases: grants them ({@link DirLeaseReq}) with files
 * reserved ahead, applies their batches of creates ({@link CreateBatchReq}) and takes back what
 * an expired lease left. Which requests wait for a lease is {@link LeaseGate}'s business.
 *
 * <p>A reservation is a metadata handle from {@link MetadataStore#reserveHandles} (whose
 * mutation also reads the directory's ctime) and the layout a {@code CreateReq} in that
 * directory would get ({@link FileLayouts}). Reserved datafiles nobody used go back to the pools
 * when the holder ends its lease; when it expires, or a create of one fails, they are removed
 * ({@link DatafileReaper}), because a holder may have written bytes into them already.
 *
 * <p>A batch may carry the changes its holder made to the leased directory's own mode, owner and
 * times ({@link CreateBatchReq#dirRecord()}), applied after its creates.
 *
 * <p>A batch may ask for a lease on a directory it makes ({@link BatchCreate#leaseFiles()}): the
 * holder about to create in it saves the round trip of a {@link DirLeaseReq} after the batch.
 *
 * <p>A holder whose batch was lost (this server restarted, or the connection dropped before the
 * answer) makes its files again one by one under their reserved handles ({@link ReclaimReq}), so
 * what it wrote into their datafiles stays theirs: an expired lease's unused reservations wait
 * a grace ({@code meta.dir-lease-grace}) for that before their datafiles are removed.
 *
 * <p>Counts {@code lease.reclaimed}, {@code lease.granted}, {@code lease.granted-in-batch}, {@code lease.refused}, {@code
 * batch.creates}, {@code batch.dir-records} and {@code batch.failed}. Thread safe; handlers run on the event loop and never block.
 */
final class DirLeaseOps {
  private static final Logger LOG = LoggerFactory.getLogger(DirLeaseOps.class);
  private static final DirLeaseResp REFUSED = new DirLeaseResp(0, 0, 0, List.of());

  private final MetadataStore store;
  private final FileLayouts layouts;
  private final DatafileReaper reaper;
  private final DirLeases leases;
  private final LeaseGate gate;
  private final Counters counters;
  private final DirLeases.Scheduler scheduler;
  private final long graceNs;
  /** Where a grant lists a directory's names (not the event loop). */
  private final Executor readers;
  /**
   * The unused reservations of expired leases, claimable by {@link ReclaimReq} for {@link
   * #graceNs}: a holder whose batch was lost makes its files again under their reserved handles.
   */
  private final Map<Handle, Layout> orphans = new ConcurrentHashMap<>();
  /** The lowest metadata handle reserved since the server started: a handle below it was reserved before. */
  private final AtomicLong firstReservedHere = new AtomicLong(Long.MAX_VALUE);


  /**
   * Leases lasting {@code term} without a batch, checked for expiry by {@code scheduler}; an
   * expired one's unused reservations kept for {@code grace}.
   */
  DirLeaseOps(MetadataStore store, FileLayouts layouts, DatafileReaper reaper, Counters counters,
      java.time.Duration term, java.time.Duration grace, DirLeases.Scheduler scheduler, Executor readers) {
    this.graceNs = grace.toNanos();
    this.readers = readers;
    this.store = store;
    this.layouts = layouts;
    this.reaper = reaper;
    this.counters = counters;
    this.scheduler = scheduler;
    this.leases = new DirLeases(term, System::nanoTime, scheduler, this::expired, counters);
    this.gate = new LeaseGate(leases, store);
  }

  /** The leases these operations grant (for the gate, fsck and the server's close). */
  DirLeases leases() {
    return leases;
  }

  /**
   * The operations of {@code ops} behind the gate of these leases ({@link LeaseGate}), and the
   * lease operations, which never wait for a lease themselves.
   */
  OpTable guard(OpTable ops) {
    ops.async(ReclaimReq.class, Access.MODIFY, (q, ctx) -> reclaim(q)); // waits for a lease, as a create
    OpTable t = gate.guard(ops);
    t.async(DirLeaseReq.class, Access.MODIFY, (q, ctx) -> grant(q, ctx.channel().eventLoop()));
    t.async(CreateBatchReq.class, Access.MODIFY, (q, ctx) -> batch(q));
    return t;
  }

  /**
   * Takes the files an expired lease reserved and did not use: its holder may still make them
   * ({@link ReclaimReq}) for the grace; then their datafiles are removed.
   */
  private void expired(Lease lease, Map<Handle, Layout> unused) {
    LOG.info("{} expired with {} reserved files unused", lease, unused.size());
    orphans.putAll(unused);
    try {
      scheduler.after(graceNs, () -> unused.forEach((h, layout) -> {
        if (orphans.remove(h, layout)) {
          reaper.reap(h, layout.datafiles());
        }
      }));
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // the server stops: reservations are dropped, as a live lease's are
    }
  }

  /** The datafiles of unused reservations: live leases' and those expired leases left (for fsck: not orphans). */
  List<Handle> reservedDatafiles() {
    List<Handle> out = new ArrayList<>(leases.reservedDatafiles());
    orphans.values().forEach(layout -> out.addAll(layout.datafiles()));
    return out;
  }

  /**
   * Makes a file or directory of a lost batch under its reserved handle ({@link ReclaimReq}):
   * the reservation comes from an expired lease's leftovers, or, for a handle reserved before
   * this server started, is the holder's word. A file not made has its datafiles removed unless
   * the store failed (EIO: the holder tries again).
   */
  private CompletableFuture<EntryResp> reclaim(ReclaimReq q) {
    byte[] head = MetaServer.takeBytes(q);
    BatchCreate c = q.create();
    if (head.length != c.headLength() || c.leaseFiles() != 0 || c.directory() == (q.layout() != null)) {
      throw new FsException(Errno.EINVAL, "a reclaim of " + c.handle() + " with " + head.length + " head bytes of "
          + c.headLength() + ", lease files " + c.leaseFiles() + ", layout " + (q.layout() != null));
    }
    Handle h = c.handle();
    Layout kept = orphans.remove(h);
    if (kept == null && h.local() >= firstReservedHere.get()) {
      throw new FsException(Errno.ESTALE, "file " + h + " is not reserved: used, or taken back with its expired lease");
    }
    if (kept == null && !c.directory() && !layouts.plausible(q.layout())) {
      throw new FsException(Errno.EINVAL, "a reclaim of " + h + " with layout " + q.layout() + ", not one of this file system's");
    }
    Layout layout = c.directory() ? null : kept != null ? kept : q.layout();
    if (kept != null && c.directory()) {
      layouts.giveBack(kept); // a directory takes the handle only
    }
    return store.createBatch(q.dir(), List.of(entry(c, layout, head)), MetaServer.now()).handle((made, err) -> {
      MetadataStore.Created r = err == null ? made.get(0) : null;
      if (r != null && r.entry() != null) {
        counters.increment("lease.reclaimed");
        return new EntryResp(r.entry().attr(), r.entry().parentWasNs());
      }
      Errno errno = r != null ? r.errno() : Errno.from(err);
      if (kept != null && layout != null) {
        if (errno == Errno.EIO) {
          orphans.put(h, kept); // for the holder's next try; removed with the rest if none comes
        } else {
          reaper.reap(h, kept.datafiles());
        }
      }
      throw new FsException(errno, "reclaim of " + c.name() + " as " + h + " in " + q.dir());
    });
  }

  /**
   * Grants a lease on the directory unless one lives there, it has the set-group-id bit or a
   * default ACL (lease 0: what the objects made in it take from it is the metadata server's to
   * apply); registers it first, so every request of another that arrives from then on waits
   * for it, then waits for the changes admitted before to be done ({@link LeaseGate#quiet}) and
   * reserves: the ctime answered holds every change of the directory not held back.
   */
  private CompletableFuture<DirLeaseResp> grant(DirLeaseReq q, Executor loop) {
    Attr dir = store.getattr(q.dir());
    if (!dir.isDir()) {
      throw new FsException(Errno.ENOTDIR, q.dir() + " is no directory");
    }
    Lease l = (dir.mode() & Attr.S_ISGID) != 0 || hasDefaultAcl(q.dir()) ? null : leases.grant(q.dir());
    if (l == null) {
      counters.increment("lease.refused");
      return CompletableFuture.completedFuture(REFUSED);
    }
    // the last change may be answered on a store thread: the reservation goes on on the event loop
    CompletableFuture<Void> quiet = gate.quiet(q.dir());
    CompletableFuture<Reservations> reserved = quiet.isDone() ? reserve(q.dir(), q.files())
        : quiet.thenComposeAsync(v -> reserve(q.dir(), q.files()), loop);
    if (!q.names() && q.knownCtimeNs() == 0) {
      return answer(l, reserved);
    }
    // no change of the directory comes between the reservation's ctime and this listing: the
    // lease holds back every change admitted after it, and those before are done
    return answer(l, reserved.thenCompose(r -> q.names() || r.dirCtimeNs() != q.knownCtimeNs()
        ? names(q.dir()).thenApply(r::with)
        : CompletableFuture.completedFuture(r)));
  }

  /** Whether directory {@code dir} has a default ACL. */
  private boolean hasDefaultAcl(Handle dir) {
    try {
      store.getxattr(dir, PosixAcl.DEFAULT);
      return true;
    } catch (FsException e) {
      return false;
    }
  }

  /**
   * Every name in {@code dir}, or null when there are more than {@link MetaOp#MAX_LEASE_NAMES}:
   * a directory of at most {@link MetaServer#READDIR_ON_LOOP} names listed here (on the event
   * loop, as a listing of its size is), a larger one by the reader pool.
   */
  private CompletableFuture<List<String>> names(Handle dir) {
    MetadataStore.DirPage head = store.readdir(dir, null, MetaServer.READDIR_ON_LOOP, false);
    if (head.eof()) {
      return CompletableFuture.completedFuture(namesOf(head));
    }
    return CompletableFuture.supplyAsync(() -> {
      MetadataStore.DirPage page = store.readdir(dir, null, MetaOp.MAX_LEASE_NAMES + 1, false);
      return page.eof() && page.entries().size() <= MetaOp.MAX_LEASE_NAMES ? namesOf(page) : null;
    }, readers);
  }

  private static List<String> namesOf(MetadataStore.DirPage page) {
    List<String> out = new ArrayList<>(page.entries().size());
    page.entries().forEach(e -> out.add(e.name()));
    return out;
  }

  /**
   * The answer to a grant of registered lease {@code l} once its files are {@code reserved}: the
   * lease, or REFUSED when it expired meanwhile; a reservation that failed ends it and fails.
   */
  private CompletableFuture<DirLeaseResp> answer(Lease l, CompletableFuture<Reservations> reserved) {
    return reserved.handle((r, err) -> {
      // a default ACL set before the lease was registered is in now (the reservation came after it)
      boolean refuse = err == null && ((r.listed() && r.names() == null) || hasDefaultAcl(l.dir()));
      if (err == null && !refuse && leases.reserve(l, r.files())) {
        counters.increment(r.listed() ? "lease.granted-listed" : "lease.granted");
        return new DirLeaseResp(l.id(), r.dirCtimeNs(), leases.termNs(), r.files(), r.names());
      }
      leases.end(l); // its waiting requests run
      if (err != null) {
        throw new FsException(Errno.from(err), "cannot reserve files for a lease on " + l.dir() + ": "
            + Errno.unwrap(err).getMessage());
      }
      r.files().forEach(f -> layouts.giveBack(f.layout())); // expired meanwhile, or too many names: nobody saw them
      counters.increment("lease.refused");
      return REFUSED;
    });
  }

  /**
   * A lease on directory {@code dir}, just made by a batch of lease {@code parent}, for the
   * batch's answer ({@link BatchCreate#leaseFiles()}); null when it cannot be had: the parent's
   * lease is recalled (another client waits there and may look in the new directory next), or
   * the reservation failed. Registered at once, before the parent's batch is answered: no other
   * client knows the directory before that (its name is in the leased parent), so no change of
   * theirs can be in flight on it, and none can come before the lease.
   */
  private CompletableFuture<DirLeaseResp> grantMade(Lease parent, Handle dir, int files) {
    Lease l = leases.recalled(parent) ? null : leases.grant(dir);
    if (l == null) {
      return CompletableFuture.completedFuture(null);
    }
    return answer(l, reserve(dir, files)).handle((r, err) -> {
      if (err != null) {
        LOG.info("no lease with the batch on new directory {}: {}", dir, Errno.unwrap(err).getMessage());
        return null;
      }
      if (r.lease() == 0) {
        return null;
      }
      counters.increment("lease.granted-in-batch");
      return r;
    });
  }

  /**
   * Reserved files and the directory's ctime when their handles were handed out; its names then,
   * when {@code listed} (null: too many).
   */
  private record Reservations(List<Reserved> files, long dirCtimeNs, boolean listed, List<String> names) {
    Reservations(List<Reserved> files, long dirCtimeNs) {
      this(files, dirCtimeNs, false, null);
    }

    Reservations with(List<String> names) {
      return new Reservations(files, dirCtimeNs, true, names);
    }
  }

  /**
   * Reserves {@code n} files in {@code dir}: the handles first (the ctime is read in the same
   * mutation), then the datafiles; all or nothing, datafiles taken go back on a failure.
   */
  private CompletableFuture<Reservations> reserve(Handle dir, int n) {
    List<FileLayouts.Placement> placements = new ArrayList<>(n);
    CompletableFuture<MetadataStore.Reservation> handles;
    try {
      DirStripe stripe = layouts.dirStripe(dir);
      for (int i = 0; i < n; i++) {
        placements.add(layouts.place(null, 0, stripe));
      }
      handles = store.reserveHandles(dir, n).whenComplete((h, err) -> {
        if (err == null) {
          firstReservedHere.accumulateAndGet(h.handle(0).local(), Math::min);
        }
      });
    } catch (FsException e) {
      return CompletableFuture.failedFuture(e);
    }
    return layouts.take(placements).thenCompose(ls -> handles
        .whenComplete((h, err) -> {
          if (err != null) {
            ls.forEach(layouts::giveBack);
          }
        })
        .thenApply(h -> {
          List<Reserved> files = new ArrayList<>(n);
          for (int i = 0; i < n; i++) {
            files.add(new Reserved(h.handle(i), ls.get(i)));
          }
          return new Reservations(files, h.dirCtimeNs());
        }));
  }

  /**
   * Applies a batch of the lease it names, in one mutation, then ends the lease ({@code end}) or
   * reserves {@code more} files (unless recalled; a lease holds at most {@link
   * MetaOp#MAX_LEASE_FILES} unused). A lease not known: every entry ESTALE, or the whole request
   * when it carries a record of the directory. Heads that do not add up to the payload, or a
   * record that is not one of the directory's mode, owner and times: EINVAL for the whole
   * request, nothing done.
   */
  private CompletableFuture<CreateBatchResp> batch(CreateBatchReq q) {
    byte[] heads = MetaServer.takeBytes(q);
    List<BatchCreate> creates = q.creates();
    long total = 0;
    for (BatchCreate c : creates) {
      total += c.headLength();
    }
    if (total != heads.length) {
      throw new FsException(Errno.EINVAL, "batch heads of " + total + " bytes, " + heads.length + " sent");
    }
    SetattrReq record = q.dirRecord();
    if (record != null && (!record.handle().equals(q.dir()) || (record.mask() & ~SetattrReq.ATTRIBUTES) != 0)) {
      throw new FsException(Errno.EINVAL, "a batch's record of " + record.handle() + " with bits " + record.mask()
          + " for directory " + q.dir());
    }
    Lease l = leases.enterBatch(q.dir(), q.lease());
    if (l == null && record != null) {
      counters.add("batch.failed", creates.size());
      throw new FsException(Errno.ESTALE, "lease " + q.lease() + " on " + q.dir() + " is not known: nothing created or changed");
    }
    if (l == null) {
      counters.add("batch.failed", creates.size());
      BatchResult stale = new BatchResult(null, 0, Errno.ESTALE.code(), null);
      RemoveResult notRemoved = new RemoveResult(null, false, 0, 0, Errno.ESTALE.code()); // nothing removed
      return CompletableFuture.completedFuture(new CreateBatchResp(Collections.nCopies(creates.size(), stale),
          Collections.nCopies(q.removes().size(), notRemoved), true, List.of()));
    }
    CompletableFuture<List<BatchResult>> applied;
    List<RemoveResult> removed = new ArrayList<>(q.removes().size());
    try {
      applied = apply(l, q.dir(), creates, heads);
      if (!q.removes().isEmpty()) { // after the creates: a name made and unlinked again goes in one batch
        applied = applied.thenCompose(results -> removeAll(q.dir(), q.removes()).thenApply(r -> {
          removed.addAll(r);
          return results;
        }));
      }
      if (record != null) { // after the creates, which move the directory's times
        applied = applied.thenCompose(results -> store.setattr(q.dir(), MetaServer.change(record), MetaServer.now())
            .thenApply(a -> {
              counters.increment("batch.dir-records");
              return results;
            }));
      }
    } catch (RuntimeException e) {
      applied = CompletableFuture.failedFuture(e);
    }
    return applied.handle((results, err) -> {
      leases.batchTaken(l);
      if (q.end()) {
        leases.end(l).values().forEach(layouts::giveBack);
      }
      if (err != null) {
        throw new FsException(Errno.from(err), "batch of " + l + " failed: " + Errno.unwrap(err).getMessage());
      }
      return results;
    }).thenCompose(results -> {
      int room = Math.min(q.more(), MetaOp.MAX_LEASE_FILES - leases.unused(l)); // a lease holds no more
      CompletableFuture<List<Reserved>> more = q.end() || room <= 0 || leases.recalled(l)
          ? CompletableFuture.completedFuture(List.of())
          : more(l, room);
      return more.thenApply(m -> new CreateBatchResp(results, removed, leases.recalled(l), m));
    });
  }

  /**
   * Removes {@code removes} in {@code dir} in one mutation, as a {@link MetaOp.RemoveReq} each; the
   * datafiles of files that lost their last name go to the reaper. A directory's lease, which the
   * holder names, is held from expiring while the mutation runs and ends with the directory; a
   * directory whose lease is not the one named, or one made under the batch's lease that is
   * leased now, is not removed (ESTALE): another client may have made something in it since.
   */
  private CompletableFuture<List<RemoveResult>> removeAll(Handle dir, List<BatchRemove> removes) {
    int n = removes.size();
    List<Lease> dirLeases = new ArrayList<>(Collections.nCopies(n, null));
    List<MetadataStore.Removal> go = new ArrayList<>(n);
    boolean[] refused = new boolean[n];
    for (int i = 0; i < n; i++) {
      BatchRemove r = removes.get(i);
      if (r.made()) {
        refused[i] = leasedNow(dir, r.name()); // (the store removes it only when it is an empty directory)
      } else if (r.directory()) {
        Lease held = dirLease(dir, r);
        dirLeases.set(i, held);
        refused[i] = held == null;
      }
      if (!refused[i]) {
        go.add(new MetadataStore.Removal(r.name(), r.directory()));
      }
    }
    // a directory's last batches may still be on their way (the holder sends its rmdir without
    // waiting for their answers, and they may come on another connection): taken in first
    List<CompletableFuture<Void>> before = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      if (dirLeases.get(i) != null && removes.get(i).dirBatches() > 0) {
        before.add(leases.afterBatches(dirLeases.get(i), removes.get(i).dirBatches()));
      }
    }
    CompletableFuture<Void> ready = CompletableFuture.allOf(before.toArray(CompletableFuture[]::new));
    CompletableFuture<List<MetadataStore.BatchRemoved>> applied = go.isEmpty()
        ? CompletableFuture.completedFuture(List.of())
        : ready.thenCompose(v -> store.removeBatch(dir, go, MetaServer.now())); // at once when nothing waits
    return applied.handle((all, err) -> {
      List<RemoveResult> out = new ArrayList<>(n);
      int ok = 0;
      int next = 0;
      for (int i = 0; i < n; i++) {
        Lease held = dirLeases.get(i);
        if (refused[i]) {
          out.add(new RemoveResult(null, false, 0, 0, Errno.ESTALE.code()));
          continue;
        }
        MetadataStore.BatchRemoved b = err == null ? all.get(next++) : null;
        MetadataStore.Removed r = b == null ? null : b.removed();
        if (held != null) {
          leases.leaveBatch(held);
          if (r != null) {
            leases.end(held).values().forEach(layouts::giveBack); // the directory is gone, its lease with it
          }
        }
        if (r == null) {
          out.add(new RemoveResult(null, false, 0, 0, (b == null ? Errno.from(err) : b.errno()).code()));
          continue;
        }
        ok++;
        if (r.gone() && r.attr().layout() != null) {
          reaper.reap(r.attr().handle(), r.attr().layout().datafiles());
        }
        out.add(new RemoveResult(r.attr().handle(), r.gone(), r.parentWasNs(), r.parentNowNs(), 0));
      }
      counters.add("batch.removes", ok);
      counters.add("batch.removes-failed", n - ok);
      return out;
    });
  }

  /**
   * Whether the directory {@code name} in {@code dir}, which a batch's holder says it made under
   * that batch's lease, is leased now (by anyone): another client may then have made something
   * in it that is not here yet. Not found: false (the store's removal answers ENOENT).
   */
  private boolean leasedNow(Handle dir, String name) {
    Attr a = found(dir, name);
    return a != null && leases.holds(a.handle());
  }

  /** The lease {@code r} names on the directory it removes from {@code dir}, entered; null when that is not its lease now. */
  private Lease dirLease(Handle dir, BatchRemove r) {
    Attr a = found(dir, r.name());
    return a != null && a.isDir() ? leases.enterBatch(a.handle(), r.dirLease()) : null;
  }

  /** What {@code name} in {@code dir} is now; null when the lookup fails (the store's removal then says why). */
  private Attr found(Handle dir, String name) {
    try {
      return store.lookup(dir, name);
    } catch (FsException e) {
      return null;
    }
  }

  /**
   * Creates the entries in one mutation; an entry whose handle the lease does not hold (not
   * reserved for it, or used already) fails with EINVAL. A claimed file that was not created
   * has its datafiles removed; a directory's go back to the pools, made or not (its holder had no
   * use for them).
   */
  private CompletableFuture<List<BatchResult>> apply(Lease l, Handle dir, List<BatchCreate> creates, byte[] heads) {
    List<Layout> claimed = new ArrayList<>(creates.size());
    List<MetadataStore.BatchEntry> entries = new ArrayList<>(creates.size());
    int at = 0;
    for (BatchCreate c : creates) {
      byte[] head = Arrays.copyOfRange(heads, at, at + c.headLength());
      at += c.headLength();
      boolean badLease = c.leaseFiles() < 0 || c.leaseFiles() > MetaOp.MAX_LEASE_FILES
          || (c.leaseFiles() > 0 && !c.directory());
      Layout layout = badLease ? null : leases.claim(l, c.handle()); // not claimed: EINVAL
      claimed.add(layout);
      if (layout != null) {
        entries.add(entry(c, c.directory() ? null : layout, head));
      }
    }
    CompletableFuture<List<MetadataStore.Created>> made = entries.isEmpty()
        ? CompletableFuture.completedFuture(List.of())
        : store.createBatch(dir, entries, MetaServer.now());
    List<CompletableFuture<DirLeaseResp>> grants = new ArrayList<>(Collections.nCopies(creates.size(), null));
    return made.handle((created, err) -> {
      Errno all = err == null ? null : Errno.from(err); // the mutation failed whole: nothing made
      List<BatchResult> out = new ArrayList<>(creates.size());
      int next = 0;
      for (int i = 0; i < creates.size(); i++) {
        Layout layout = claimed.get(i);
        MetadataStore.Created c = layout == null || all != null ? null : created.get(next++);
        boolean isDir = creates.get(i).directory();
        if (layout != null && isDir) {
          layouts.giveBack(layout); // a directory takes the handle only: nobody wrote into these
        }
        if (c != null && c.entry() != null) {
          out.add(new BatchResult(c.entry().attr(), c.entry().parentWasNs(), 0, null));
          if (isDir && creates.get(i).leaseFiles() > 0) {
            grants.set(i, grantMade(l, creates.get(i).handle(), creates.get(i).leaseFiles()));
          }
          continue;
        }
        if (layout != null && !isDir) {
          reaper.reap(creates.get(i).handle(), layout.datafiles());
        }
        Errno e = layout == null ? Errno.EINVAL : c != null ? c.errno() : all;
        out.add(new BatchResult(null, 0, e.code(), null));
      }
      long ok = out.stream().filter(r -> r.attr() != null).count();
      counters.add("batch.creates", ok);
      counters.add("batch.failed", out.size() - ok);
      return out;
    }).thenCompose(out -> withLeases(out, grants));
  }

  /** The store's entry for {@code c}, with {@code layout} (null for a directory) and its {@code head} bytes. */
  private static MetadataStore.BatchEntry entry(BatchCreate c, Layout layout, byte[] head) {
    return new MetadataStore.BatchEntry(c.name(), c.handle(),
        new MetadataStore.NewObject(c.type(), c.mode(), c.uid(), c.gid(), 0, layout, null), c.headOffset(), head,
        c.record() == null ? null : MetaServer.change(c.record()));
  }

  /** {@code out} with the leases granted on the directories it made, once every grant is answered. */
  private static CompletableFuture<List<BatchResult>> withLeases(List<BatchResult> out,
      List<CompletableFuture<DirLeaseResp>> grants) {
    List<CompletableFuture<DirLeaseResp>> asked = grants.stream().filter(g -> g != null).toList();
    if (asked.isEmpty()) {
      return CompletableFuture.completedFuture(out);
    }
    return CompletableFuture.allOf(asked.toArray(CompletableFuture[]::new)).thenApply(v -> {
      List<BatchResult> with = new ArrayList<>(out);
      for (int i = 0; i < with.size(); i++) {
        DirLeaseResp lease = grants.get(i) == null ? null : grants.get(i).join();
        if (lease != null) {
          BatchResult b = with.get(i);
          with.set(i, new BatchResult(b.attr(), b.parentWasNs(), b.errno(), lease));
        }
      }
      return with;
    });
  }

  /** {@code n} more files for the live lease {@code l}; none when they cannot be had now. */
  private CompletableFuture<List<Reserved>> more(Lease l, int n) {
    return reserve(l.dir(), n).handle((r, err) -> {
      if (err != null) {
        LOG.info("no more files reserved for {}: {}", l, Errno.unwrap(err).getMessage());
        return List.of();
      }
      if (!leases.reserve(l, r.files())) {
        r.files().forEach(f -> layouts.giveBack(f.layout())); // ended meanwhile: nobody saw them
        return List.of();
      }
      return r.files();
    });
  }
}
