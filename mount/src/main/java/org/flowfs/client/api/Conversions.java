package org.flowfs.client.api;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.common.datarep.Datarep;
import org.flowfs.common.datarep.Typemap;
import org.flowfs.common.request.Elementary;
import org.flowfs.common.request.Request;

/**
 * Transfers through a converting datarep (seed 002): the values are converted chunk by chunk
 * through a buffer of at most the conversion buffer size, each chunk moved by one typed transfer
 * (one flow per server), the conversion function called once per chunk with the position of the
 * chunk's first value in the tiled memory datatype. Two chunks are in flight at once, so
 * converting one overlaps moving the other. Runs on the calling thread and blocks it.
 */
final class Conversions {
  private static final int DEPTH = 2;

  private Conversions() {}

  /** {@code items} values: {@code fileBytes} in the file, {@code memBytes} in memory. */
  record Chunk(int items, long fileBytes, long memBytes) {}

  /**
   * The values from {@code pos} on (at most {@code left}) whose file form fits in {@code budget}
   * bytes; at least one if {@code atLeastOne}.
   */
  static Chunk chunk(Datarep rep, Request type, long pos, long left, long budget, boolean atLeastOne) {
    long max = Math.min(left, Integer.MAX_VALUE);
    Optional<Elementary> one = type.elementType();
    if (one.isPresent()) {
      long fe = rep.fileExtent(one.get());
      long n = Math.min(max, budget / fe);
      if (atLeastOne) {
        n = Math.max(1, n);
      }
      return new Chunk((int) n, n * fe, n * one.get().size());
    }
    long[] acc = new long[3];
    Typemap.forEach(type, pos, max, (off, e) -> {
      long fe = rep.fileExtent(e);
      if (acc[1] + fe > budget && !(atLeastOne && acc[0] == 0)) {
        return false;
      }
      acc[0]++;
      acc[1] += fe;
      acc[2] += e.size();
      return true;
    });
    return new Chunk((int) acc[0], acc[1], acc[2]);
  }

  /** Writes {@code m} converted, from stream byte {@code at} of the view; returns its data bytes. */
  static long write(FileSystemClient client, OpenFile file, ViewState v, long at, Memory m, long budget,
      ByteBufAllocator alloc) {
    Datarep rep = v.datarep;
    Request type = m.type();
    long items = Math.multiplyExact(m.count(), Typemap.items(type));
    Deque<CompletableFuture<Void>> inflight = new ArrayDeque<>();
    long pos = 0;
    try {
      while (pos < items) {
        Chunk c = chunk(rep, type, pos, items - pos, budget, true);
        ByteBuf fb = alloc.directBuffer((int) c.fileBytes(), (int) c.fileBytes());
        try {
          rep.writeConversion(m.region(), type, c.items(), fb, pos);
          if (fb.readableBytes() != c.fileBytes()) {
            throw new IllegalStateException("datarep " + rep.name() + " wrote " + fb.readableBytes() + " bytes for "
                + c.items() + " values, their file extents add up to " + c.fileBytes());
          }
        } catch (RuntimeException e) {
          fb.release();
          throw e;
        }
        Slices.Placed p = v.slice(at, c.fileBytes());
        CompletableFuture<Void> f;
        try {
          f = client.writeAsync(file, p.request(), p.displacement(), c.fileBytes(), fb, null);
        } catch (RuntimeException e) {
          fb.release();
          throw e;
        }
        inflight.add(f.whenComplete((x, err) -> fb.release()));
        if (inflight.size() >= DEPTH) {
          Futures.join(inflight.poll());
        }
        pos += c.items();
        at += c.fileBytes();
      }
      while (!inflight.isEmpty()) {
        Futures.join(inflight.poll());
      }
    } finally {
      inflight.forEach(f -> f.exceptionally(e -> null).join()); // after a failure: let the rest finish
    }
    return m.dataBytes();
  }

  /** A chunk being read: its values, its buffer, and how many file bytes arrived. */
  private record Pending(long pos, Chunk chunk, ByteBuf buf, CompletableFuture<Long> got) {}

  /**
   * Reads into {@code m} converted, from stream byte {@code at} of the view; returns the memory
   * bytes filled (fewer at the end of the file: whole values only).
   */
  static long read(FileSystemClient client, OpenFile file, ViewState v, long at, Memory m, long budget,
      ByteBufAllocator alloc) {
    Datarep rep = v.datarep;
    Request type = m.type();
    long items = Math.multiplyExact(m.count(), Typemap.items(type));
    Deque<Pending> inflight = new ArrayDeque<>();
    long posted = 0;
    long filled = 0;
    boolean eof = false;
    try {
      while (!eof && (posted < items || !inflight.isEmpty())) {
        while (posted < items && inflight.size() < DEPTH) {
          Chunk c = chunk(rep, type, posted, items - posted, budget, true);
          ByteBuf fb = alloc.directBuffer((int) c.fileBytes(), (int) c.fileBytes());
          Slices.Placed p = v.slice(at, c.fileBytes());
          CompletableFuture<Long> got;
          try {
            got = client.readAsync(file, p.request(), p.displacement(), c.fileBytes(), fb, null);
          } catch (RuntimeException e) {
            fb.release();
            throw e;
          }
          inflight.add(new Pending(posted, c, fb, got));
          posted += c.items();
          at += c.fileBytes();
        }
        Pending p = inflight.poll();
        try {
          long got = Futures.join(p.got());
          Chunk c = p.chunk();
          if (got < c.fileBytes()) {
            eof = true;
            c = chunk(rep, type, p.pos(), c.items(), got, false);
          }
          if (c.items() > 0) {
            ByteBuf fb = p.buf();
            fb.writerIndex((int) c.fileBytes());
            rep.readConversion(m.region(), type, c.items(), fb, p.pos());
            filled += c.memBytes();
          }
        } finally {
          p.buf().release();
        }
      }
    } finally {
      for (Pending p : inflight) {
        p.got().exceptionally(e -> 0L).join();
        p.buf().release();
      }
    }
    return filled;
  }
}
