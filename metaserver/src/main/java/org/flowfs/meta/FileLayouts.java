package org.flowfs.meta;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.config.LayoutConfig;
import org.flowfs.common.dist.DirStripe;
import org.flowfs.common.dist.Distributions;
import org.flowfs.common.dist.SimpleStripe;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lays out new regular files over the I/O servers: the distribution and datafile count a create
 * asks for, else its directory's {@link DirStripe}, else the config's; the first server rotates
 * from file to file; the datafiles come from the precreate pools; the head is the config's {@code
 * layout.head-bytes}. A {@code CreateReq} and a lease's reservation lay out alike through here.
 * Thread safe.
 */
final class FileLayouts {
  private static final Logger LOG = LoggerFactory.getLogger(FileLayouts.class);

  private final FlowFsConfig config;
  private final DatafilePools pools;
  private final MetadataStore store;
  private final AtomicInteger nextStart = new AtomicInteger();

  FileLayouts(FlowFsConfig config, DatafilePools pools, MetadataStore store) {
    this.config = config;
    this.pools = pools;
    this.store = store;
  }

  /** Where a new file's bytes go, before it has datafiles: distribution, count, first server. */
  record Placement(DistSpec dist, int count, int start) {}

  /**
   * The placement of the next new file: {@code dist} and {@code servers} when given (non-null,
   * non-zero), else {@code stripe}'s (may be null), else the config's; the next first server.
   *
   * @throws FsException EINVAL for an unknown distribution or more datafiles than I/O servers
   */
  Placement place(DistSpec dist, int servers, DirStripe stripe) {
    int n = config.ioServers().size();
    DistSpec d = dist != null ? dist
        : stripe != null && stripe.stripSize() > 0 ? new SimpleStripe(stripe.stripSize()).spec()
        : defaultDist(config.layout());
    Distributions.of(d); // EINVAL for an unknown distribution
    int count = servers > 0 ? servers
        : stripe != null && stripe.servers() > 0 ? Math.min(stripe.servers(), n)
        : config.layout().servers() > 0 ? config.layout().servers() : n;
    if (count > n) {
      throw new FsException(Errno.EINVAL, count + " datafiles asked for, " + n + " I/O servers exist");
    }
    return new Placement(d, count, Math.floorMod(nextStart.getAndIncrement(), n));
  }

  /**
   * The layouts of {@code placements}, in order, with datafiles taken from the pools; all or
   * none: when a pool cannot give one (its server is down), what was taken goes back and the
   * future fails with EIO.
   */
  CompletableFuture<List<Layout>> take(List<Placement> placements) {
    int n = config.ioServers().size();
    List<CompletableFuture<Handle>> takes = new ArrayList<>();
    for (Placement p : placements) {
      for (int i = 0; i < p.count(); i++) {
        takes.add(pools.take((p.start() + i) % n));
      }
    }
    return CompletableFuture.allOf(takes.toArray(CompletableFuture[]::new)).handle((v, err) -> {
      List<Handle> hs = new ArrayList<>(takes.size());
      for (CompletableFuture<Handle> f : takes) {
        if (!f.isCompletedExceptionally()) {
          hs.add(f.join());
        }
      }
      if (err != null) {
        hs.forEach(pools::giveBack);
        throw new FsException(Errno.EIO, "cannot reserve datafiles: " + Errno.unwrap(err).getMessage());
      }
      List<Layout> out = new ArrayList<>(placements.size());
      int at = 0;
      for (Placement p : placements) {
        out.add(new Layout(p.dist(), hs.subList(at, at + p.count()), config.layout().headBytes()));
        at += p.count();
      }
      return out;
    });
  }

  /**
   * Whether {@code layout}, one a client brings, could be one of this file system's: each
   * datafile on another of its I/O servers, and the head this server gives new files.
   */
  boolean plausible(Layout layout) {
    int n = config.ioServers().size();
    java.util.Set<Integer> on = new java.util.HashSet<>();
    for (Handle d : layout.datafiles()) {
      if (d.ioServer() < 0 || d.ioServer() >= n || !on.add(d.ioServer())) {
        return false;
      }
    }
    return layout.headBytes() == config.layout().headBytes();
  }

  /** Returns the datafiles of a layout no file got to the front of their pools. */
  void giveBack(Layout layout) {
    layout.datafiles().forEach(pools::giveBack);
  }

  /** The {@link DirStripe} stored on directory {@code dir}, or null (none, or unreadable). */
  DirStripe dirStripe(Handle dir) {
    try {
      return DirStripe.parse(store.getxattr(dir, DirStripe.XATTR));
    } catch (FsException e) {
      if (e.errno() != Errno.ENODATA) {
        LOG.debug("ignoring {} of {}: {}", DirStripe.XATTR, dir, e.getMessage());
      }
      return null;
    }
  }

  static DistSpec defaultDist(LayoutConfig layout) {
    return switch (layout.distribution()) {
      case org.flowfs.common.dist.Basic.NAME -> new org.flowfs.common.dist.Basic().spec();
      default -> new SimpleStripe(layout.stripSize()).spec();
    };
  }
}
