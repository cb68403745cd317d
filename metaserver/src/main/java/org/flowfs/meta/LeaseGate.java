package org.flowfs.meta;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import org.flowfs.common.Attr;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.rpc.Access;
import org.flowfs.common.rpc.CallContext;
import org.flowfs.common.rpc.OpSpec;
import org.flowfs.common.rpc.OpTable;
import org.flowfs.common.wire.HasPayload;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.MetaOp;
import org.flowfs.common.wire.MetaOp.RemoveReq;
import org.flowfs.common.wire.MetaOp.RenameReq;
import org.flowfs.common.wire.Req;

/**
 * Holds back ("parks") the requests that touch a leased directory until its lease ends: a
 * request one of whose {@link MetaOp#named()} handles is leased, an rmdir
 * ({@link RemoveReq#directory()}) of a leased directory, and a rename that moves or replaces one
 * (found by looking its names up). The first parked request recalls the lease. When the lease
 * ends, a parked request goes through the gate again, on the event loop it came on or on its
 * operation's executor, as its handler expects (a new lease granted meanwhile holds it back
 * again, and is recalled at once).
 *
 * <p>A lease is registered before its grant reads the directory, but a change admitted just
 * before may not have reached the store yet (a create waits for its datafiles first). So the
 * gate counts the changes it let through and that are not answered yet, by the handles they
 * touch, and {@link #quiet} tells the grant when the last of them on its directory is done: the
 * directory it then reads holds every change of another client that did not wait for the lease.
 * A change first counts itself, then looks for a lease; a grant first registers, then looks at
 * the count: one of the two sees the other.
 *
 * <p>With no lease anywhere a request passes after one {@link DirLeases#isEmpty()} test (a
 * change also counts itself in and out): the lookups and getattrs that run on the event loop pay
 * nothing more. Thread safe.
 */
final class LeaseGate {
  /** Changes admitted and not yet answered on one handle, and who waits for none to be left. */
  private static final class Busy {
    int changes;
    CompletableFuture<Void> quiet;
  }

  private final DirLeases leases;
  private final MetadataStore store;
  private final ConcurrentHashMap<Handle, Busy> busy = new ConcurrentHashMap<>();

  LeaseGate(DirLeases leases, MetadataStore store) {
    this.leases = leases;
    this.store = store;
  }

  /** Every operation of {@code ops} behind the gate. */
  OpTable guard(OpTable ops) {
    OpTable out = new OpTable();
    for (OpSpec<?, ?> spec : ops.all()) {
      out.add(guard(spec));
    }
    return out;
  }

  private <Q extends Req<R>, R extends Message> OpSpec<Q, R> guard(OpSpec<Q, R> spec) {
    OpSpec.Handler<Q, R> handler = spec.handler();
    Executor pool = spec.executor();
    OpSpec.Handler<Q, R> gated = spec.access() == Access.READ_ONLY
        ? (q, ctx) -> leases.isEmpty() ? handler.handle(q, ctx) : read(q, ctx, handler, pool)
        : (q, ctx) -> change(q, ctx, handler, pool);
    return new OpSpec<>(spec.type(), spec.access(), pool, gated);
  }

  /**
   * Completes when no change the gate let through to {@code h} is left unanswered. Changes that
   * arrive once a lease on {@code h} is registered wait for its end and do not count.
   */
  CompletableFuture<Void> quiet(Handle h) {
    List<CompletableFuture<Void>> wait = new ArrayList<>(1);
    busy.computeIfPresent(h, (k, b) -> {
      if (b.quiet == null) {
        b.quiet = new CompletableFuture<>();
      }
      wait.add(b.quiet);
      return b;
    });
    return wait.isEmpty() ? CompletableFuture.completedFuture(null) : wait.get(0);
  }

  /** A read: runs now, or once the lease it waits for ended. */
  private <Q extends Req<R>, R extends Message> CompletionStage<R> read(Q q, CallContext ctx,
      OpSpec.Handler<Q, R> handler, Executor pool) throws Exception {
    CompletableFuture<Void> lease = waitFor(q instanceof MetaOp op ? op.named() : List.of());
    return lease == null ? handler.handle(q, ctx) : park(q, ctx, pool, lease, () -> read(q, ctx, handler, pool));
  }

  /**
   * A change: counts itself on the handles it touches, then runs until answered, or, when one of
   * them is leased, counts itself out and waits for the lease's end.
   */
  private <Q extends Req<R>, R extends Message> CompletionStage<R> change(Q q, CallContext ctx,
      OpSpec.Handler<Q, R> handler, Executor pool) throws Exception {
    List<Handle> touched = touched(q);
    touched.forEach(this::enter);
    CompletableFuture<Void> lease;
    CompletionStage<R> r;
    try {
      lease = leases.isEmpty() ? null : waitFor(touched);
      r = lease == null ? handler.handle(q, ctx) : null;
    } catch (Exception | Error e) {
      touched.forEach(this::leave);
      throw e;
    }
    if (lease != null) {
      touched.forEach(this::leave);
      return park(q, ctx, pool, lease, () -> change(q, ctx, handler, pool));
    }
    if (!touched.isEmpty()) {
      r.whenComplete((x, err) -> touched.forEach(this::leave));
    }
    return r;
  }

  /** How a parked request goes through the gate again. */
  private interface Again<R> {
    CompletionStage<R> pass() throws Exception;
  }

  /**
   * Passes {@code q} again once {@code lease} ended, on its operation's executor or, with none,
   * on the event loop it came on.
   */
  private <R> CompletionStage<R> park(Object q, CallContext ctx, Executor pool, CompletableFuture<Void> lease, Again<R> again) {
    Executor resume = pool != null ? pool : ctx.channel().eventLoop();
    AtomicBoolean resumed = new AtomicBoolean();
    CompletableFuture<R> later = lease.thenComposeAsync(v -> {
      resumed.set(true);
      try {
        return again.pass();
      } catch (Exception e) {
        return CompletableFuture.failedFuture(e);
      }
    }, resume);
    if (q instanceof HasPayload p) {
      later.whenComplete((r, err) -> {
        if (err != null && !resumed.get()) {
          p.release(); // the handler that owns it never ran: its executor refused (the server stops)
        }
      });
    }
    return later;
  }

  private void enter(Handle h) {
    busy.compute(h, (k, b) -> {
      Busy n = b != null ? b : new Busy();
      n.changes++;
      return n;
    });
  }

  private void leave(Handle h) {
    List<CompletableFuture<Void>> quiet = new ArrayList<>(1);
    busy.computeIfPresent(h, (k, b) -> {
      if (--b.changes > 0) {
        return b;
      }
      if (b.quiet != null) {
        quiet.add(b.quiet);
      }
      return null;
    });
    quiet.forEach(f -> f.complete(null));
  }

  /**
   * The handles a request touches: those it names, and for an rmdir or a rename the directories
   * it removes, moves or replaces (looked up).
   */
  private List<Handle> touched(Object q) {
    if (!(q instanceof MetaOp op)) {
      return List.of();
    }
    if (op instanceof RemoveReq r && r.directory()) {
      List<Handle> out = new ArrayList<>(op.named());
      addDir(out, r.parent(), r.name());
      return out;
    }
    if (op instanceof RenameReq r) {
      List<Handle> out = new ArrayList<>(op.named());
      addDir(out, r.srcParent(), r.srcName());
      addDir(out, r.dstParent(), r.dstName());
      return out;
    }
    return op.named();
  }

  /** Adds the directory {@code name} in {@code parent} names, if it is one. */
  private void addDir(List<Handle> out, Handle parent, String name) {
    try {
      Attr a = store.lookup(parent, name);
      if (a.isDir() && !out.contains(a.handle())) {
        out.add(a.handle());
      }
    } catch (FsException e) {
      // the request fails on its own
    }
  }

  /** The end of the first lease on {@code touched} (which is recalled); null when none. */
  private CompletableFuture<Void> waitFor(List<Handle> touched) {
    for (Handle h : touched) {
      CompletableFuture<Void> f = leases.recall(h);
      if (f != null) {
        return f;
      }
    }
    return null;
  }
}
