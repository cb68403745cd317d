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
 * Removes the datafiles of files whose last name is gone. Best effort and asynchronous: the
 * namespace change is already committed; a datafile that cannot be removed now (its server is
 * down) is an orphan that {@code flowfs fsck} finds later.
 */
final class DatafileReaper {
  private static final Logger LOG = LoggerFactory.getLogger(DatafileReaper.class);
  private final Peers peers;

  DatafileReaper(Peers peers) {
    this.peers = peers;
  }

  void reap(List<Handle> datafiles) {
    Map<Integer, List<Handle>> byServer = new TreeMap<>();
    for (Handle h : datafiles) {
      byServer.computeIfAbsent(h.ioServer(), k -> new ArrayList<>()).add(h);
    }
    byServer.forEach((io, hs) -> {
      if (io < 0 || io >= peers.ioCount()) {
        LOG.warn("datafiles {} name unknown ioserver {}", hs, io);
        return;
      }
      peers.io(io).call(new DataRemoveReq(hs)).whenComplete((ok, err) -> {
        if (err != null) {
          LOG.warn("cannot remove datafiles {} on ioserver {} (left for fsck): {}", hs, io, err.getMessage());
        }
      });
    });
  }
}
