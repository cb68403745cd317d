package org.flowfs.common.flow;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.embedded.EmbeddedChannel;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.flowfs.common.Counters;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.dist.Distribution;
import org.flowfs.common.dist.SimpleStripe;
import org.flowfs.common.dist.VarStrip;
import org.flowfs.common.flow.FlowPair.Leg;
import org.flowfs.common.flow.FlowPair.Spec;
import org.flowfs.common.flow.FlowPair.Transfer;
import org.flowfs.common.request.FileData;
import org.flowfs.common.request.Request;
import org.flowfs.common.rpc.RpcClient;
import org.flowfs.common.wire.Envelope;
import org.flowfs.common.wire.FrameEncoder;
import org.flowfs.common.wire.IoOp.FlowAck;
import org.flowfs.common.wire.IoOp.FlowData;
import org.flowfs.common.wire.IoOp.FlowReq;
import org.flowfs.common.wire.LeakCheck;
import org.flowfs.common.wire.MessageRegistry;
import org.flowfs.common.wire.RequestSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What every {@link FlowProtocol} that moves data between memory, the network and storage must do
 * (STYLE.md 14: one contract suite per interface). Each test runs real two-ended flows over
 * loopback ({@link FlowPair}): a client moving between memory and a connection, servers moving
 * between their connection and a {@link MemFlowStorage}, checked against {@link RequestModel},
 * which walks requests without the request processor. Buffers are {@value #BUF} bytes so that
 * flows span many of them; the suite runs with Netty's paranoid leak detection ({@link LeakCheck}),
 * and every memory buffer must be back to one reference when its pair closes.
 */
@ExtendWith(LeakCheck.class)
abstract class FlowProtocolContract {
  static final int BUF = 8192;
  static final Duration STALL = Duration.ofSeconds(10);
  static final Duration SHORT_STALL = Duration.ofMillis(300);
  static final DistSpec ONE_STRIPE = DistSpec.of(SimpleStripe.NAME, 64 * 1024);

  /** A new instance of the protocol under test, with {@value #BUF}-byte buffers. */
  abstract FlowProtocol protocol();

  /** How many buffers one flow of the protocol uses at most. */
  abstract int buffers();

  private final List<AutoCloseable> closeAfter = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    Throwable first = null;
    for (int i = closeAfter.size() - 1; i >= 0; i--) {
      try {
        closeAfter.get(i).close();
      } catch (Throwable t) {
        if (first == null) {
          first = t;
        }
      }
    }
    closeAfter.clear();
    if (first instanceof Exception e) {
      throw e;
    }
    if (first instanceof Error e) {
      throw e;
    }
  }

  <T extends AutoCloseable> T closing(T c) {
    closeAfter.add(c);
    return c;
  }

  FlowPair pair(int servers) throws Exception {
    return pair(servers, STALL);
  }

  FlowPair pair(int servers, Duration stallTimeout) throws Exception {
    return closing(FlowPair.open(this::protocol, servers, stallTimeout));
  }

  // ---- round trips ------------------------------------------------------------------------------

  @ParameterizedTest(name = "{0} bytes")
  @ValueSource(ints = {0, 1, BUF - 1, BUF, BUF + 1, 37 * BUF + 123})
  void writeThenRead_contiguous_roundTrips(int size) throws Exception {
    FlowPair p = pair(1);
    Spec spec = Spec.contiguous(3000, size);
    byte[] data = RequestModel.pattern(size, 1);

    Transfer w = p.write(spec, p.buffer(data)).await();
    assertComplete(w, size);
    assertStored(p, spec, data);
    int pieces = (size + BUF - 1) / BUF;
    assertEquals(pieces, p.server(0).storage.started(), "storage writes: one per buffer of " + BUF);

    ByteBuf back = p.buffer(size, 0);
    Transfer r = p.read(spec, back).await();
    assertComplete(r, size);
    assertArrayEquals(data, bytes(back), "read back");
    assertEquals(2L * pieces, p.server(0).storage.started(), "storage reads: one per buffer of " + BUF);
    assertQuiet(p);
  }

  @Test
  void write_spanningManyBuffers_roundTrips() throws Exception {
    FlowPair p = pair(1);
    int size = 100 * BUF + 17;
    Spec spec = Spec.contiguous(0, size);
    byte[] data = RequestModel.pattern(size, 2);
    assertComplete(p.write(spec, p.buffer(data)).await(), size);
    assertStored(p, spec, data);
    ByteBuf back = p.buffer(size, 0);
    assertComplete(p.read(spec, back).await(), size);
    assertArrayEquals(data, bytes(back));
    assertQuiet(p);
  }

  static Stream<Arguments> fileRequests() {
    Request struct = Request.struct(new long[] {2, 1, 3}, new long[] {0, 12, 24}, Request.INT32, Request.DOUBLE, Request.CHAR);
    return Stream.of(
        Arguments.of("vector", Request.vector(40, 100, 250, Request.BYTE), 500L, 10_000L),
        Arguments.of("vector of int32", Request.vector(64, 3, 7, Request.INT32), 4L, 768L * 30 + 5),
        Arguments.of("hvector, negative stride", Request.hvector(20, 64, -200, Request.BYTE), 5000L, 6400L),
        Arguments.of("indexed", Request.indexed(new long[] {5, 1, 30, 200}, new long[] {0, 9, 20, 60}, Request.INT16),
            0L, 472L * 40),
        Arguments.of("indexed, not monotone", Request.indexed(new long[] {10, 20, 5}, new long[] {100, 0, 50}, Request.BYTE),
            7L, 35L * 300),
        Arguments.of("struct", struct, 100L, 19L * 1000 + 3),
        Arguments.of("struct resized with gaps", Request.resized(0, 40, struct), 0L, 19L * 1000),
        Arguments.of("subarray", Request.subarray(new long[] {64, 96}, new long[] {20, 30}, new long[] {5, 7},
            Request.Order.C, Request.INT16), 0L, 1200L * 12),
        Arguments.of("subarray, fortran order", Request.subarray(new long[] {30, 40, 5}, new long[] {10, 3, 4},
            new long[] {2, 30, 1}, Request.Order.FORTRAN, Request.BYTE), 1000L, 120L * 80));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fileRequests")
  void writeThenRead_noncontiguousFile_roundTrips(String name, Request fileReq, long offset, long aggregate) throws Exception {
    FlowPair p = pair(2);
    Spec spec = Spec.of(fileReq, offset, aggregate).dist(DistSpec.of(SimpleStripe.NAME, 4096));
    byte[] data = RequestModel.pattern((int) aggregate, 3);

    assertComplete(p.write(spec, p.buffer(data)).await(), aggregate);
    assertStored(p, spec, data);

    ByteBuf back = p.buffer((int) aggregate, 0);
    assertComplete(p.read(spec, back).await(), aggregate);
    assertArrayEquals(data, bytes(back));
    assertQuiet(p);
  }

  @Test
  void read_fineGrainedVector_fillsEveryBuffer() throws Exception {
    // 1-byte blocks 2 bytes apart: a buffer holds BUF segments, more than one processor call gives
    FlowPair p = pair(1);
    Request fileReq = Request.vector(3 * BUF + 100, 1, 2, Request.BYTE);
    long aggregate = fileReq.size();
    Spec spec = Spec.of(fileReq, 0, aggregate);
    byte[] data = RequestModel.pattern((int) aggregate, 7);
    assertComplete(p.write(spec, p.buffer(data)).await(), aggregate);
    assertStored(p, spec, data);

    int before = p.server(0).storage.started();
    ByteBuf back = p.buffer((int) aggregate, 0);
    assertComplete(p.read(spec, back).await(), aggregate);
    assertArrayEquals(data, bytes(back));
    long buffers = (aggregate + BUF - 1) / BUF;
    assertEquals(buffers, p.server(0).storage.started() - before,
        "storage reads: one sieved read per full buffer of " + BUF);
    assertQuiet(p);
  }

  static Stream<Arguments> memoryLayouts() {
    return Stream.of(
        Arguments.of("contiguous file", Request.bytes(15_000), Request.hvector(100, 150, 200, Request.BYTE), 15_000L),
        Arguments.of("noncontiguous file", Request.vector(30, 500, 800, Request.BYTE),
            Request.hvector(100, 150, 200, Request.BYTE), 15_000L),
        Arguments.of("memory request tiled", Request.vector(30, 500, 800, Request.BYTE),
            Request.hvector(4, 100, 150, Request.BYTE), 15_000L),
        Arguments.of("memory in reverse blocks", Request.bytes(24_000),
            Request.hindexed(new long[] {8000, 8000, 8000}, new long[] {16_100, 8_050, 0}, Request.BYTE), 24_000L));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("memoryLayouts")
  void writeThenRead_noncontiguousMemory_roundTrips(String name, Request fileReq, Request memReq, long aggregate)
      throws Exception {
    FlowPair p = pair(2);
    Spec spec = Spec.of(fileReq, 300, aggregate).memReq(memReq).dist(DistSpec.of(SimpleStripe.NAME, 4096));
    long[] mem = RequestModel.offsets(memReq, 0, aggregate);
    int memSize = (int) RequestModel.end(mem);
    byte[] stream = RequestModel.pattern((int) aggregate, 4);
    ByteBuf out = p.buffer(memSize, 0xEE);
    for (int i = 0; i < mem.length; i++) {
      out.setByte((int) mem[i], stream[i]);
    }

    assertComplete(p.write(spec, out).await(), aggregate);
    assertStored(p, spec, stream);

    ByteBuf back = p.buffer(memSize, 0xEE);
    assertComplete(p.read(spec, back).await(), aggregate);
    byte[] expected = bytes(out);
    assertArrayEquals(expected, bytes(back), "the memory request's bytes filled in, the rest untouched");
    assertQuiet(p);
  }

  // ---- several servers ----------------------------------------------------------------------------

  @Test
  void writeThenRead_simpleStripeOverThreeServers_reassembles() throws Exception {
    FlowPair p = pair(3);
    int size = 100_000;
    Spec spec = Spec.contiguous(777, size).dist(DistSpec.of(SimpleStripe.NAME, 5000));
    byte[] data = RequestModel.pattern(size, 5);

    Transfer w = p.write(spec, p.buffer(data)).await();
    assertComplete(w, size);
    assertServerShares(w, spec);
    assertStored(p, spec, data);

    ByteBuf back = p.buffer(size, 0);
    Transfer r = p.read(spec, back).await();
    assertComplete(r, size);
    assertServerShares(r, spec);
    assertArrayEquals(data, bytes(back));
    assertQuiet(p);
  }

  // ---- reads by reference ------------------------------------------------------------------------

  @Test
  void readViews_simpleStripeOverThreeServers_assemblesFramesWithoutCopy() throws Exception {
    FlowPair p = pair(3);
    int size = 100_000;
    Spec spec = Spec.contiguous(777, size).dist(DistSpec.of(SimpleStripe.NAME, 5000));
    byte[] data = RequestModel.pattern(size, 6);
    assertComplete(p.write(spec, p.buffer(data)).await(), size);

    MemViews views = new MemViews(size);
    Transfer r = p.readViews(spec, views).await();
    assertComplete(r, size);
    ByteBuf back = views.assemble(PooledByteBufAllocator.DEFAULT);
    try {
      assertArrayEquals(data, ByteBufUtil.getBytes(back), "the strips of three servers in order");
      // a piece per strip at least: slices of the frames, not a buffer the bytes were copied into
      assertTrue(((CompositeByteBuf) back).numComponents() >= size / 5000, () -> back.toString());
    } finally {
      back.release();
    }
    assertQuiet(p);
  }

  @Test
  void readViews_noncontiguousMemory_placesEachSegment() throws Exception {
    FlowPair p = pair(2);
    Request memReq = Request.hindexed(new long[] {8000, 8000, 8000}, new long[] {16_000, 8_000, 0}, Request.BYTE);
    Spec spec = Spec.of(Request.bytes(24_000), 300, 24_000).memReq(memReq).dist(DistSpec.of(SimpleStripe.NAME, 4096));
    byte[] stream = RequestModel.pattern(24_000, 7);
    ByteBuf out = p.buffer(24_000, 0);
    for (int i = 0; i < 3; i++) {
      out.setBytes(16_000 - 8000 * i, stream, 8000 * i, 8000);
    }
    assertComplete(p.write(spec, out).await(), 24_000);

    MemViews views = new MemViews(24_000);
    assertComplete(p.readViews(spec, views).await(), 24_000);
    ByteBuf back = views.assemble(PooledByteBufAllocator.DEFAULT);
    try {
      assertArrayEquals(bytes(out), ByteBufUtil.getBytes(back), "the stream's blocks in reverse, as the memory request says");
    } finally {
      back.release();
    }
  }

  @Test
  void readViews_storageFails_endsWithItsErrnoAndReleasesTheSlices() throws Exception {
    FlowPair p = pair(1);
    assertComplete(p.write(Spec.contiguous(0, 20 * BUF), p.buffer(20 * BUF, 1)).await(), 20 * BUF);
    p.server(0).storage.delayMillis(1).failReadsAfter(2, new FsException(Errno.ENODATA, "bad sector"));
    MemViews views = new MemViews(20 * BUF);
    Transfer r = p.readViews(Spec.contiguous(0, 20 * BUF), views).await();
    assertFailed(r, Errno.ENODATA);
    views.release(); // what the data path does when a flow failed: LeakCheck finds any slice left
    FsException e = org.junit.jupiter.api.Assertions.assertThrows(FsException.class,
        () -> views.assemble(PooledByteBufAllocator.DEFAULT));
    assertEquals(Errno.EIO, e.errno(), "released views hold no bytes");
    assertNoFlowsHeld(p);
  }

  @Test
  void writeThenRead_varStripOverThreeServers_reassembles() throws Exception {
    FlowPair p = pair(3);
    Request fileReq = Request.vector(50, 900, 1300, Request.BYTE);
    long aggregate = 45_000L * 2 + 100;
    Spec spec = Spec.of(fileReq, 250, aggregate).dist(DistSpec.of(VarStrip.NAME, 3000, 11_000, 7000, 500));
    byte[] data = RequestModel.pattern((int) aggregate, 6);

    Transfer w = p.write(spec, p.buffer(data)).await();
    assertComplete(w, aggregate);
    assertServerShares(w, spec);
    assertStored(p, spec, data);

    ByteBuf back = p.buffer((int) aggregate, 0);
    Transfer r = p.read(spec, back).await();
    assertComplete(r, aggregate);
    assertArrayEquals(data, bytes(back));
    assertQuiet(p);
  }

  // ---- end of file and holes ----------------------------------------------------------------------

  @Test
  void read_pastFileSize_stopsAtFsize() throws Exception {
    FlowPair p = pair(2);
    DistSpec stripes = DistSpec.of(SimpleStripe.NAME, 4096);
    byte[] data = RequestModel.pattern(20_000, 7);
    assertComplete(p.write(Spec.contiguous(0, 20_000).dist(stripes), p.buffer(data)).await(), 20_000);

    ByteBuf back = p.buffer(50_000, 0xEE);
    Transfer r = p.read(Spec.contiguous(0, 50_000).dist(stripes).fsize(30_000), back).await();
    assertComplete(r, 30_000);
    byte[] got = bytes(back);
    assertArrayEquals(data, Arrays.copyOfRange(got, 0, 20_000), "the data");
    assertArrayEquals(new byte[10_000], Arrays.copyOfRange(got, 20_000, 30_000), "below fsize past the datafiles: zeros");
    byte[] untouched = new byte[20_000];
    Arrays.fill(untouched, (byte) 0xEE);
    assertArrayEquals(untouched, Arrays.copyOfRange(got, 30_000, 50_000), "at and past fsize: not read");
    assertQuiet(p);
  }

  @Test
  void read_noncontiguousPastFileSize_stopsAtFirstByteAtFsize() throws Exception {
    FlowPair p = pair(2);
    Request vector = Request.vector(10, 1000, 3000, Request.BYTE);
    Spec spec = Spec.of(vector, 0, 10_000).dist(DistSpec.of(SimpleStripe.NAME, 4096));
    byte[] data = RequestModel.pattern(10_000, 8);
    assertComplete(p.write(spec, p.buffer(data)).await(), 10_000);

    long fsize = 12_500;
    int expected = RequestModel.cutAt(RequestModel.offsets(vector, 0, 10_000), fsize).length;
    assertEquals(4500, expected, "model");
    ByteBuf back = p.buffer(10_000, 0xEE);
    assertComplete(p.read(spec.fsize(fsize), back).await(), expected);
    byte[] got = bytes(back);
    assertArrayEquals(Arrays.copyOf(data, expected), Arrays.copyOf(got, expected));
    for (int i = expected; i < got.length; i++) {
      assertEquals((byte) 0xEE, got[i], "byte " + i + " is past fsize in the stream and must not be read");
    }
    assertQuiet(p);
  }

  @Test
  void read_holes_readAsZeros() throws Exception {
    FlowPair p = pair(2);
    DistSpec stripes = DistSpec.of(SimpleStripe.NAME, 4096);
    byte[] data = RequestModel.pattern(5000, 9);
    assertComplete(p.write(Spec.contiguous(60_000, 5000).dist(stripes), p.buffer(data)).await(), 5000);

    ByteBuf back = p.buffer(65_000, 0xEE);
    assertComplete(p.read(Spec.contiguous(0, 65_000).dist(stripes), back).await(), 65_000);
    byte[] got = bytes(back);
    assertArrayEquals(new byte[60_000], Arrays.copyOf(got, 60_000), "the hole");
    assertArrayEquals(data, Arrays.copyOfRange(got, 60_000, 65_000));
    assertQuiet(p);
  }

  // ---- failures -----------------------------------------------------------------------------------

  @Test
  void write_storageFails_endsBothFlowsWithItsErrno() throws Exception {
    FlowPair p = pair(1);
    p.server(0).storage.delayMillis(1).failWritesAfter(3, new FsException(Errno.ENOSPC, "disk full"));
    Transfer w = p.write(Spec.contiguous(0, 20 * BUF), p.buffer(20 * BUF, 1)).await();
    assertFailed(w, Errno.ENOSPC);
    assertNoFlowsHeld(p);

    // the connection is still good for the next flow (once the failed flow's last writes are over)
    waitFor(p.server(0).storage::idle, "storage idle");
    p.server(0).storage.delayMillis(0).failWritesAfter(Integer.MAX_VALUE, null);
    byte[] data = RequestModel.pattern(3 * BUF, 10);
    assertComplete(p.write(Spec.contiguous(0, 3 * BUF), p.buffer(data)).await(), 3 * BUF);
    // (the failed flow's writes may have run concurrently: a piece after the failed one may be stored)
    assertArrayEquals(data, Arrays.copyOf(p.server(0).storage.contents(p.handle(0)), 3 * BUF));
  }

  @Test
  void read_storageFails_endsBothFlowsWithItsErrno() throws Exception {
    FlowPair p = pair(1);
    assertComplete(p.write(Spec.contiguous(0, 20 * BUF), p.buffer(20 * BUF, 1)).await(), 20 * BUF);
    p.server(0).storage.delayMillis(1).failReadsAfter(2, new FsException(Errno.ENODATA, "bad sector"));
    Transfer r = p.read(Spec.contiguous(0, 20 * BUF), p.buffer(20 * BUF, 0)).await();
    assertFailed(r, Errno.ENODATA);
    assertNoFlowsHeld(p);
  }

  @Test
  void write_connectionClosedMidFlow_endsBothFlowsWithEio() throws Exception {
    FlowPair p = pair(1);
    MemFlowStorage storage = p.server(0).storage.closeGate();
    Transfer w = p.write(Spec.contiguous(0, 20 * BUF), p.buffer(20 * BUF, 1));
    waitFor(() -> storage.started() >= 1, "a storage write in progress");
    // the server drops the connection (the client may have sent everything: closing its end
    // would still deliver the data)
    p.server(0).channel(w.leg(0).tag()).get(5, TimeUnit.SECONDS).close();
    w.await();
    storage.openGate();
    assertFailed(w, Errno.EIO);
    waitFor(storage::idle, "storage idle");
    assertNoFlowsHeld(p);
  }

  @Test
  void read_connectionClosedMidFlow_endsBothFlowsWithEio() throws Exception {
    FlowPair p = pair(1);
    assertComplete(p.write(Spec.contiguous(0, 20 * BUF), p.buffer(20 * BUF, 1)).await(), 20 * BUF);
    MemFlowStorage storage = p.server(0).storage.closeGate();
    int before = storage.started();
    Transfer r = p.read(Spec.contiguous(0, 20 * BUF), p.buffer(20 * BUF, 0));
    waitFor(() -> storage.started() > before, "a storage read in progress");
    r.leg(0).channel().join().close(); // the client drops the connection
    r.await();
    storage.openGate();
    assertFailed(r, Errno.EIO);
    waitFor(storage::idle, "storage idle");
    assertNoFlowsHeld(p);
  }

  @Test
  void write_peerStopsSending_failsWithEioAfterStallTimeout() throws Exception {
    FlowPair p = pair(1, SHORT_STALL);
    FlowPair.Server s = p.server(0);
    RpcClient.Conduit c = s.rpcClient.conduit().get(5, TimeUnit.SECONDS);
    long tag = p.nextTag();
    long size = 5 * BUF;
    FlowReq req = new FlowReq(tag, s.handle, true, RequestSpec.of(Request.bytes(size)), 0, size, ONE_STRIPE, 0, 1, 0,
        p.protocol());
    FlowAck ack = c.call(req).get(5, TimeUnit.SECONDS);
    assertEquals(size, ack.bytes());
    ByteBuf piece = PooledByteBufAllocator.DEFAULT.directBuffer(BUF);
    piece.writeZero(BUF);
    c.send(tag, new FlowData(piece)); // one buffer of five, then nothing
    long start = System.nanoTime();

    FlowDescriptor d = s.serverFlow(tag).get(5, TimeUnit.SECONDS);
    long tookMs = (System.nanoTime() - start) / 1_000_000;
    assertEquals(FlowState.ERROR, d.state());
    assertEquals(Errno.EIO, d.errorCode());
    assertEquals(BUF, d.totalTransferred(), "the buffer that came was stored");
    assertTrue(tookMs >= SHORT_STALL.toMillis() - 50, "failed after " + tookMs + " ms, before the stall timeout");
    assertNoFlowsHeld(p);
  }

  @Test
  void read_peerStopsSending_failsWithEioAfterStallTimeout() throws Exception {
    FlowPair p = pair(1, SHORT_STALL);
    p.server(0).postFlows = false; // acks, then never sends
    long start = System.nanoTime();
    Transfer r = p.read(Spec.contiguous(0, 5 * BUF), p.buffer(5 * BUF, 0)).awaitClient();
    long tookMs = (System.nanoTime() - start) / 1_000_000;
    FlowDescriptor d = r.leg(0).clientFlow();
    assertEquals(FlowState.ERROR, d.state());
    assertEquals(Errno.EIO, d.errorCode());
    assertTrue(tookMs >= SHORT_STALL.toMillis() - 50, "failed after " + tookMs + " ms, before the stall timeout");
    assertNoFlowsHeld(p);
  }

  @Test
  void write_memoryRequestOutsideBuffer_failsWithEinval() throws Exception {
    FlowPair p = pair(1);
    // the last block, [900, 1050), runs past the end of the 1000-byte buffer
    Spec spec = Spec.contiguous(0, 600).memReq(Request.hvector(4, 150, 300, Request.BYTE));
    Transfer w = p.write(spec, p.buffer(1000, 1)).awaitClient();
    FlowDescriptor d = w.leg(0).clientFlow();
    assertEquals(FlowState.ERROR, d.state());
    assertEquals(Errno.EINVAL, d.errorCode());
  }

  @Test
  void read_memoryRequestOutsideBuffer_failsWithEinval() throws Exception {
    FlowPair p = pair(1);
    assertComplete(p.write(Spec.contiguous(0, 600), p.buffer(600, 1)).await(), 600);
    Spec spec = Spec.contiguous(0, 600).memReq(Request.hvector(4, 150, 300, Request.BYTE));
    Transfer r = p.read(spec, p.buffer(1000, 0)).awaitClient();
    FlowDescriptor d = r.leg(0).clientFlow();
    assertEquals(FlowState.ERROR, d.state());
    assertEquals(Errno.EINVAL, d.errorCode());
  }

  @Test
  void read_postedOnClosedConnection_failsWithEio() throws Exception {
    FlowPair p = pair(1);
    Channel ch = closedConduit(p);
    FlowDescriptor d = clientFlow(p, 4 * BUF, false).src(new NetEndpoint(ch)).dest(new MemEndpoint(p.buffer(4 * BUF, 0)));
    FlowDescriptor done = p.client().post(d).get(3, TimeUnit.SECONDS); // well before the stall timeout
    assertEquals(FlowState.ERROR, done.state());
    assertEquals(Errno.EIO, done.errorCode());
    assertNoFlowsHeld(p);
  }

  @Test
  void write_connectionClosedBeforeSending_releasesData() throws Exception {
    FlowPair p = pair(1);
    RpcClient.Conduit c = p.server(0).rpcClient.conduit().get(5, TimeUnit.SECONDS);
    CountDownLatch hold = new CountDownLatch(1);
    p.client().submit(() -> awaitQuietly(hold)); // the post below waits behind this
    FlowDescriptor d = clientFlow(p, 4 * BUF, true).src(new MemEndpoint(p.buffer(4 * BUF, 1))).dest(new NetEndpoint(c.channel()));
    CompletableFuture<FlowDescriptor> f = p.client().post(d);
    c.channel().close().sync();
    c.channel().eventLoop().submit(() -> { }).sync(); // deregistered by now: writes reach no handler
    hold.countDown();
    FlowDescriptor done = f.get(3, TimeUnit.SECONDS);
    assertEquals(FlowState.ERROR, done.state());
    assertEquals(Errno.EIO, done.errorCode());
    assertNoFlowsHeld(p);
    // closing the pair checks that the memory buffer is back to one reference
  }

  // ---- bounded buffering and the event-driven loop -------------------------------------------------

  @Test
  void write_storageOperations_atMostBuffersAtOnce() throws Exception {
    FlowPair p = pair(1);
    p.server(0).storage.delayMillis(3);
    int size = 24 * BUF;
    byte[] data = RequestModel.pattern(size, 11);
    assertComplete(p.write(Spec.contiguous(0, size), p.buffer(data)).await(), size);
    assertEquals(buffers(), p.server(0).storage.maxConcurrent(p.handle(0)),
        "most storage writes of one flow running at once");
    assertStored(p, Spec.contiguous(0, size), data);
  }

  @Test
  void read_storageOperations_atMostBuffersAtOnce() throws Exception {
    FlowPair p = pair(1);
    int size = 24 * BUF;
    byte[] data = RequestModel.pattern(size, 12);
    assertComplete(p.write(Spec.contiguous(0, size), p.buffer(data)).await(), size);
    MemFlowStorage storage = p.server(0).storage;
    storage.delayMillis(3).resetMaxConcurrent();
    ByteBuf back = p.buffer(size, 0);
    assertComplete(p.read(Spec.contiguous(0, size), back).await(), size);
    assertArrayEquals(data, bytes(back));
    assertEquals(buffers(), storage.maxConcurrent(p.handle(0)), "most storage reads of one flow running at once");
  }

  @Test
  void idle_flowWaitingForData_serviceThreadsBlocked() throws Exception {
    FlowPair p = pair(1);
    p.server(0).postFlows = false; // the data never comes
    Transfer r = p.read(Spec.contiguous(0, 4 * BUF), p.buffer(4 * BUF, 0));
    waitFor(() -> p.client().getInfo("active-flows").equals(1), "the client flow posted");
    Thread.sleep(50);
    assertIdle(p.name() + "-client-flow-service");
    assertIdle(p.name() + "-io0-flow-service");
    assertTrue(!r.leg(0).clientDone().isDone(), "the flow is still waiting");
  }

  // ---- frames that come before the flow's post is serviced -----------------------------------------

  @Test
  void receive_framesBeforePostIsServiced_keepTheirOrder() throws Exception {
    FlowProtocol proto = protocol();
    FlowInterface flows = closing(FlowInterface.initialize("early", STALL, new Counters(), List.of(proto)));
    MemFlowStorage storage = closing(new MemFlowStorage("early"));
    EmbeddedChannel ch = new EmbeddedChannel(new FrameEncoder(MessageRegistry.DEFAULT));
    closing(() -> ch.finishAndReleaseAll());
    Handle h = Handle.of(1, 1);
    byte[] first = RequestModel.pattern(BUF, 13);
    byte[] second = RequestModel.pattern(BUF, 14);

    CountDownLatch hold = new CountDownLatch(1);
    flows.submit(() -> awaitQuietly(hold));
    FlowDescriptor d = flows.alloc().tag(5).type(proto.name())
        .fileReq(Request.bytes(2 * BUF)).aggregateSize(2 * BUF)
        .fileData(new FileData(0, 0, 1, new SimpleStripe(1 << 20), true))
        .src(new NetEndpoint(ch)).dest(new StoreEndpoint(storage, h));
    CompletableFuture<FlowDescriptor> f = flows.post(d);
    // the second frame arrives once the post has been serviced ...
    flows.submit(() -> flows.deliver(ch, Envelope.oneway(5, new FlowData(direct(second)))));
    // ... the first before it
    flows.deliver(ch, Envelope.oneway(5, new FlowData(direct(first))));
    hold.countDown();

    FlowDescriptor done = f.get(5, TimeUnit.SECONDS);
    assertEquals(FlowState.COMPLETE, done.state(), () -> "flow ended " + done.errorCode());
    byte[] expected = Arrays.copyOf(first, 2 * BUF);
    System.arraycopy(second, 0, expected, BUF, BUF);
    assertArrayEquals(expected, storage.contents(h), "stored in the order the frames arrived");
  }

  @Test
  void receive_framesForFlowFailedAtPost_areReleased() throws Exception {
    FlowProtocol proto = protocol();
    FlowInterface flows = closing(FlowInterface.initialize("early", STALL, new Counters(), List.of(proto)));
    EmbeddedChannel ch = new EmbeddedChannel(new FrameEncoder(MessageRegistry.DEFAULT));
    closing(() -> ch.finishAndReleaseAll());
    ByteBuf mem = PooledByteBufAllocator.DEFAULT.directBuffer(1000);
    closing(mem::release);

    CountDownLatch hold = new CountDownLatch(1);
    flows.submit(() -> awaitQuietly(hold));
    FlowDescriptor d = flows.alloc().tag(6).type(proto.name())
        .fileReq(Request.bytes(1000)).aggregateSize(1000)
        .memReq(Request.bytes(0)) // a memory request without data: the protocol cannot take the flow
        .fileData(new FileData(1000, 0, 1, new SimpleStripe(1 << 20), false))
        .src(new NetEndpoint(ch)).dest(new MemEndpoint(mem));
    CompletableFuture<FlowDescriptor> f = flows.post(d);
    ByteBuf payload = direct(new byte[100]);
    flows.deliver(ch, Envelope.oneway(6, new FlowData(payload)));
    hold.countDown();

    FlowDescriptor done = f.get(5, TimeUnit.SECONDS);
    assertEquals(FlowState.ERROR, done.state());
    waitFor(() -> payload.refCnt() == 0, "the early frame released");
    assertIdle("early-flow-service");
  }

  // ---- helpers ------------------------------------------------------------------------------------

  /** A client descriptor for {@code size} contiguous bytes at offset 0 of server 0's datafile, endpoints unset. */
  static FlowDescriptor clientFlow(FlowPair p, long size, boolean write) {
    return p.client().alloc().tag(p.nextTag()).type(p.protocol())
        .fileReq(Request.bytes(size)).aggregateSize(size)
        .fileData(new FileData(size, 0, 1, new SimpleStripe(1 << 20), write));
  }

  /** A client connection to server 0, closed. */
  static Channel closedConduit(FlowPair p) throws Exception {
    Channel ch = p.server(0).rpcClient.conduit().get(5, TimeUnit.SECONDS).channel();
    ch.close().sync();
    ch.eventLoop().submit(() -> { }).sync();
    return ch;
  }

  static ByteBuf direct(byte[] data) {
    ByteBuf b = PooledByteBufAllocator.DEFAULT.directBuffer(data.length);
    b.writeBytes(data);
    return b;
  }

  static byte[] bytes(ByteBuf b) {
    byte[] a = new byte[b.capacity()];
    b.getBytes(0, a);
    return a;
  }

  /** Every flow of the transfer completed at both ends, moving {@code total} bytes in all. */
  static void assertComplete(Transfer t, long total) {
    long client = 0;
    long server = 0;
    for (Leg l : t.legs()) {
      FlowDescriptor c = l.clientFlow();
      FlowDescriptor s = l.serverDone().getNow(null);
      assertEquals(FlowState.COMPLETE, c.state(), () -> "client " + c + ": " + c.errorCode() + "; server " + s);
      assertEquals(Errno.OK, c.errorCode());
      assertEquals(l.bytes(), c.totalTransferred(), () -> "client " + c);
      assertTrue(s != null, "server flow posted");
      assertEquals(FlowState.COMPLETE, s.state(), () -> "server " + s + ": " + s.errorCode());
      assertEquals(l.bytes(), s.totalTransferred(), () -> "server " + s);
      client += c.totalTransferred();
      server += s.totalTransferred();
    }
    assertEquals(total, client, "bytes moved by the client's flows");
    assertEquals(total, server, "bytes moved by the servers' flows");
  }

  /** Every flow of the transfer failed at both ends with {@code errno}. */
  static void assertFailed(Transfer t, Errno errno) {
    for (Leg l : t.legs()) {
      FlowDescriptor c = l.clientFlow();
      FlowDescriptor s = l.serverDone().getNow(null);
      assertEquals(FlowState.ERROR, c.state(), () -> "client " + c);
      assertEquals(errno, c.errorCode(), "client errno");
      assertTrue(s != null, "server flow posted");
      assertEquals(FlowState.ERROR, s.state(), () -> "server " + s);
      assertEquals(errno, s.errorCode(), "server errno");
    }
  }

  /** Each server's flow moved exactly the bytes of the stream its distribution gives it. */
  static void assertServerShares(Transfer t, Spec spec) {
    long[] offsets = RequestModel.offsets(spec.fileReq(), spec.fileReqOffset(), spec.aggregate());
    Distribution dist = spec.distribution();
    int n = t.legs().size();
    long[] share = new long[n];
    for (long o : offsets) {
      share[dist.serverOf(o, n)]++;
    }
    for (int s = 0; s < n; s++) {
      assertEquals(share[s], t.leg(s).clientFlow().totalTransferred(), "server " + s + "'s share");
      assertTrue(share[s] > 0, "every server holds some of the data");
    }
  }

  /** The stream's byte {@code i} is at the file offset the model gives, on the server and datafile offset the distribution gives. */
  static void assertStored(FlowPair p, Spec spec, byte[] stream) {
    long[] offsets = RequestModel.offsets(spec.fileReq(), spec.fileReqOffset(), spec.aggregate());
    Distribution dist = spec.distribution();
    int n = p.servers().size();
    byte[][] files = new byte[n][];
    long[] ends = new long[n];
    for (int s = 0; s < n; s++) {
      files[s] = p.server(s).storage.contents(p.handle(s));
    }
    for (int i = 0; i < offsets.length; i++) {
      int s = dist.serverOf(offsets[i], n);
      long phys = dist.logicalToPhysical(offsets[i], n);
      ends[s] = Math.max(ends[s], phys + 1);
      if (phys >= files[s].length || files[s][(int) phys] != stream[i]) {
        fail("stream byte " + i + " (file offset " + offsets[i] + ") is not at offset " + phys + " of server " + s
            + "'s datafile of " + files[s].length + " bytes");
      }
    }
    for (int s = 0; s < n; s++) {
      assertEquals(ends[s], files[s].length, "size of server " + s + "'s datafile");
    }
  }

  /** No frame went astray and neither end holds flow state. */
  static void assertQuiet(FlowPair p) {
    assertEquals(0, p.clientCounters().get("test.orphan-frames"), "frames for no flow at the client");
    for (FlowPair.Server s : p.servers()) {
      assertEquals(0, s.orphanFrames(), "frames for no flow at server " + s.index);
    }
    assertNoFlowsHeld(p);
  }

  /** Neither end has a flow in service or protocol state for one. */
  static void assertNoFlowsHeld(FlowPair p) {
    waitFor(() -> held(p.client(), p.protocol()) == 0, "client protocol holds no flows");
    for (FlowPair.Server s : p.servers()) {
      waitFor(() -> held(s.flows, p.protocol()) == 0, "server protocol holds no flows");
      assertEquals(0, s.flows.getInfo("active-flows"), "server flows in service");
    }
    assertEquals(0, p.client().getInfo("active-flows"), "client flows in service");
  }

  private static int held(FlowInterface f, String protocol) {
    Object n = f.getInfo(protocol + ".flows");
    return n == null ? 0 : (Integer) n;
  }

  /** The named thread is blocked and uses (next to) no CPU for a while: nothing polls. */
  static void assertIdle(String threadName) throws InterruptedException {
    Thread t = Thread.getAllStackTraces().keySet().stream()
        .filter(x -> x.getName().equals(threadName) && x.isAlive()).findFirst()
        .orElseThrow(() -> new AssertionError("no thread " + threadName));
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    long cpu0 = mx.getThreadCpuTime(t.getId());
    Thread.sleep(300);
    long cpuMs = (mx.getThreadCpuTime(t.getId()) - cpu0) / 1_000_000;
    Thread.State state = t.getState();
    assertTrue(state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING, threadName + " is " + state);
    assertTrue(cpuMs < 50, threadName + " used " + cpuMs + " ms of CPU in 300 ms while nothing was ready");
  }

  static void waitFor(BooleanSupplier condition, String what) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for: " + what);
      }
      try {
        Thread.sleep(2);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted waiting for: " + what);
      }
    }
  }

  static void awaitQuietly(CountDownLatch l) {
    try {
      l.await(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
