package org.flowfs.meta;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.flowfs.common.Handle;
import org.flowfs.common.rpc.Peers;
import org.flowfs.common.wire.IoOp.HandlesResp;
import org.flowfs.common.wire.IoOp.PrecreateReq;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pools of precreated datafile handles, one per I/O server (OrangeFS's precreate pools), so a
 * file create needs no I/O server round trip. A pool is refilled in the background when it runs
 * low. Handles reserved but never used cost nothing: an I/O server creates a datafile on its
 * first write. Pools live in memory: after a restart the unused handles are simply never used.
 * Thread safe.
 */
final class DatafilePools {
  private static final Logger LOG = LoggerFactory.getLogger(DatafilePools.class);

  private final Peers peers;
  private final int batch;
  private final int lowWater;
  private final Pool[] pools;

  private final class Pool {
    final int io;
    final ArrayDeque<Handle> handles = new ArrayDeque<>();
    final ArrayDeque<CompletableFuture<Handle>> waiting = new ArrayDeque<>();
    boolean refilling;

    Pool(int io) {
      this.io = io;
    }

    synchronized CompletableFuture<Handle> take() {
      Handle h = handles.poll();
      CompletableFuture<Handle> f;
      if (h != null) {
        f = CompletableFuture.completedFuture(h);
      } else {
        f = new CompletableFuture<>();
        waiting.add(f);
      }
      if (handles.size() < lowWater || !waiting.isEmpty()) {
        refill();
      }
      return f;
    }

    synchronized void giveBack(Handle h) {
      handles.addFirst(h);
    }

    /** Called with the lock held. */
    private void refill() {
      if (refilling) {
        return;
      }
      refilling = true;
      peers.io(io).call(new PrecreateReq(batch)).whenComplete(this::refilled);
    }

    private void refilled(HandlesResp resp, Throwable err) {
      List<CompletableFuture<Handle>> failed = List.of();
      synchronized (this) {
        refilling = false;
        if (err != null) {
          LOG.warn("cannot precreate datafiles on ioserver {}: {}", io, err.getMessage());
          failed = List.copyOf(waiting);
          waiting.clear();
        } else {
          handles.addAll(resp.handles());
          while (!waiting.isEmpty() && !handles.isEmpty()) {
            waiting.poll().complete(handles.poll());
          }
          if (!waiting.isEmpty() || handles.size() < lowWater) {
            refill();
          }
        }
      }
      for (CompletableFuture<Handle> f : failed) {
        f.completeExceptionally(err);
      }
    }
  }

  DatafilePools(Peers peers, int batch, int lowWater) {
    this.peers = peers;
    this.batch = batch;
    this.lowWater = Math.min(lowWater, batch);
    this.pools = new Pool[peers.ioCount()];
    for (int i = 0; i < pools.length; i++) {
      pools[i] = new Pool(i);
    }
  }

  /** Starts filling every pool, so the first creates need not wait. */
  void prime() {
    for (Pool p : pools) {
      synchronized (p) {
        p.refill();
      }
    }
  }

  /** A fresh datafile handle on I/O server {@code io}; fails with EIO if that server is down. */
  CompletableFuture<Handle> take(int io) {
    return pools[io].take();
  }

  /** Every handle the pools hold now (for fsck: reserved for files to come, not orphans). */
  List<Handle> pooled() {
    List<Handle> out = new ArrayList<>();
    for (Pool p : pools) {
      synchronized (p) {
        out.addAll(p.handles);
      }
    }
    return out;
  }

  /** Returns an unused handle (its create failed) to the front of its pool. */
  void giveBack(Handle h) {
    pools[h.ioServer()].giveBack(h);
  }
}
