package org.flowfs.io;

import io.netty.util.Attribute;
import io.netty.util.AttributeKey;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.rpc.Access;
import org.flowfs.common.rpc.CallContext;
import org.flowfs.common.rpc.OpTable;
import org.flowfs.common.wire.CommonOp.OkResp;
import org.flowfs.common.wire.FrameDecoder;
import org.flowfs.common.wire.IoOp.ShmAttachReq;
import org.flowfs.common.wire.IoOp.ShmMadeResp;
import org.flowfs.common.wire.IoOp.ShmMakeReq;
import org.flowfs.common.wire.ShmSlots;

/**
 * The I/O server's side of shared memory with a client on its machine ({@link ShmSlots}): it maps
 * the file of slots the client names for one direction of the connection ({@link ShmAttachReq}),
 * and makes one for a client that it may not open the files of ({@link ShmMakeReq}: the file is
 * this server's, which that client may open, e.g. a mount run as root). Both on the connection's
 * event loop: files of a few MiB in a tmpfs (or hugetlbfs), no disk.
 */
final class ShmHost {
  /** Files a connection may have this server make: one per direction. */
  static final int MOST_MADE = 2;
  private static final AttributeKey<AtomicInteger> MADE = AttributeKey.valueOf("flowfs.shm.made");
  private final Counters counters;
  private final Path dir;

  /** Makes files in {@code dir} ({@code node.shm-dir}). */
  ShmHost(Counters counters, Path dir) {
    this.counters = counters;
    this.dir = dir;
  }

  void register(OpTable t) {
    t.async(ShmMakeReq.class, Access.READ_ONLY, this::make);
    t.async(ShmAttachReq.class, Access.READ_ONLY, this::attach);
  }

  /** Makes a file for the client to map; it goes once attached, or with the connection. */
  private CompletableFuture<ShmMadeResp> make(ShmMakeReq q, CallContext ctx) {
    Attribute<AtomicInteger> made = ctx.channel().attr(MADE); // the event loop's alone
    made.setIfAbsent(new AtomicInteger());
    if (made.get().get() >= MOST_MADE) {
      throw new FsException(Errno.EBUSY, "a connection has at most " + MOST_MADE + " files of shared memory made");
    }
    ShmSlots slots;
    try {
      slots = ShmSlots.make(dir, q.slots(), q.slotSize(), counters);
    } catch (IllegalArgumentException e) {
      throw new FsException(Errno.EINVAL, "shared memory of " + e.getMessage());
    } catch (IOException | RuntimeException e) {
      counters.increment("shm.refused");
      throw new FsException(Errno.ENOTSUP, "cannot make shared memory for " + ctx.peer() + ": " + e);
    }
    made.get().incrementAndGet();
    Path p = slots.path();
    slots.close(); // unmapped here: this side maps it when the client attaches it, like a client's own
    ctx.channel().closeFuture().addListener(f -> slots.unlink());
    return CompletableFuture.completedFuture(new ShmMadeResp(p.toString(), slots.token()));
  }

  /**
   * Maps the file the client names for the payloads of one direction: the client's, or the one
   * made here. Before the answer, so that the client's first frame that names a slot finds it.
   */
  private CompletableFuture<OkResp> attach(ShmAttachReq q, CallContext ctx) {
    ShmSlots slots;
    try {
      slots = ShmSlots.attach(Path.of(q.path()), q.token(), q.slots(), q.slotSize(), counters);
    } catch (IOException | RuntimeException e) {
      counters.increment("shm.refused");
      throw new FsException(Errno.ENOTSUP, "cannot share memory with " + ctx.peer() + ": " + e.getMessage());
    }
    // both sides have it mapped now (the client before asking); one made here can only go from here
    // when the client may not remove this server's files
    slots.unlink();
    ctx.channel().closeFuture().addListener(f -> slots.close());
    if (q.toClient()) {
      ctx.channel().attr(ShmSlots.OUTBOUND).set(slots);
    } else {
      ctx.channel().pipeline().get(FrameDecoder.class).share(slots);
    }
    counters.increment("shm.attached");
    return CompletableFuture.completedFuture(OkResp.INSTANCE);
  }
}
