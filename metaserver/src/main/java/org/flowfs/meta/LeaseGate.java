package org.flowfs.meta;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import org.flowfs.common.Attr;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
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
 * <p>With no lease anywhere a request passes after one {@link DirLeases#isEmpty()} test: the
 * lookups and getattrs that run on the event loop pay nothing more. Thread safe.
 */
final class LeaseGate {
  private final DirLeases leases;
  private final MetadataStore store;

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
    return new OpSpec<>(spec.type(), spec.access(), pool,
        (q, ctx) -> leases.isEmpty() ? handler.handle(q, ctx) : pass(q, ctx, handler, pool));
  }

  /** Runs the request now, or once the lease it waits for ended (then through the gate again). */
  private <Q extends Req<R>, R extends Message> CompletionStage<R> pass(Q q, CallContext ctx,
      OpSpec.Handler<Q, R> handler, Executor pool) throws Exception {
    CompletableFuture<Void> lease = waitFor(q);
    if (lease == null) {
      return handler.handle(q, ctx);
    }
    Executor resume = pool != null ? pool : ctx.channel().eventLoop();
    AtomicBoolean resumed = new AtomicBoolean();
    CompletableFuture<R> later = lease.thenComposeAsync(v -> {
      resumed.set(true);
      try {
        return pass(q, ctx, handler, pool);
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

  /** The end of the lease {@code q} must wait for, recalling it; null when none. */
  private CompletableFuture<Void> waitFor(Object q) {
    if (!(q instanceof MetaOp op)) {
      return null;
    }
    for (Handle h : op.named()) {
      CompletableFuture<Void> f = leases.recall(h);
      if (f != null) {
        return f;
      }
    }
    if (op instanceof RemoveReq r && r.directory()) {
      return recallNamed(r.parent(), r.name());
    }
    if (op instanceof RenameReq r) {
      CompletableFuture<Void> f = recallNamed(r.srcParent(), r.srcName());
      return f != null ? f : recallNamed(r.dstParent(), r.dstName());
    }
    return null;
  }

  /** Recalls the lease on the directory {@code name} in {@code parent} names, if any. */
  private CompletableFuture<Void> recallNamed(Handle parent, String name) {
    Attr a;
    try {
      a = store.lookup(parent, name);
    } catch (FsException e) {
      return null; // the request fails on its own
    }
    return a.isDir() ? leases.recall(a.handle()) : null;
  }
}
