package org.flowfs.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.flowfs.common.Counters;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.flow.MemEndpoint;
import org.flowfs.common.request.Request;
import org.flowfs.common.rpc.Peers;
import org.flowfs.common.wire.MetaOp.HeadReadReq;
import org.flowfs.common.wire.MetaOp.HeadReadResp;
import org.flowfs.common.wire.MetaOp.HeadWriteReq;

/**
 * The data path of one file with a head ({@link Layout#headBytes()}): bytes below the head's end
 * move to and from the metadata server ({@code HeadWriteReq}, {@code HeadReadReq}), the rest by
 * {@code datafiles}, the path to the I/O servers. A call that straddles the boundary goes both ways
 * at once. A read that lies in the head and is waited for goes over the calling thread's own
 * connection to the metadata server, like a small read from one I/O server.
 *
 * <p>Counters {@code path.head.{writes,reads,bytes-written,bytes-read}}; a read on the caller's
 * own connection also counts in {@code path.direct-read.ops}.
 */
final class HeadDataPath implements DataPath {
  private final FlowDataPath datafiles;
  private final Handle file;
  private final Peers peers;
  private final Counters counters;
  /** This client's leases: a file made under one is on the metadata server once its batch is answered (null: none). */
  private final DirLeases leases;

  HeadDataPath(FlowDataPath datafiles, Handle file, Peers peers, Counters counters) {
    this(datafiles, file, peers, counters, null);
  }

  HeadDataPath(FlowDataPath datafiles, Handle file, Peers peers, Counters counters, DirLeases leases) {
    this.datafiles = datafiles;
    this.file = file;
    this.peers = peers;
    this.counters = counters;
    this.leases = leases;
  }

  /** Sends {@code req} about this file's head once the metadata server has the file (see {@link DirLeases#settled}). */
  private <R extends org.flowfs.common.wire.Message> CompletableFuture<R> meta(org.flowfs.common.wire.Req<R> req) {
    CompletableFuture<Void> ready = leases == null ? null : leases.settled(file);
    if (ready == null || ready.isDone() && !ready.isCompletedExceptionally()) {
      return peers.meta().call(req);
    }
    return ready.handle((v, err) -> {
      if (err != null) {
        org.flowfs.common.wire.HasPayload.releaseIfAny(req);
        throw err instanceof RuntimeException re ? re : new java.util.concurrent.CompletionException(err);
      }
      return peers.meta().call(req);
    }).thenCompose(f -> f);
  }

  @Override
  public CompletableFuture<Void> write(Layout layout, long offset, ByteBuf data) {
    long head = layout.headBytes();
    if (offset >= head) {
      return datafiles.write(layout, offset, data);
    }
    try {
      int n = data.readableBytes();
      int inHead = (int) Math.min(n, head - offset);
      CompletableFuture<Void> h = writeHead(offset, data.retainedSlice(data.readerIndex(), inHead));
      if (inHead == n) {
        return h;
      }
      CompletableFuture<Void> rest = datafiles.write(layout, offset + inHead,
          data.retainedSlice(data.readerIndex() + inHead, n - inHead));
      return CompletableFuture.allOf(h, rest);
    } finally {
      data.release();
    }
  }

  @Override
  public CompletableFuture<Void> write(Layout layout, long[] starts, long[] lengths, ByteBuf data) {
    long head = layout.headBytes();
    if (starts[0] >= head) {
      return datafiles.write(layout, starts, lengths, data);
    }
    try {
      List<CompletableFuture<Void>> sent = new ArrayList<>();
      int base = data.readerIndex();
      int at = 0; // where region i's bytes start in data
      int i = 0;
      for (; i < starts.length && starts[i] < head; i++) {
        int inHead = (int) Math.min(lengths[i], head - starts[i]);
        sent.add(writeHead(starts[i], data.retainedSlice(base + at, inHead)));
        if (inHead < lengths[i]) { // straddles the boundary: the rest goes with the regions above it
          break;
        }
        at += (int) lengths[i];
      }
      if (i < starts.length) {
        int restCount = starts.length - i;
        long[] s = new long[restCount];
        long[] l = new long[restCount];
        System.arraycopy(starts, i, s, 0, restCount);
        System.arraycopy(lengths, i, l, 0, restCount);
        if (s[0] < head) {
          l[0] -= head - s[0];
          at += (int) (head - s[0]);
          s[0] = head;
        }
        ByteBuf rest = data.retainedSlice(base + at, data.readableBytes() - at);
        sent.add(restCount == 1 ? datafiles.write(layout, s[0], rest) : datafiles.write(layout, s, l, rest));
      }
      return CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new));
    } finally {
      data.release();
    }
  }

  @Override
  public CompletableFuture<Void> read(Layout layout, long offset, int length, ByteBuf dst) {
    long head = layout.headBytes();
    if (offset >= head) {
      return datafiles.read(layout, offset, length, dst);
    }
    int base = dst.writerIndex();
    int inHead = (int) Math.min(length, head - offset);
    dst.ensureWritable(length);
    dst.setZero(base, inHead);
    dst.writerIndex(base + inHead);
    CompletableFuture<Void> h = meta(new HeadReadReq(file, offset, inHead))
        .thenAccept(resp -> place(resp, dst, base));
    if (inHead == length) {
      return h;
    }
    return CompletableFuture.allOf(h, datafiles.read(layout, offset + inHead, length - inHead, dst));
  }

  @Override
  public CompletableFuture<ByteBuf> readViews(Layout layout, long offset, int length, ByteBufAllocator alloc) {
    if (offset >= layout.headBytes()) {
      return datafiles.readViews(layout, offset, length, alloc);
    }
    return DataPath.super.readViews(layout, offset, length, alloc);
  }

  @Override
  public void readNow(Layout layout, long offset, int length, ByteBuf dst, Duration timeout) {
    if (offset >= layout.headBytes()) {
      datafiles.readNow(layout, offset, length, dst, timeout);
      return;
    }
    if (offset + length > layout.headBytes()) {
      DataPath.super.readNow(layout, offset, length, dst, timeout);
      return;
    }
    int base = dst.writerIndex();
    dst.ensureWritable(length);
    dst.setZero(base, length);
    dst.writerIndex(base + length);
    counters.increment("path.direct-read.ops");
    if (leases != null) {
      leases.settle(file);
    }
    place(peers.metaDirect().call(new HeadReadReq(file, offset, length), timeout), dst, base);
  }

  /**
   * A typed transfer ({@link FlowDataPath#transfer}) on this file: the flows to the I/O servers move
   * the request's bytes past the head, and the head's bytes go to the metadata server, or come from
   * it into their places in memory once the flows are done.
   */
  CompletableFuture<Void> transfer(Layout layout, Request fileReq, long displacement,
      long aggregate, ByteBuf mem, Request memReq, boolean write, long fsize) {
    List<HeadPieces.Piece> pieces = HeadPieces.of(fileReq, displacement, aggregate, memReq, layout.headBytes(),
        fsize, write);
    CompletableFuture<Void> moved = datafiles.transfer(layout, fileReq, displacement, aggregate, mem, memReq, write, fsize,
        layout.headBytes());
    if (pieces.isEmpty()) {
      return moved;
    }
    if (write) {
      List<CompletableFuture<Void>> sent = new ArrayList<>();
      sent.add(moved);
      for (int i = 0; i < pieces.size(); ) {
        int j = i + 1; // pieces i..j-1 follow each other in the file: one write
        while (j < pieces.size() && pieces.get(j).file() == pieces.get(j - 1).file() + pieces.get(j - 1).length()) {
          j++;
        }
        sent.add(writeHead(pieces.get(i).file(), gather(mem, pieces.subList(i, j))));
        i = j;
      }
      return CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new));
    }
    long from = Long.MAX_VALUE;
    long to = 0;
    for (HeadPieces.Piece p : pieces) {
      from = Math.min(from, p.file());
      to = Math.max(to, p.file() + p.length());
    }
    long start = from;
    CompletableFuture<HeadReadResp> head = meta(new HeadReadReq(file, from, (int) (to - from)));
    return moved.handle((v, err) -> err).thenCombine(head, (err, resp) -> {
      try {
        if (err != null) {
          throw err instanceof RuntimeException re ? re : new java.util.concurrent.CompletionException(err);
        }
        ByteBuf bytes = resp.payload();
        counters.increment("path.head.reads");
        counters.add("path.head.bytes-read", bytes.readableBytes());
        for (HeadPieces.Piece p : pieces) {
          int at = (int) (p.file() - start);
          int have = Math.max(0, Math.min(p.length(), bytes.readableBytes() - at));
          int dst = MemEndpoint.index(mem, p.mem(), p.length());
          mem.setBytes(dst, bytes, bytes.readerIndex() + at, have);
          mem.setZero(dst + have, p.length() - have);
        }
        return null;
      } finally {
        resp.release();
      }
    });
  }

  /** The memory of {@code pieces} as one buffer of retained slices of {@code mem}. */
  private static ByteBuf gather(ByteBuf mem, List<HeadPieces.Piece> pieces) {
    if (pieces.size() == 1) {
      HeadPieces.Piece p = pieces.get(0);
      return mem.retainedSlice(MemEndpoint.index(mem, p.mem(), p.length()), p.length());
    }
    var c = mem.alloc().compositeBuffer(pieces.size());
    for (HeadPieces.Piece p : pieces) {
      c.addComponent(true, mem.retainedSlice(MemEndpoint.index(mem, p.mem(), p.length()), p.length()));
    }
    return c;
  }


  private CompletableFuture<Void> writeHead(long offset, ByteBuf bytes) {
    counters.increment("path.head.writes");
    counters.add("path.head.bytes-written", bytes.readableBytes());
    return meta(new HeadWriteReq(file, offset, bytes)).thenAccept(ok -> { });
  }

  /** Copies the bytes of {@code resp} (fewer than asked past the head's stored end) to {@code base} of {@code dst}. */
  private void place(HeadReadResp resp, ByteBuf dst, int base) {
    try {
      ByteBuf bytes = resp.payload();
      counters.increment("path.head.reads");
      counters.add("path.head.bytes-read", bytes.readableBytes());
      dst.setBytes(base, bytes, bytes.readerIndex(), bytes.readableBytes());
    } finally {
      resp.release();
    }
  }
}
