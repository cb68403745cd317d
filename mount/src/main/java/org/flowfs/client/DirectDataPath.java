package org.flowfs.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.flowfs.common.Counters;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.rpc.Peers;
import org.flowfs.common.wire.IoOp.ReadReq;
import org.flowfs.common.wire.IoOp.WriteReq;

/**
 * The data path that sends each datafile run as one write or read request with the bytes inside
 * it. Payloads are slices of the caller's buffer: nothing is copied on the way to the socket.
 */
final class DirectDataPath implements DataPath {
  private final Peers peers;
  private final long maxRun;
  private final Counters counters;

  DirectDataPath(Peers peers, long maxRun, Counters counters) {
    this.peers = peers;
    this.maxRun = maxRun;
    this.counters = counters;
  }

  @Override
  public CompletableFuture<Void> write(Layout layout, long offset, ByteBuf data) {
    try {
      List<StripeMap.Run> runs = StripeMap.runs(layout, offset, data.readableBytes(), maxRun);
      CompletableFuture<?>[] sent = new CompletableFuture<?>[runs.size()];
      int base = data.readerIndex();
      for (int i = 0; i < sent.length; i++) {
        StripeMap.Run r = runs.get(i);
        ByteBuf payload;
        if (r.pieces().size() == 1) {
          StripeMap.Piece p = r.pieces().get(0);
          payload = data.retainedSlice(base + p.bufferOffset(), p.length());
        } else {
          CompositeByteBuf c = data.alloc().compositeDirectBuffer(r.pieces().size());
          for (StripeMap.Piece p : r.pieces()) {
            c.addComponent(true, data.retainedSlice(base + p.bufferOffset(), p.length()));
          }
          payload = c;
        }
        Handle h = layout.datafiles().get(r.server());
        counters.increment("write.requests");
        counters.add("write.bytes", r.length());
        sent[i] = peers.io(h.ioServer()).call(new WriteReq(h, r.physical(), payload));
      }
      return CompletableFuture.allOf(sent);
    } finally {
      data.release();
    }
  }

  @Override
  public CompletableFuture<Void> read(Layout layout, long offset, int length, ByteBuf dst) {
    int base = dst.writerIndex();
    dst.ensureWritable(length);
    dst.setZero(base, length);
    dst.writerIndex(base + length);
    List<StripeMap.Run> runs = StripeMap.runs(layout, offset, length, maxRun);
    CompletableFuture<?>[] got = new CompletableFuture<?>[runs.size()];
    for (int i = 0; i < got.length; i++) {
      StripeMap.Run r = runs.get(i);
      Handle h = layout.datafiles().get(r.server());
      counters.increment("read.requests");
      got[i] = peers.io(h.ioServer()).call(new ReadReq(h, r.physical(), (int) r.length())).thenAccept(resp -> {
        try {
          ByteBuf bytes = resp.payload();
          int have = bytes.readableBytes();
          int at = 0;
          for (StripeMap.Piece p : r.pieces()) {
            if (at >= have) {
              break; // the rest is past the datafile's end: zeros
            }
            int n = Math.min(p.length(), have - at);
            dst.setBytes(base + p.bufferOffset(), bytes, bytes.readerIndex() + at, n);
            at += p.length();
          }
          counters.add("read.bytes", have);
        } finally {
          resp.release();
        }
      });
    }
    return CompletableFuture.allOf(got);
  }
}
