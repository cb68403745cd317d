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
 */
final class DatafileReaper implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(DatafileReaper.class);
  static final int RETRY_SECONDS = 10;
  private final Peers peers;
  private final MetadataStore store;
  private final java.util.Set<Handle> inProgress = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private final java.util.concurrent.ScheduledExecutorService timer;

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
    if (!inProgress.add(metafile)) {
      return;
    }
    Map<Integer, List<Handle>> byServer = new TreeMap<>();
    for (Handle h : datafiles) {
      byServer.computeIfAbsent(h.ioServer(), k -> new ArrayList<>()).add(h);
    }
    List<java.util.concurrent.CompletableFuture<?>> sent = new ArrayList<>();
    byServer.forEach((io, hs) -> {
      if (io < 0 || io >= peers.ioCount()) {
        LOG.warn("datafiles {} name unknown ioserver {}; dropping them from the removal queue", hs, io);
        return;
      }
      sent.add(peers.io(io).call(new DataRemoveReq(hs)));
    });
    java.util.concurrent.CompletableFuture.allOf(sent.toArray(java.util.concurrent.CompletableFuture[]::new))
        .thenCompose(v -> store.reaped(metafile))
        .whenComplete((v, err) -> {
          inProgress.remove(metafile);
          if (err != null) {
            LOG.info("datafiles of {} not removed yet (tried again in {} s): {}", metafile, RETRY_SECONDS, err.getMessage());
          }
        });
  }

  @Override
  public void close() {
    timer.shutdownNow();
  }
}
