package org.flowfs.common.rpc;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.flowfs.common.Counters;
import org.flowfs.common.wire.FrameDecoder;
import org.flowfs.common.wire.IoOp.ShmAttachReq;
import org.flowfs.common.wire.IoOp.ShmMakeReq;
import org.flowfs.common.wire.ShmSlots;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A client's offer of shared memory ({@link ShmSlots}) to an I/O server on its own machine, made
 * on each new connection, one file of slots per direction in {@code node.shm-dir} ({@code /dev/shm}
 * by default), mapped by both; from
 * the server's answer on the connection's large payloads (a write flow's buffers, an eager write's
 * data; a read flow's, an eager read's) go through them rather than through the loopback socket.
 * The client makes the files, or, where the server may not open them (the shipped units run the
 * mount as root and the I/O servers as their own user), asks the server to make them ({@link
 * ShmMakeReq}) and maps the server's; having seen that once, it asks so on the server's later
 * connections straight away. The files are unlinked once both mapped them.
 * A server that cannot share either way (another mount namespace, an older server, users that may
 * open neither's files) says so and the connection goes on as before; so does one to a server
 * elsewhere, which is not offered any.
 */
public final class ShmOffer {
  private static final Logger LOG = LoggerFactory.getLogger(ShmOffer.class);
  /**
   * Slots per connection and direction, each as large as a flow buffer: 8 MiB with the default
   * buffers, as much as a connection's read-ahead holds; the lowest free slot is taken first, so
   * a connection touches (and keeps resident) only as many as it has in use at once.
   */
  static final int SLOTS = 32;
  /** The most bytes of slots per connection and direction, for larger flow buffers (at least 4 slots). */
  static final int MOST_BYTES = 8 << 20;
  private static final AtomicBoolean REPORTED = new AtomicBoolean();

  private final RpcClient.Conduit c;
  private final String peer;
  private final Path dir;
  private final int slotSize;
  private final Counters counters;
  /** This server's: it may not open this client's files, so it makes them (learned once, kept). */
  private final AtomicBoolean serverMakes;

  private ShmOffer(RpcClient.Conduit c, String peer, Path dir, int slotSize, Counters counters, AtomicBoolean serverMakes) {
    this.c = c;
    this.peer = peer;
    this.dir = dir;
    this.slotSize = slotSize;
    this.counters = counters;
    this.serverMakes = serverMakes;
  }

  /**
   * Offers shared memory on every connection {@code client} makes to {@code address}, when the
   * address is this machine's and {@code dir} (or {@code /dev/shm}) is there: slots of {@code
   * slotSize} bytes in files made in {@code dir}, counted in {@code counters}.
   */
  public static void install(RpcClient client, InetSocketAddress address, Path dir, int slotSize, Counters counters) {
    InetSocketAddress resolved = new InetSocketAddress(address.getHostString(), address.getPort());
    if (!LoopbackCongestion.local(resolved) || !Files.isDirectory(dir) && !Files.isDirectory(ShmSlots.DIR)) {
      return;
    }
    int size = Math.max(ShmSlots.PAGE, Math.min(ShmSlots.MAX_SLOT_SIZE, slotSize + ShmSlots.PAGE - 1 & -ShmSlots.PAGE));
    AtomicBoolean serverMakes = new AtomicBoolean();
    client.onConnected(c -> new ShmOffer(c, client.peer(), dir, size, counters, serverMakes).offer());
  }

  private void offer() {
    // the server's direction first: its slots are this connection's before the server may use them
    share(true).thenAccept(shared -> {
      if (shared) {
        share(false);
      }
    });
  }

  /** Shares one direction of the connection; completes with whether it is. */
  private CompletableFuture<Boolean> share(boolean toClient) {
    if (serverMakes.get()) {
      return shareServers(toClient);
    }
    return shareOwn(toClient).thenCompose(shared -> {
      if (shared) {
        return CompletableFuture.completedFuture(true);
      }
      return shareServers(toClient).thenApply(ok -> {
        if (ok) {
          serverMakes.set(true);
        }
        return ok;
      });
    });
  }

  /** Through a file this client makes. */
  private CompletableFuture<Boolean> shareOwn(boolean toClient) {
    ShmSlots s;
    try {
      s = ShmSlots.make(dir, slots(slotSize), slotSize, counters);
    } catch (IOException | RuntimeException e) {
      LOG.debug("cannot make shared memory for {} in {}: {}", peer, dir, e.toString());
      return CompletableFuture.completedFuture(false);
    }
    return attach(s, toClient, false);
  }

  /** Through a file the server makes ({@link ShmMakeReq}) and this client maps. */
  private CompletableFuture<Boolean> shareServers(boolean toClient) {
    int slots = slots(slotSize);
    return c.call(new ShmMakeReq(slots, slotSize), made -> {
      ShmSlots s;
      try {
        s = ShmSlots.attach(Path.of(made.path()), made.token(), slots, slotSize, counters);
      } catch (IOException | RuntimeException e) {
        return CompletableFuture.failedFuture(e);
      }
      return attach(s, toClient, true);
    }).handle((shared, e) -> {
      if (e != null) {
        refused(e);
        return false;
      }
      return shared;
    });
  }

  /**
   * Has the server attach {@code s} (mapped here, closed with the connection) for one direction;
   * completes with whether it did, and the file is unlinked either way. A refusal is counted when
   * it is the {@code last} way tried.
   */
  private CompletableFuture<Boolean> attach(ShmSlots s, boolean toClient, boolean last) {
    c.channel().closeFuture().addListener(f -> s.close());
    if (toClient) {
      // before the request leaves: the server may name a slot in its very next frame
      c.channel().pipeline().get(FrameDecoder.class).share(s);
    }
    return c.call(new ShmAttachReq(s.path().toString(), s.token(), s.slots(), s.slotSize(), toClient), ok -> {
      if (!toClient) {
        // where the answer is read, the connection's event loop, which also encodes its frames
        c.channel().attr(ShmSlots.OUTBOUND).set(s);
      }
      return CompletableFuture.completedFuture(true);
    }).handle((ok, e) -> {
      s.unlink();
      if (e != null) {
        c.channel().eventLoop().execute(s::close); // the server never uses it
        if (last) {
          refused(e);
        } else {
          LOG.debug("{} does not map this client's shared memory ({}); asking it to make the files", peer, e.getMessage());
        }
        return false;
      }
      counters.increment("shm.attached");
      return true;
    });
  }

  private void refused(Throwable e) {
    counters.increment("shm.refused");
    Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
    String why = peer + " does not share memory with this client (" + cause.getMessage() + "); payloads go over the socket";
    if (REPORTED.compareAndSet(false, true)) {
      LOG.info("{}", why);
    } else {
      LOG.debug("{}", why);
    }
  }

  /** Slots of {@code slotSize} bytes per connection and direction. */
  static int slots(int slotSize) {
    return Math.max(4, Math.min(SLOTS, MOST_BYTES / slotSize));
  }
}
