package org.flowfs.meta;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.flowfs.common.Handle;
import org.flowfs.common.rpc.Peers;
import org.flowfs.common.wire.IoOp.DataRemoveReq;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Removes the datafiles of files whose last name is gone, asynchronously: the removal of the name
 * committed them to the store's removal queue ({@link MetadataStore#doomed}); once every I/O
 * server holding one confirmed, the file leaves the queue. What could not be removed (a server
 * down, the metadata server stopped) stays queued and is tried again at start and every {@link
 * #RETRY_SECONDS} seconds, so a crash leaves no orphan datafiles behind.
 *
 * <p>Files are reaped in batches: a batch leaves {@link #LINGER_MS} after its first file came
 * (nobody waits for it: the name is gone already), one batch is out at a time, with one {@link
 * DataRemoveReq} per I/O server and one removal from the queue for all of its files; what arrives
 * meanwhile waits for the next. Under a stream of unlinks ({@code rm -rf}) that
 * is a message per server and a commit per batch instead of per file. Removing a datafile is
 * idempotent, so a batch that failed anywhere is simply tried again whole.
 */
final class DatafileReaper implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(DatafileReaper.class);
  static final int RETRY_SECONDS = 10;
  /** Most files in one batch. */
  static final int BATCH_FILES = 1024;
  /** How long a batch gathers files before it leaves. */
  static final long LINGER_MS = 20;
  private final Peers peers;
  private final MetadataStore store;
  private final java.util.concurrent.ScheduledExecutorService timer;
  /** Files waiting for the next batch, and those in the batch out now; guarded by this. */
  private final Map<Handle, List<Handle>> waiting = new java.util.LinkedHashMap<>();
  private final java.util.Set<Handle> inProgress = new java.util.HashSet<>();
  private boolean batchOut;

  DatafileReaper(Peers peers, MetadataStore store) {
    this.peers = peers;
    this.store = store;
    this.timer = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(new org.flowfs.common.NamedThreads("meta-reaper"));
  }

  /** Reaps what the queue holds now, and again every {@link #RETRY_SECONDS} seconds. */
  void start() {
    timer.scheduleWithFixedDelay(this::retry, 0, RETRY_SECONDS, java.util.concurrent.TimeUnit.SECONDS);
  }

  private void retry() {
    try {
      for (MetadataStore.Doomed d : store.doomed(4096)) {
        reap(d.metafile(), d.datafiles());
      }
    } catch (RuntimeException e) {
      LOG.warn("cannot read the datafile removal queue: {}", e.toString());
    }
  }

  /** Removes the datafiles of {@code metafile} (queued by the removal that made it go). */
  void reap(Handle metafile, List<Handle> datafiles) {
    synchronized (this) {
      if (inProgress.contains(metafile) || waiting.putIfAbsent(metafile, datafiles) != null || batchOut) {
        return;
      }
      batchOut = true;
    }
    sendLater();
  }

  /** Sends the next batch once it had {@link #LINGER_MS} to gather files. */
  private void sendLater() {
    try {
      timer.schedule(this::sendBatch, LINGER_MS, java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      synchronized (this) {
        batchOut = false; // closed: what is queued stays in the store for the next start
      }
    }
  }

  /** Sends what is waiting as one batch, or ends the run of batches if nothing is. */
  private void sendBatch() {
    Map<Handle, List<Handle>> batch = new java.util.LinkedHashMap<>();
    synchronized (this) {
      var it = waiting.entrySet().iterator();
      while (it.hasNext() && batch.size() < BATCH_FILES) {
        var e = it.next();
        batch.put(e.getKey(), e.getValue());
        it.remove();
      }
      if (batch.isEmpty()) {
        batchOut = false;
        return;
      }
      inProgress.addAll(batch.keySet());
    }
    Map<Integer, List<Handle>> byServer = new TreeMap<>();
    batch.values().forEach(ds -> ds.forEach(h -> byServer.computeIfAbsent(h.ioServer(), k -> new ArrayList<>()).add(h)));
    List<java.util.concurrent.CompletableFuture<?>> sent = new ArrayList<>();
    byServer.forEach((io, hs) -> {
      if (io < 0 || io >= peers.ioCount()) {
        LOG.warn("datafiles {} name unknown ioserver {}; dropping them from the removal queue", hs, io);
        return;
      }
      for (int from = 0; from < hs.size(); from += org.flowfs.common.wire.IoOp.MAX_BATCH) {
        List<Handle> part = hs.subList(from, Math.min(hs.size(), from + org.flowfs.common.wire.IoOp.MAX_BATCH));
        sent.add(peers.io(io).call(new DataRemoveReq(part)));
      }
    });
    java.util.concurrent.CompletableFuture.allOf(sent.toArray(java.util.concurrent.CompletableFuture[]::new))
        .thenCompose(v -> store.reaped(batch.keySet()))
        .whenComplete((v, err) -> {
          synchronized (this) {
            inProgress.removeAll(batch.keySet());
          }
          if (err != null) {
            LOG.info("datafiles of {} files not removed yet (tried again in {} s): {}", batch.size(), RETRY_SECONDS,
                err.getMessage());
          }
          sendLater();
        });
  }

  @Override
  public void close() {
    timer.shutdownNow();
  }
}
