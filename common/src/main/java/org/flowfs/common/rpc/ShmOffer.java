package org.flowfs.common.rpc;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.flowfs.common.Counters;
import org.flowfs.common.wire.FrameDecoder;
import org.flowfs.common.wire.IoOp.ShmAttachReq;
import org.flowfs.common.wire.ShmSlots;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A client's offer of shared memory ({@link ShmSlots}) to an I/O server on its own machine, made
 * on each new connection, one file of slots per direction: made in {@code /dev/shm}, mapped by the
 * server, and from its answer on the connection's large payloads (a write flow's buffers, an eager
 * write's data; a read flow's, an eager read's) go through them rather than through the loopback
 * socket. The files are unlinked once answered.
 * A server that cannot map it (another mount namespace, an older server) says so and the
 * connection goes on as before; so does one to a server elsewhere, which is not offered any.
 */
public final class ShmOffer {
  private static final Logger LOG = LoggerFactory.getLogger(ShmOffer.class);
  /** Where the slots are made: the machine's shared-memory file system. */
  static final Path DIR = Path.of("/dev/shm");
  /**
   * Slots per connection and direction, each as large as a flow buffer: 8 MiB with the default
   * buffers, as much as a connection's read-ahead holds; the lowest free slot is taken first, so
   * a connection touches (and keeps resident) only as many as it has in use at once.
   */
  static final int SLOTS = 32;
  /** The most bytes of slots per connection and direction, for larger flow buffers (at least 4 slots). */
  static final int MOST_BYTES = 8 << 20;
  private static final AtomicBoolean REPORTED = new AtomicBoolean();

  private ShmOffer() {}

  /**
   * Offers shared memory on every connection {@code client} makes to {@code address}, when the
   * address is this machine's and {@code /dev/shm} is there: slots of {@code slotSize} bytes,
   * counted in {@code counters}.
   */
  public static void install(RpcClient client, InetSocketAddress address, int slotSize, Counters counters) {
    InetSocketAddress resolved = new InetSocketAddress(address.getHostString(), address.getPort());
    if (!LoopbackCongestion.local(resolved) || !Files.isDirectory(DIR)) {
      return;
    }
    int size = Math.max(ShmSlots.PAGE, Math.min(ShmSlots.MAX_SLOT_SIZE, slotSize + ShmSlots.PAGE - 1 & -ShmSlots.PAGE));
    client.onConnected(c -> offer(c, client.peer(), size, counters));
  }

  private static void offer(RpcClient.Conduit c, String peer, int slotSize, Counters counters) {
    // the server's direction first: its slots are this connection's before the server may use them
    ShmSlots in = make(c, peer, slotSize, counters);
    if (in == null) {
      return;
    }
    c.channel().pipeline().get(FrameDecoder.class).share(in);
    attach(c, peer, in, true, counters);
    ShmSlots out = make(c, peer, slotSize, counters);
    if (out != null) {
      attach(c, peer, out, false, counters);
    }
  }

  private static ShmSlots make(RpcClient.Conduit c, String peer, int slotSize, Counters counters) {
    try {
      ShmSlots s = ShmSlots.create(DIR, slots(slotSize), slotSize, counters);
      c.channel().closeFuture().addListener(f -> s.close());
      return s;
    } catch (IOException | RuntimeException e) {
      report("cannot make shared memory for " + peer + " in " + DIR + " (" + e + "); payloads go over the socket");
      return null;
    }
  }

  private static void attach(RpcClient.Conduit c, String peer, ShmSlots slots, boolean toClient, Counters counters) {
    c.call(new ShmAttachReq(slots.path().toString(), slots.token(), slots.slots(), slots.slotSize(), toClient), ok -> {
      if (!toClient) {
        // where the answer is read, the connection's event loop, which also encodes its frames
        c.channel().attr(ShmSlots.OUTBOUND).set(slots);
      }
      return CompletableFuture.completedFuture(ok);
    }).whenComplete((ok, e) -> {
      slots.unlink();
      if (e != null) {
        c.channel().eventLoop().execute(slots::close); // the server never uses it
        counters.increment("shm.refused");
        report(peer + " does not share memory with this client (" + e.getMessage() + "); payloads go over the socket");
      } else {
        counters.increment("shm.attached");
      }
    });
  }

  /** Slots of {@code slotSize} bytes per connection and direction. */
  static int slots(int slotSize) {
    return Math.max(4, Math.min(SLOTS, MOST_BYTES / slotSize));
  }

  private static void report(String why) {
    if (REPORTED.compareAndSet(false, true)) {
      LOG.info("{}", why);
    } else {
      LOG.debug("{}", why);
    }
  }
}
