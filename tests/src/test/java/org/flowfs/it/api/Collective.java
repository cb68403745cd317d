package org.flowfs.it.api;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.flowfs.client.api.FlowFile;
import org.flowfs.client.api.Memory;
import org.flowfs.client.api.View;
import org.flowfs.common.datarep.NativeOrder;
import org.flowfs.common.request.Request;

/**
 * The collective workload of the tests: a {@code ROWS x COLS} matrix of int64 in C order, split
 * over a grid of ranks in blocks; every rank holds its block with a one-element halo in memory (so
 * its memory datatype is noncontiguous too) and writes or reads it with one collective call.
 */
final class Collective {
  static final int ROWS = 64;
  static final int COLS = 48;

  private Collective() {}

  /** The value of element (i, j). */
  static long value(int i, int j) {
    return 1_000_000L * i + j + 7;
  }

  /** Rank {@code rank}'s block in a {@code gr x gc} grid: {row0, col0, rows, cols}. */
  static int[] block(int rank, int size) {
    int gr = size >= 4 ? 2 : 1;
    int gc = size / gr;
    int r = rank / gc;
    int cidx = rank % gc;
    int rows = ROWS / gr;
    int cols = COLS / gc;
    return new int[] {r * rows, cidx * cols, rows, cols};
  }

  /** The rank's part of the file: its block of the matrix. */
  static View view(int rank, int size, String datarep) {
    int[] b = block(rank, size);
    Request sub = Request.subarray(new long[] {ROWS, COLS}, new long[] {b[2], b[3]}, new long[] {b[0], b[1]},
        Request.Order.C, Request.INT64);
    return View.of(0, Request.INT64, sub, datarep);
  }

  /** The rank's block inside its halo'd local array. */
  static Request memType(int rank, int size) {
    int[] b = block(rank, size);
    return Request.subarray(new long[] {b[2] + 2, b[3] + 2}, new long[] {b[2], b[3]}, new long[] {1, 1},
        Request.Order.C, Request.INT64);
  }

  static ByteBuf local(int rank, int size, boolean filled) {
    int[] b = block(rank, size);
    int n = (b[2] + 2) * (b[3] + 2) * 8;
    ByteBuf buf = Unpooled.buffer(n, n).writeZero(n);
    if (filled) {
      for (int i = 0; i < b[2]; i++) {
        for (int j = 0; j < b[3]; j++) {
          NativeOrder.setLong(buf, ((i + 1) * (b[3] + 2) + j + 1) * 8, value(b[0] + i, b[1] + j));
        }
      }
    }
    return buf;
  }

  /** Writes the rank's block collectively. */
  static void write(FlowFile f, int rank, int size, String datarep) {
    f.setView(view(rank, size, datarep));
    f.writeAtAll(0, Memory.of(local(rank, size, true), 1, memType(rank, size)));
  }

  /** Reads the rank's block collectively; returns the first mismatch or null. */
  static String readAndCheck(FlowFile f, int rank, int size, String datarep) {
    f.setView(view(rank, size, datarep));
    ByteBuf buf = local(rank, size, false);
    int[] b = block(rank, size);
    long got = f.readAtAll(0, Memory.of(buf, 1, memType(rank, size)));
    if (got != 8L * b[2] * b[3]) {
      return "rank " + rank + " read " + got + " bytes";
    }
    for (int i = 0; i < b[2] + 2; i++) {
      for (int j = 0; j < b[3] + 2; j++) {
        boolean inside = i >= 1 && j >= 1 && i <= b[2] && j <= b[3];
        long want = inside ? value(b[0] + i - 1, b[1] + j - 1) : 0;
        long have = NativeOrder.getLong(buf, (i * (b[3] + 2) + j) * 8);
        if (have != want) {
          return "rank " + rank + " local (" + i + "," + j + "): " + have + " != " + want;
        }
      }
    }
    return null;
  }
}
