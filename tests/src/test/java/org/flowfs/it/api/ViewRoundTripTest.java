package org.flowfs.it.api;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.flowfs.client.api.AccessMode;
import org.flowfs.client.api.FlowFile;
import org.flowfs.client.api.Hints;
import org.flowfs.client.api.Memory;
import org.flowfs.client.api.View;
import org.flowfs.common.request.Request;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every datatype constructor as a filetype under a view, with contiguous and noncontiguous memory,
 * over files striped on 1 and 4 servers: a write at an etype offset in the middle of a filetype
 * instance, then the raw file against an in-memory image computed from the typemaps, then a read
 * through the view against the memory written. Each access moves in at most one flow per server,
 * and never in short or eager messages; from a displacement in the file's head (its first 64 KiB,
 * the metadata server's) it moves there and in no flow, from one past it in at least one flow.
 */
class ViewRoundTripTest {
  static ApiCluster c;
  static final AtomicInteger files = new AtomicInteger();

  @BeforeAll
  static void up(@TempDir Path dir) throws Exception {
    c = new ApiCluster(dir);
  }

  @AfterAll
  static void down() {
    if (c != null) {
      c.close();
    }
  }

  /** A filetype, its etype, and a name for the report. */
  record Case(String name, Request etype, Request filetype) {
    @Override
    public String toString() {
      return name;
    }
  }

  static Stream<Arguments> cases() {
    List<Case> types = List.of(
        new Case("contiguous(dense)", Request.INT32, Request.contiguous(6, Request.INT32)),
        new Case("contiguous", Request.INT64, Request.contiguous(3, Request.vector(2, 1, 2, Request.INT64))),
        new Case("vector", Request.INT32, Request.vector(4, 2, 5, Request.INT32)),
        new Case("hvector", Request.INT64, Request.hvector(3, 2, 40, Request.INT64)),
        new Case("indexed", Request.DOUBLE, Request.indexed(new long[] {2, 1, 3}, new long[] {0, 4, 7}, Request.DOUBLE)),
        new Case("hindexed", Request.INT32, Request.hindexed(new long[] {1, 2}, new long[] {4, 32}, Request.INT32)),
        new Case("struct", Request.BYTE,
            Request.struct(new long[] {1, 2, 1}, new long[] {0, 8, 32}, Request.INT32, Request.DOUBLE, Request.INT16)),
        new Case("subarray(C)", Request.INT32,
            Request.subarray(new long[] {8, 12}, new long[] {3, 5}, new long[] {2, 4}, Request.Order.C, Request.INT32)),
        new Case("subarray(Fortran)", Request.INT16,
            Request.subarray(new long[] {8, 12}, new long[] {3, 5}, new long[] {2, 4}, Request.Order.FORTRAN, Request.INT16)),
        new Case("resized", Request.INT32, Request.resized(0, 48, Request.contiguous(3, Request.INT32))));
    List<Arguments> out = new ArrayList<>();
    for (Case t : types) {
      for (int servers : new int[] {1, 4}) {
        for (long disp : new long[] {100, 70_000}) {
          out.add(Arguments.of(t, servers, false, disp));
          out.add(Arguments.of(t, servers, true, disp));
        }
      }
    }
    return out.stream();
  }

  @ParameterizedTest(name = "{0} over {1} server(s), noncontiguous memory {2}, displacement {3}")
  @MethodSource("cases")
  void writeAtOffset_thenFileAndReadBack_matchTheReference(Case t, int servers, boolean noncontiguousMemory, long disp) {
    Request e = t.etype();
    long head = c.cluster.config().layout().headBytes();
    long etypesPerTile = t.filetype().size() / e.size();
    long offset = etypesPerTile / 2 + 1; // starts inside the first instance
    long count = etypesPerTile * 3 + etypesPerTile / 2 + 1;
    long n = count * e.size();
    Request memType = noncontiguousMemory ? Request.resized(0, 2 * e.size() + 3, e) : e;
    int memSize = (int) ((count - 1) * memType.extent() + e.size());

    Random rnd = new Random(t.name().hashCode() * 31L + servers);
    byte[] mem = new byte[memSize];
    rnd.nextBytes(mem);
    long[] fileOff = Reference.offsets(t.filetype(), disp, offset * e.size(), n);
    long end = Reference.end(fileOff);
    byte[] image = new byte[(int) end];
    long[] memOff = Reference.offsets(memType, 0, 0, n);
    for (int k = 0; k < n; k++) {
      image[(int) fileOff[k]] = mem[(int) memOff[k]];
    }

    String path = "/view-" + files.incrementAndGet();
    Hints hints = Hints.of(Hints.STRIPING_FACTOR, Integer.toString(servers), Hints.STRIPING_UNIT, "64");
    try (FlowFile f = c.io.open(path, EnumSet.of(AccessMode.CREATE, AccessMode.READ_WRITE, AccessMode.DELETE_ON_CLOSE), hints)) {
      assertEquals(Integer.toString(servers), f.hints().get(Hints.STRIPING_FACTOR).orElseThrow());
      View view = View.of(disp, e, t.filetype());
      f.setView(view);
      long flows = c.client.counters().get("path.flow.ops");
      long heads = c.client.counters().get("path.head.writes");
      long small = c.client.counters().get("path.short.ops") + c.client.counters().get("path.eager-write.ops");
      assertEquals(n, f.writeAt(offset, Memory.of(Unpooled.wrappedBuffer(mem), count, memType)));
      long used = c.client.counters().get("path.flow.ops") - flows;
      assertTrue(end > head ? used >= 1 && used <= servers : used == 0, used + " flows for one access over " + servers + " server(s)");
      assertEquals(disp < head, c.client.counters().get("path.head.writes") > heads, "head bytes went to the metadata server");
      assertEquals(small, c.client.counters().get("path.short.ops") + c.client.counters().get("path.eager-write.ops"));
      assertEquals(end, f.size(), "file size");

      // the raw bytes of the file, through the default view and a java.nio buffer
      f.setView(View.BYTES);
      ByteBuffer raw = ByteBuffer.allocateDirect((int) end);
      assertEquals(end, f.readAt(0, Memory.bytes(raw)));
      byte[] got = new byte[(int) end];
      raw.get(got);
      assertArrayEquals(image, got, "file bytes");

      // back through the view, into the same memory layout
      f.setView(view);
      ByteBuf back = Unpooled.buffer(memSize, memSize).writeZero(memSize);
      flows = c.client.counters().get("path.flow.ops");
      assertEquals(n, f.readAt(offset, Memory.of(back, count, memType)));
      used = c.client.counters().get("path.flow.ops") - flows;
      assertTrue(end > head ? used >= 1 && used <= servers : used == 0, used + " flows for one read over " + servers + " server(s)");
      for (int k = 0; k < n; k++) {
        assertEquals(mem[(int) memOff[k]], back.getByte((int) memOff[k]), "memory byte " + memOff[k]);
      }

      // and by data sieving, in windows smaller than the access, past the end of the file too
      try (FlowFile s = c.io.open(path, EnumSet.of(AccessMode.READ_ONLY),
          Hints.of(Hints.DS_READ, "enable", Hints.IND_RD_BUFFER_SIZE, "100"))) {
        s.setView(view);
        ByteBuf sieved = Unpooled.buffer(memSize, memSize).writeZero(memSize);
        assertEquals(n, s.readAt(offset, Memory.of(sieved, count, memType)));
        assertEquals(back, sieved);
        sieved.writeZero(0).setZero(0, memSize);
        long tail = count - 1; // the last etype written, and one past the end of the file
        assertEquals(e.size(), s.readAtAsync(offset + tail, Memory.of(sieved, 2, memType)).join());
      }
    }
  }
}
