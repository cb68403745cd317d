package org.flowfs.client.api;

import io.netty.buffer.ByteBuf;
import org.flowfs.common.datarep.Datarep;
import org.flowfs.common.datarep.Typemap;
import org.flowfs.common.request.RequestCursor;
import org.flowfs.common.request.RequestProcessor;
import org.flowfs.common.request.Segments;

/**
 * A transfer's data stream in one contiguous buffer, in file form: packing a memory buffer into it
 * (converting, or gathering along the memory datatype) and unpacking it back. For the transfers
 * that assemble data here (collective I/O, data sieving) rather than in the flows.
 */
final class Streams {
  private static final int SEGMAX = 1024;

  private Streams() {}

  /** Appends {@code mem}'s data in file form ({@code total} bytes) to {@code stream}. */
  static void pack(ViewState v, Memory mem, ByteBuf stream, long total) {
    Datarep rep = v.datarep;
    if (v.converts(true)) {
      long items = Math.multiplyExact(mem.count(), Typemap.items(mem.type()));
      int start = stream.writerIndex();
      long pos = 0;
      while (pos < items) {
        Conversions.Chunk ch = Conversions.chunk(rep, mem.type(), pos, items - pos, Integer.MAX_VALUE, true);
        rep.writeConversion(mem.region(), mem.type(), ch.items(), stream, pos);
        pos += ch.items();
      }
      if (stream.writerIndex() - start != total) {
        throw new IllegalStateException("datarep " + rep.name() + " wrote " + (stream.writerIndex() - start) + " of "
            + total + " bytes");
      }
      return;
    }
    RequestCursor cur = RequestCursor.of(mem.type(), 0, total);
    Segments segs = new Segments(SEGMAX);
    long pos = 0;
    while (pos < total) {
      RequestProcessor.processMemory(cur, SEGMAX, segs, pos, total - pos);
      for (int i = 0; i < segs.count(); i++) {
        stream.writeBytes(mem.region(), (int) segs.offset(i), (int) segs.size(i));
      }
      pos += segs.bytes();
    }
  }

  /**
   * Stores the first {@code valid} bytes of {@code stream} (from index 0) into {@code mem},
   * converting whole values only; returns the memory bytes filled.
   */
  static long unpack(ViewState v, Memory mem, ByteBuf stream, long valid) {
    Datarep rep = v.datarep;
    if (v.converts(false)) {
      long items = Math.multiplyExact(mem.count(), Typemap.items(mem.type()));
      long pos = 0;
      long filled = 0;
      long left = valid;
      stream.readerIndex(0).writerIndex((int) valid);
      while (pos < items) {
        Conversions.Chunk ch = Conversions.chunk(rep, mem.type(), pos, items - pos, left, false);
        if (ch.items() == 0) {
          break;
        }
        rep.readConversion(mem.region(), mem.type(), ch.items(), stream, pos);
        pos += ch.items();
        filled += ch.memBytes();
        left -= ch.fileBytes();
      }
      return filled;
    }
    RequestCursor cur = RequestCursor.of(mem.type(), 0, mem.dataBytes());
    Segments segs = new Segments(SEGMAX);
    long pos = 0;
    while (pos < valid) {
      RequestProcessor.processMemory(cur, SEGMAX, segs, pos, valid - pos);
      for (int i = 0; i < segs.count(); i++) {
        mem.region().setBytes((int) segs.offset(i), stream, (int) pos, (int) segs.size(i));
        pos += segs.size(i);
      }
    }
    return valid;
  }
}
