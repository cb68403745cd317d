package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.flowfs.cli.EmbeddedCluster;
import org.flowfs.client.Caller;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.common.DistSpec;
import org.flowfs.common.dist.Basic;
import org.flowfs.common.dist.SimpleStripe;
import org.flowfs.common.dist.VarStrip;
import org.flowfs.common.request.Request;
import org.flowfs.common.rpc.NetRuntime;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * Noncontiguous writes and reads through the client API (no FUSE): file requests built from every
 * kind of datatype, contiguous and noncontiguous memory, 1, 2 and 4 servers, every distribution,
 * each checked against an in-memory image of the file computed from the datatypes' typemaps.
 */
class TypedIoTest {
  static EmbeddedCluster cluster;
  static NetRuntime net;
  static FileSystemClient fs;
  static final AtomicInteger files = new AtomicInteger();

  @BeforeAll
  static void up(@TempDir Path dir) throws Exception {
    cluster = EmbeddedCluster.create(dir, 4, 0);
    net = NetRuntime.create("typed-client", 2);
    fs = new FileSystemClient(cluster.config(), net);
  }

  @AfterAll
  static void down() {
    if (fs != null) {
      fs.close();
    }
    if (net != null) {
      net.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  static Stream<Arguments> cases() {
    List<Request> fileReqs = List.of(
        Request.vector(300, 3, 7, Request.INT32),
        Request.indexed(new long[] {2, 5, 1, 40}, new long[] {0, 7, 20, 30}, Request.DOUBLE),
        Request.struct(new long[] {1, 2, 1}, new long[] {0, 8, 40}, Request.INT32, Request.DOUBLE, Request.INT8),
        Request.subarray(new long[] {64, 96}, new long[] {20, 30}, new long[] {5, 11}, Request.Order.C, Request.INT16),
        Request.subarray(new long[] {64, 96}, new long[] {20, 30}, new long[] {5, 11}, Request.Order.FORTRAN, Request.INT16),
        Request.hvector(100, 2, 1000, Request.contiguous(3, Request.INT64)),
        Request.resized(0, 100, Request.contiguous(7, Request.INT8)));
    List<DistSpec> dists = List.of(new SimpleStripe(4096).spec(), new Basic().spec(), DistSpec.of(VarStrip.NAME, 4096, 12288, 8192));
    List<Arguments> out = new ArrayList<>();
    for (Request r : fileReqs) {
      for (DistSpec d : dists) {
        for (int servers : new int[] {1, 2, 4}) {
          for (long disp : new long[] {4000, PAST_HEAD}) {
            out.add(Arguments.of(r, d, servers, false, disp));
            out.add(Arguments.of(r, d, servers, true, disp));
          }
        }
      }
    }
    return out.stream();
  }

  /** The byte offsets of the first {@code n} data bytes of {@code req} tiled from {@code disp}. */
  static long[] offsets(Request req, long disp, long n) {
    long[] out = new long[(int) n];
    int[] k = {0};
    for (long tile = 0; k[0] < n; tile++) {
      req.forEachElement(disp + tile * req.extent(), (off, type) -> {
        for (int b = 0; b < type.size() && k[0] < n; b++) {
          out[k[0]++] = off + b;
        }
        return k[0] < n;
      });
    }
    return out;
  }

  /**
   * A displacement past the head (the first 64 KiB of a file, the metadata server's): a request tiled
   * from there moves every byte in flows; from 4,000 most requests lie in the head or straddle it.
   */
  static final long PAST_HEAD = 70_000;

  @ParameterizedTest(name = "{0} over {2} server(s) of {1}, noncontiguous memory {3}, from {4}")
  @MethodSource("cases")
  void typedWriteAndRead_matchTheTypemap(Request fileReq, DistSpec dist, int servers, boolean noncontiguousMemory,
      long disp) {
    long aggregate = fileReq.size() * 3 + fileReq.size() / 2; // tiled, ending mid-instance
    Request memReq = noncontiguousMemory ? Request.hvector(1, 5, 9, Request.INT8) : null;
    long[] fileOff = offsets(fileReq, disp, aggregate);
    long[] memOff = memReq == null ? null : offsets(memReq, 0, aggregate);
    int memSize = (int) (memReq == null ? aggregate : java.util.Arrays.stream(memOff).max().getAsLong() + 1);

    Random rnd = new Random(fileReq.hashCode() * 31L + servers);
    byte[] stream = new byte[(int) aggregate];
    rnd.nextBytes(stream);
    ByteBuf mem = Unpooled.buffer(memSize, memSize);
    mem.writeZero(memSize);
    for (int k = 0; k < aggregate; k++) {
      mem.setByte(memReq == null ? k : (int) memOff[k], stream[k]);
    }
    long end = 0;
    for (long o : fileOff) {
      end = Math.max(end, o + 1);
    }
    byte[] image = new byte[(int) end];
    for (int k = 0; k < aggregate; k++) {
      image[(int) fileOff[k]] = stream[k];
    }

    String path = "/typed-" + files.incrementAndGet();
    OpenFile f = fs.create(path, 0644, 0, Caller.ROOT, dist, servers);
    try {
      fs.write(f, fileReq, disp, aggregate, mem, memReq);
      assertEquals(end, fs.getattr(path).size(), "file size after the typed write");

      // the whole file, contiguous: exactly the image
      ByteBuf whole = Unpooled.buffer((int) end);
      whole.writeZero((int) end);
      assertEquals(end, fs.read(f, Request.bytes(end), 0, end, whole, null));
      byte[] back = new byte[(int) end];
      whole.getBytes(0, back);
      assertArrayEquals(image, back, "file bytes");

      // the same typed read: the same memory
      ByteBuf again = Unpooled.buffer(memSize, memSize);
      again.writeZero(memSize);
      assertEquals(aggregate, fs.read(f, fileReq, disp, aggregate, again, memReq));
      for (int k = 0; k < aggregate; k++) {
        int at = memReq == null ? k : (int) memOff[k];
        assertEquals(stream[k], again.getByte(at), "stream byte " + k + " at memory " + at);
      }
    } finally {
      fs.release(f);
      fs.unlink(path);
    }
  }

  /**
   * A typed write across a file's head: the flows carry only the bytes past the head (the head's go
   * to the metadata server, once), and typed and whole-file reads give back what was written.
   */
  @org.junit.jupiter.api.Test
  void head_typedWriteAcrossIt_flowsCarryOnlyTheBytesPastIt() {
    long head = cluster.config().layout().headBytes();
    assertEquals(64 * 1024, head, "the default head, which PAST_HEAD and this request straddle");
    Request blocks = Request.vector(1000, 50, 100, Request.BYTE); // 50 of every 100 bytes up to 99,950
    long aggregate = blocks.size();
    byte[] stream = new byte[(int) aggregate];
    new Random(11).nextBytes(stream);
    long[] at = offsets(blocks, 0, aggregate);
    long pastHead = java.util.Arrays.stream(at).filter(o -> o >= head).count();
    byte[] image = new byte[99_950];
    for (int k = 0; k < aggregate; k++) {
      image[(int) at[k]] = stream[k];
    }
    String path = "/typed-head-flows-" + files.incrementAndGet();
    OpenFile f = fs.create(path, 0644, 0, Caller.ROOT, new SimpleStripe(4096).spec(), 4);
    try {
      long before = fs.counters().get("path.flow.bytes");
      fs.write(f, blocks, 0, aggregate, Unpooled.wrappedBuffer(stream), null);
      assertEquals(pastHead, fs.counters().get("path.flow.bytes") - before,
          "bytes in flows: only those past the head (" + pastHead + " of " + aggregate + ")");
      assertEquals(image.length, fs.getattr(path).size());

      ByteBuf again = Unpooled.buffer((int) aggregate);
      again.writeZero((int) aggregate);
      assertEquals(aggregate, fs.read(f, blocks, 0, aggregate, again, null));
      byte[] back = new byte[(int) aggregate];
      again.getBytes(0, back);
      assertArrayEquals(stream, back, "typed read");

      ByteBuf whole = Unpooled.buffer(image.length);
      whole.writeZero(image.length);
      assertEquals(image.length, fs.read(f, Request.bytes(image.length), 0, image.length, whole, null));
      byte[] file = new byte[image.length];
      whole.getBytes(0, file);
      assertArrayEquals(image, file, "whole-file read");
    } finally {
      fs.release(f);
      fs.unlink(path);
    }
  }

  /**
   * A file with a head: a truncate within the head, then a non-monotone typed write, makes the
   * size the two make (typed writes of earlier versions left spare copies of head bytes in the
   * datafiles, which a truncate within the head did not cut: they must not count); POSIX-style and
   * typed reads agree.
   */
  @org.junit.jupiter.api.Test
  void head_truncateWithinIt_thenNonMonotoneWrite_sizeIsTheWrites() {
    String path = "/typed-head-" + files.incrementAndGet();
    OpenFile f = fs.create(path, 0644, 0, Caller.ROOT, null, 0);
    try {
      byte[] big = new byte[60_000];
      new Random(5).nextBytes(big);
      fs.write(f, Request.bytes(big.length), 0, big.length, Unpooled.wrappedBuffer(big), null);
      assertEquals(60_000, fs.getattr(path).size());
      fs.truncate(f, 10);
      // two bytes, the second before the first in the file: not monotone
      Request backwards = Request.hindexed(new long[] {1, 1}, new long[] {5, 3}, Request.BYTE);
      fs.write(f, backwards, 0, 2, Unpooled.wrappedBuffer(new byte[] {7, 9}), null);
      assertEquals(10, fs.getattr(path).size(), "the size the truncate and the write make");
      ByteBuf whole = Unpooled.buffer(10);
      whole.writeZero(10);
      assertEquals(10, fs.read(f, Request.bytes(10), 0, 10, whole, null));
      byte[] want = java.util.Arrays.copyOf(big, 10);
      want[5] = 7;
      want[3] = 9;
      byte[] back = new byte[10];
      whole.getBytes(0, back);
      assertArrayEquals(want, back);
    } finally {
      fs.release(f);
      fs.unlink(path);
    }
  }
}
