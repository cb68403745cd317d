package org.flowfs.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.config.FlowConfig;
import org.flowfs.common.dist.Distribution;
import org.flowfs.common.dist.Distributions;
import org.flowfs.common.flow.FlowDescriptor;
import org.flowfs.common.flow.FlowInterface;
import org.flowfs.common.flow.FlowState;
import org.flowfs.common.flow.MemEndpoint;
import org.flowfs.common.flow.MemViews;
import org.flowfs.common.flow.NetEndpoint;
import org.flowfs.common.request.FileData;
import org.flowfs.common.request.Request;
import org.flowfs.common.rpc.Peers;
import org.flowfs.common.rpc.RpcClient;
import org.flowfs.common.wire.IoOp.EagerData;
import org.flowfs.common.wire.IoOp.EagerWriteReq;
import org.flowfs.common.wire.IoOp.FlowReq;
import org.flowfs.common.wire.IoOp.ReadReq;
import org.flowfs.common.wire.IoOp.ReadResp;
import org.flowfs.common.wire.IoOp.WriteReq;
import org.flowfs.common.wire.RequestSpec;

/**
 * The data path of seed 001: every byte between this client and the I/O servers moves by exactly
 * one of
 *
 * <ul>
 *   <li>the <b>short write</b>: contiguous, under {@code flow.short-write-max}: the data rides in
 *       the write request;
 *   <li>the <b>eager write</b>: contiguous, up to {@code flow.eager-write-max}: the request, then
 *       a data message, then the answer, with no flow set-up;
 *   <li>the <b>eager read</b>: contiguous, up to {@code flow.eager-read-max}: the data rides in the
 *       answer;
 *   <li>a <b>flow</b>: anything larger, and anything noncontiguous (such as the small writes that
 *       write-behind gathered): a request/ack handshake with each server involved, one flow per
 *       server, all at once, and for writes the server's trailing ack.
 * </ul>
 *
 * Counters {@code path.<short|eager-write|eager-read|flow>.{ops,bytes}} count each; {@code
 * path.gathered.{ops,regions}} the noncontiguous writes and their regions.
 */
final class FlowDataPath implements DataPath {
  private final Peers peers;
  private final FlowInterface flows;
  private final FlowConfig config;
  private final String protocol;
  private final Counters counters;
  private final AtomicLong tags = new AtomicLong();

  FlowDataPath(Peers peers, FlowInterface flows, FlowConfig config, String protocol, Counters counters) {
    this.peers = peers;
    this.flows = flows;
    this.config = config;
    this.protocol = protocol;
    this.counters = counters;
    for (int i = 0; i < peers.ioCount(); i++) {
      peers.io(i).onOneway((ch, env) -> flows.deliver(ch, env));
    }
  }

  @Override
  public CompletableFuture<Void> write(Layout layout, long offset, ByteBuf data) {
    int n = data.readableBytes();
    try {
      if (n < config.shortWriteMax()) {
        return shortWrite(layout, offset, data);
      }
      if (n <= config.eagerWriteMax()) {
        return eagerWrite(layout, offset, data);
      }
      return transfer(layout, Request.bytes(n), offset, n, data, null, true, Long.MAX_VALUE);
    } finally {
      data.release();
    }
  }

  @Override
  public CompletableFuture<Void> write(Layout layout, long[] starts, long[] lengths, ByteBuf data) {
    try {
      counters.increment("path.gathered.ops");
      counters.add("path.gathered.regions", starts.length);
      return transfer(layout, Request.hindexed(lengths, starts, Request.BYTE), 0, data.readableBytes(), data, null, true,
          Long.MAX_VALUE);
    } finally {
      data.release();
    }
  }

  @Override
  public CompletableFuture<Void> read(Layout layout, long offset, int length, ByteBuf dst) {
    int base = dst.writerIndex();
    dst.ensureWritable(length);
    dst.writerIndex(base + length);
    if (length <= config.eagerReadMax()) {
      dst.setZero(base, length);
      return eagerRead(layout, offset, length, dst, base);
    }
    return transfer(layout, Request.bytes(length), offset, length, dst.slice(base, length), null, false, offset + length);
  }

  /**
   * A read of more than an eager message's bytes flows into {@link MemViews}: the bytes stay in
   * the frames they arrived in, and the buffer returned is a composite of slices of them.
   */
  @Override
  public CompletableFuture<ByteBuf> readViews(Layout layout, long offset, int length, ByteBufAllocator alloc) {
    if (length <= config.eagerReadMax()) {
      return DataPath.super.readViews(layout, offset, length, alloc);
    }
    MemViews views = new MemViews(length);
    CompletableFuture<Void> moved;
    try {
      moved = transfer(layout, Request.bytes(length), offset, length, new MemEndpoint(views), null, false,
          offset + length, 0);
    } catch (RuntimeException e) {
      views.release();
      throw e;
    }
    return moved.whenComplete((v, err) -> {
      if (err != null) {
        views.release(); // every flow into them has ended
      }
    }).thenApply(v -> views.assemble(alloc));
  }

  private CompletableFuture<Void> shortWrite(Layout layout, long offset, ByteBuf data) {
    List<CompletableFuture<?>> sent = new ArrayList<>();
    for (StripeMap.Run r : StripeMap.runs(layout, offset, data.readableBytes(), Long.MAX_VALUE)) {
      Handle h = layout.datafiles().get(r.server());
      ByteBuf payload = gather(data, r);
      counters.increment("path.short.ops");
      counters.add("path.short.bytes", r.length());
      sent.add(peers.io(h.ioServer()).call(new WriteReq(h, r.physical(), payload)));
    }
    return CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new));
  }

  private CompletableFuture<Void> eagerWrite(Layout layout, long offset, ByteBuf data) {
    List<CompletableFuture<?>> sent = new ArrayList<>();
    for (StripeMap.Run r : StripeMap.runs(layout, offset, data.readableBytes(), Long.MAX_VALUE)) {
      Handle h = layout.datafiles().get(r.server());
      ByteBuf payload = gather(data, r);
      long tag = tags.incrementAndGet();
      counters.increment("path.eager-write.ops");
      counters.add("path.eager-write.bytes", r.length());
      sent.add(peers.io(h.ioServer()).conduit().thenCompose(c -> {
        CompletableFuture<?> answer = c.call(new EagerWriteReq(tag, h, r.physical(), (int) r.length()));
        c.send(tag, new EagerData(payload));
        return answer;
      }).whenComplete((v, err) -> {
        if (err != null && payload.refCnt() > 0) {
          payload.release(); // never sent (no connection)
        }
      }));
    }
    return CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new));
  }

  /** The bytes of one run, as slices of {@code data} (retained: the caller releases {@code data}). */
  private static ByteBuf gather(ByteBuf data, StripeMap.Run r) {
    int base = data.readerIndex();
    if (r.pieces().size() == 1) {
      StripeMap.Piece p = r.pieces().get(0);
      return data.retainedSlice(base + p.bufferOffset(), p.length());
    }
    var c = data.alloc().compositeDirectBuffer(r.pieces().size());
    for (StripeMap.Piece p : r.pieces()) {
      c.addComponent(true, data.retainedSlice(base + p.bufferOffset(), p.length()));
    }
    return c;
  }

  private CompletableFuture<Void> eagerRead(Layout layout, long offset, int length, ByteBuf dst, int base) {
    List<CompletableFuture<?>> got = new ArrayList<>();
    for (StripeMap.Run r : StripeMap.runs(layout, offset, length, Long.MAX_VALUE)) {
      Handle h = layout.datafiles().get(r.server());
      counters.increment("path.eager-read.ops");
      got.add(peers.io(h.ioServer()).call(new ReadReq(h, r.physical(), (int) r.length()))
          .thenAccept(resp -> place(resp, r, dst, base)));
    }
    return CompletableFuture.allOf(got.toArray(CompletableFuture[]::new));
  }

  /**
   * A read small enough for the eager path whose bytes all live on one server goes over a
   * connection of the calling thread's own ({@link org.flowfs.common.rpc.DirectClient}): no event
   * loop between the reader and the socket. Anything else as {@link #read}.
   */
  @Override
  public void readNow(Layout layout, long offset, int length, ByteBuf dst, Duration timeout) {
    List<StripeMap.Run> runs = length <= config.eagerReadMax() ? StripeMap.runs(layout, offset, length, Long.MAX_VALUE) : List.of();
    if (runs.size() != 1) {
      DataPath.super.readNow(layout, offset, length, dst, timeout);
      return;
    }
    StripeMap.Run r = runs.get(0);
    Handle h = layout.datafiles().get(r.server());
    counters.increment("path.eager-read.ops");
    counters.increment("path.direct-read.ops");
    ReadResp resp = peers.ioDirect(h.ioServer()).call(new ReadReq(h, r.physical(), (int) r.length()), timeout);
    int base = dst.writerIndex();
    dst.ensureWritable(length);
    dst.setZero(base, length);
    dst.writerIndex(base + length);
    place(resp, r, dst, base);
  }

  /** Copies the bytes of {@code resp}, an answer for run {@code r}, into their places in {@code dst}; releases it. */
  private void place(ReadResp resp, StripeMap.Run r, ByteBuf dst, int base) {
    try {
      ByteBuf bytes = resp.payload();
      int have = bytes.readableBytes();
      counters.add("path.eager-read.bytes", have);
      int at = 0;
      for (StripeMap.Piece p : r.pieces()) {
        if (at >= have) {
          break; // past the datafile's end: zeros
        }
        int k = Math.min(p.length(), have - at);
        dst.setBytes(base + p.bufferOffset(), bytes, bytes.readerIndex() + at, k);
        at += p.length();
      }
    } finally {
      resp.release();
    }
  }

  /** {@link #transfer(Layout, Request, long, long, ByteBuf, Request, boolean, long, long)} of a file without a head. */
  CompletableFuture<Void> transfer(Layout layout, Request fileReq, long fileReqOffset, long aggregate,
      ByteBuf mem, Request memReq, boolean write, long fsize) {
    return transfer(layout, fileReq, fileReqOffset, aggregate, mem, memReq, write, fsize, 0);
  }

  /**
   * Moves {@code aggregate} bytes of {@code fileReq} tiled from {@code fileReqOffset} between
   * {@code mem} (laid out by {@code memReq}, or contiguous from index 0) and the file, one flow
   * per server that holds some of them, all at once. A read stops at {@code fsize}. With {@code
   * head} above 0 the flows leave out the file's first {@code head} bytes (the metadata server's:
   * the caller moves those).
   */
  CompletableFuture<Void> transfer(Layout layout, Request fileReq, long fileReqOffset, long aggregate,
      ByteBuf mem, Request memReq, boolean write, long fsize, long head) {
    return transfer(layout, fileReq, fileReqOffset, aggregate, new MemEndpoint(mem), memReq, write, fsize, head);
  }

  /**
   * As above, with the memory as an endpoint: a buffer (retained while the flows use it) or, for
   * a read, {@link MemViews}.
   */
  private CompletableFuture<Void> transfer(Layout layout, Request fileReq, long fileReqOffset, long aggregate,
      MemEndpoint mem, Request memReq, boolean write, long fsize, long head) {
    Distribution dist = Distributions.of(layout.dist());
    int n = layout.serverCount();
    RequestSpec spec = RequestSpec.of(fileReq);
    List<CompletableFuture<?>> all = new ArrayList<>();
    for (int s = 0; s < n; s++) {
      FileData fd = FileData.forFlow(fsize, s, n, dist, head, write);
      FlowDescriptor d = flows.alloc()
          .type(protocol)
          .fileReq(fileReq)
          .fileReqOffset(fileReqOffset)
          .aggregateSize(aggregate)
          .memReq(memReq)
          .fileData(fd);
      long bytes = d.bytesForServer();
      if (bytes == 0) {
        continue; // this server holds none of it
      }
      Handle h = layout.datafiles().get(s);
      RpcClient io = peers.io(h.ioServer());
      long tag = tags.incrementAndGet();
      counters.increment("path.flow.ops");
      counters.add("path.flow.bytes", bytes);
      if (mem.buffer() != null) {
        mem.buffer().retain();
      }
      CompletableFuture<FlowDescriptor> done = io.conduit().thenCompose(c -> {
        d.tag(tag);
        FlowReq req = new FlowReq(tag, h, write, spec, fileReqOffset, aggregate, layout.dist(), d.fileData().serverNr(),
            n, write ? 0 : fsize, protocol, head);
        if (write) {
          // handshake first: the data may flow once the server said it is ready; the flow is
          // posted where the ack is read, so it is there for the server's FlowDone that follows
          return c.call(req, ack -> {
            if (ack.bytes() != bytes) {
              throw new FsException(Errno.EPROTO, "server expects " + ack.bytes() + " bytes, client has " + bytes);
            }
            d.src(mem).dest(new NetEndpoint(c.channel()));
            return flows.post(d);
          });
        }
        // a read: be ready for the data before asking for it
        d.src(new NetEndpoint(c.channel())).dest(mem);
        CompletableFuture<FlowDescriptor> f = flows.post(d);
        c.call(req).whenComplete((ack, err) -> {
          if (err != null) {
            flows.fail(d, Errno.from(err), "flow request failed: " + err.getMessage());
          } else if (ack.bytes() != bytes) {
            flows.fail(d, Errno.EPROTO, "server sends " + ack.bytes() + " bytes, client expects " + bytes);
          }
        });
        return f;
      });
      all.add(done.handle((fd2, err) -> {
        if (mem.buffer() != null) {
          mem.buffer().release();
        }
        if (err != null) {
          throw err instanceof RuntimeException re ? re : new FsException(Errno.from(err), err.getMessage(), err);
        }
        if (fd2.state() != FlowState.COMPLETE) {
          throw new FsException(fd2.errorCode(), "flow with ioserver " + h.ioServer() + " failed");
        }
        return null;
      }));
    }
    return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new));
  }
}
