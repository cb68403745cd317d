package org.flowfs.common.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.request.Request;
import org.flowfs.common.wire.Envelope;
import org.flowfs.common.wire.IoOp.FlowAck;
import org.flowfs.common.wire.IoOp.FlowData;
import org.flowfs.common.wire.IoOp.FlowDone;
import org.flowfs.common.wire.LeakCheck;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The flow interface itself (seed 001's {@code PINT_flow_*}) with the {@link TemplateProtocol}:
 * the service loop's order, the test calls, the descriptor life cycle and its errors, parameters,
 * connection watching, the stall timeout and close.
 */
@ExtendWith(LeakCheck.class)
class FlowInterfaceTest {
  private static final AtomicInteger INTERFACES = new AtomicInteger();
  private static final Endpoint MEM = new MemEndpoint(Unpooled.EMPTY_BUFFER);

  private final TemplateProtocol template = new TemplateProtocol("template");
  private final TemplateProtocol other = new TemplateProtocol("other");
  private final Counters counters = new Counters();
  private final List<AutoCloseable> closeAfter = new ArrayList<>();
  private String name;
  private FlowInterface flows;

  @BeforeEach
  void open() {
    name = "svc" + INTERFACES.incrementAndGet();
    flows = closing(FlowInterface.initialize(name, Duration.ofSeconds(10), counters, List.of(template, other)));
  }

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeAfter.size() - 1; i >= 0; i--) {
      closeAfter.get(i).close();
    }
  }

  private <T extends AutoCloseable> T closing(T c) {
    closeAfter.add(c);
    return c;
  }

  /** A flow of the template protocol, memory to memory, with this tag. */
  private FlowDescriptor flow(long tag) {
    return flows.alloc().tag(tag).src(MEM).dest(MEM).aggregateSize(0);
  }

  /** Posts flows with these tags and waits until the protocol has them. */
  private List<FlowDescriptor> posted(long... tags) {
    List<FlowDescriptor> l = new ArrayList<>();
    for (long t : tags) {
      FlowDescriptor d = flow(t);
      flows.post(d);
      l.add(d);
    }
    FlowProtocolContract.waitFor(() -> template.posted.containsAll(l), "posted");
    return l;
  }

  /** Occupies the service thread until the returned latch is counted down. */
  private CountDownLatch blockServiceThread() throws InterruptedException {
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch hold = new CountDownLatch(1);
    flows.submit(() -> {
      entered.countDown();
      FlowProtocolContract.awaitQuietly(hold);
    });
    assertTrue(entered.await(5, TimeUnit.SECONDS));
    return hold;
  }

  /** Waits until everything made ready so far at priority above Integer.MIN_VALUE was serviced. */
  private void drain() {
    FlowDescriptor last = flow(Long.MAX_VALUE);
    flows.post(last);
    FlowProtocolContract.waitFor(() -> template.posted.contains(last), "posted");
    flows.setPriority(last, Integer.MIN_VALUE);
    flows.ready(last);
    FlowProtocolContract.waitFor(() -> template.serviced.contains(Long.MAX_VALUE), "serviced");
    template.serviced.remove(Long.MAX_VALUE);
    flows.fail(last, Errno.EINTR, "drained");
  }

  private static FlowDescriptor done(FlowDescriptor d) throws Exception {
    return d.completion().get(5, TimeUnit.SECONDS);
  }

  // ---- the service loop ---------------------------------------------------------------------------

  @Test
  void service_readyFlows_byPriorityThenArrival() throws Exception {
    List<FlowDescriptor> l = posted(1, 2, 3, 4, 5, 6);
    int[] priorities = {0, 5, 0, 9, 5, -1};
    CountDownLatch hold = blockServiceThread();
    for (int i = 0; i < l.size(); i++) {
      flows.setPriority(l.get(i), priorities[i]);
      flows.ready(l.get(i));
    }
    hold.countDown();
    FlowProtocolContract.waitFor(() -> template.serviced.size() == 6, "all serviced");
    assertEquals(List.of(4L, 2L, 5L, 1L, 3L, 6L), template.serviced);
  }

  @Test
  void setPriority_whileInService_ordersItsNextService() throws Exception {
    List<FlowDescriptor> l = posted(1, 2, 3);
    for (FlowDescriptor d : l) {
      flows.ready(d);
    }
    FlowProtocolContract.waitFor(() -> template.serviced.size() == 3, "serviced once");
    assertEquals(List.of(1L, 2L, 3L), template.serviced, "equal priorities: in arrival order");
    template.serviced.clear();

    flows.setPriority(l.get(2), 7);
    flows.setPriority(l.get(0), -3);
    assertEquals(7, flows.getPriority(l.get(2)));
    assertEquals(-3, l.get(0).priority());
    assertEquals(FlowState.IN_SERVICE, l.get(2).state());
    CountDownLatch hold = blockServiceThread();
    l.forEach(flows::ready);
    hold.countDown();
    FlowProtocolContract.waitFor(() -> template.serviced.size() == 3, "serviced again");
    assertEquals(List.of(3L, 2L, 1L), template.serviced);
  }

  @Test
  void ready_whileQueued_servicesOnce() throws Exception {
    FlowDescriptor d = posted(1).get(0);
    CountDownLatch hold = blockServiceThread();
    flows.ready(d);
    flows.ready(d);
    flows.ready(d);
    hold.countDown();
    drain();
    assertEquals(List.of(1L), template.serviced);

    flows.ready(d); // once serviced, it can be made ready again
    drain();
    assertEquals(List.of(1L, 1L), template.serviced);
  }

  @Test
  void ready_flowNotInService_isIgnored() throws Exception {
    FlowDescriptor fresh = flow(1);
    flows.ready(fresh);
    FlowDescriptor d = posted(2).get(0);
    flows.fail(d, Errno.EIO, "test");
    done(d);
    flows.ready(d);
    drain();
    assertEquals(List.of(), template.serviced);
  }

  @Test
  void submit_runsBeforeReadyFlows() throws Exception {
    FlowDescriptor d = posted(1).get(0);
    flows.setPriority(d, 100);
    CountDownLatch hold = blockServiceThread();
    flows.ready(d);
    flows.submit(() -> template.serviced.add(-1L));
    hold.countDown();
    FlowProtocolContract.waitFor(() -> template.serviced.size() == 2, "both ran");
    assertEquals(List.of(-1L, 1L), template.serviced);
  }

  @Test
  void service_throws_failsFlowWithItsErrno() throws Exception {
    template.onService = d -> {
      throw new FsException(Errno.ENOSPC, "full");
    };
    FlowDescriptor d = posted(1).get(0);
    flows.ready(d);
    done(d);
    assertEquals(FlowState.ERROR, d.state());
    assertEquals(Errno.ENOSPC, d.errorCode());
    assertEquals(List.of(d), template.cancelled, "the protocol released the flow");
    assertEquals(1, counters.get("flow.errors"));
  }

  @Test
  void complete_onService_endsFlowComplete() throws Exception {
    template.completing();
    FlowDescriptor d = posted(1).get(0);
    flows.ready(d);
    assertSame(d, done(d));
    assertEquals(FlowState.COMPLETE, d.state());
    assertEquals(Errno.OK, d.errorCode());
    assertEquals(List.of(), template.cancelled);
    assertEquals(1, counters.get("flow.completed"));
    assertEquals(0, flows.getInfo("active-flows"));
  }

  @Test
  void fail_fromOtherThread_cancelsOnServiceThread() throws Exception {
    FlowDescriptor d = posted(1).get(0);
    flows.fail(d, Errno.EDQUOT, "over quota");
    done(d);
    assertEquals(FlowState.ERROR, d.state());
    assertEquals(Errno.EDQUOT, d.errorCode());
    assertEquals(List.of(name + "-flow-service"), template.cancelThreads);
  }

  @Test
  void fail_withoutErrno_reportsEio() throws Exception {
    FlowDescriptor d = posted(1).get(0);
    flows.fail(d, Errno.OK, "no reason");
    assertEquals(Errno.EIO, done(d).errorCode());
  }

  @Test
  void fail_beforeProtocolTookFlow_protocolNeverSeesIt() throws Exception {
    FlowDescriptor d = flow(1);
    CompletableFuture<Void> ran = new CompletableFuture<>();
    flows.submit(() -> {
      flows.post(d); // from the service thread: its protocol's post comes after this task
      flows.fail(d, Errno.ENOSPC, "failed at once");
      ran.complete(null);
    });
    ran.get(5, TimeUnit.SECONDS);
    assertEquals(Errno.ENOSPC, done(d).errorCode());
    drain();
    assertFalse(template.posted.contains(d), "the protocol was handed a flow that had ended");
  }

  // ---- test, testSome, testContext ----------------------------------------------------------------

  @Test
  void test_pendingFlow_falseUntilDone() throws Exception {
    FlowDescriptor d = posted(1).get(0);
    assertFalse(flows.test(d, 0));
    long t0 = System.nanoTime();
    assertFalse(flows.test(d, 50));
    assertTrue(System.nanoTime() - t0 >= TimeUnit.MILLISECONDS.toNanos(45), "waited the timeout");
    template.completing();
    flows.ready(d);
    assertTrue(flows.test(d, 5000));
    assertEquals(FlowState.COMPLETE, d.state());
    assertTrue(flows.test(d, 0), "still done");
  }

  @Test
  void test_failedFlow_isDone() throws Exception {
    FlowDescriptor d = posted(1).get(0);
    flows.fail(d, Errno.EIO, "x");
    assertTrue(flows.test(d, 5000));
    assertEquals(FlowState.ERROR, d.state());
  }

  @Test
  void testSome_returnsTheDoneFlowsOfTheSet() throws Exception {
    List<FlowDescriptor> l = posted(1, 2, 3);
    template.onService = d -> {
      if (d.tag() == 2) {
        flows.complete(d);
      }
    };
    l.forEach(flows::ready);
    done(l.get(1));
    assertEquals(List.of(l.get(1)), flows.testSome(l, 0));
    long t0 = System.nanoTime();
    assertEquals(List.of(), flows.testSome(List.of(l.get(0), l.get(2)), 50));
    assertTrue(System.nanoTime() - t0 >= TimeUnit.MILLISECONDS.toNanos(45), "waited the timeout");
    assertEquals(List.of(), flows.testSome(List.of(), 1000));
  }

  @Test
  void testSome_noneDone_waitsForTheFirst() throws Exception {
    List<FlowDescriptor> l = posted(1, 2);
    CompletableFuture.delayedExecutor(100, TimeUnit.MILLISECONDS).execute(() -> flows.fail(l.get(1), Errno.EIO, "x"));
    long t0 = System.nanoTime();
    assertEquals(List.of(l.get(1)), flows.testSome(l, 5000));
    assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(4), "returned when the flow ended");
  }

  @Test
  void testContext_returnsCompletionsOfThatContextOnly() throws Exception {
    int ctx = flows.openContext();
    FlowDescriptor a = flow(1);
    FlowDescriptor b = flow(2);
    FlowDescriptor c = flow(3);
    flows.post(a, ctx);
    flows.post(b, ctx);
    flows.post(c);
    assertEquals(ctx, a.contextId());
    assertEquals(0, c.contextId());
    assertEquals(List.of(), flows.testContext(ctx, 10, 0));
    template.completing();
    List.of(a, b, c).forEach(flows::ready);
    Set<FlowDescriptor> got = new HashSet<>();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (got.size() < 2 && System.nanoTime() < deadline) {
      got.addAll(flows.testContext(ctx, 10, 100));
    }
    assertEquals(Set.of(a, b), got);
    assertSame(c, c.completion().get(5, TimeUnit.SECONDS));
    assertEquals(List.of(), flows.testContext(ctx, 10, 50), "each completion is returned once");
    assertThrows(IllegalArgumentException.class, () -> flows.testContext(0, 10, 0), "no context: nothing kept for it");
  }

  @Test
  void post_withoutContext_keepsNothingOnceEnded() throws Exception {
    template.completing();
    FlowDescriptor d = flow(7);
    flows.post(d);
    flows.ready(d);
    d.completion().get(5, TimeUnit.SECONDS);
    WeakReference<FlowDescriptor> ended = new WeakReference<>(d);
    d = null;
    template.posted.clear(); // the test protocol's own record
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (ended.get() != null && System.nanoTime() < deadline) {
      System.gc();
      Thread.sleep(20);
    }
    assertNull(ended.get(), "an ended flow posted without a context is kept by nothing (it was, by context 0's queue)");
  }

  @Test
  void testContext_returnsAtMostMax() throws Exception {
    int ctx = flows.openContext();
    template.completing();
    List<FlowDescriptor> l = new ArrayList<>();
    for (long t = 1; t <= 3; t++) {
      FlowDescriptor d = flow(t);
      flows.post(d, ctx);
      flows.ready(d);
      l.add(d);
    }
    for (FlowDescriptor d : l) {
      done(d);
    }
    assertEquals(List.of(), flows.testContext(ctx, 0, 100), "max 0");
    assertEquals(2, flows.testContext(ctx, 2, 0).size());
    assertEquals(1, flows.testContext(ctx, 2, 0).size());
    assertEquals(0, flows.testContext(ctx, 2, 0).size());
  }

  @Test
  void testContext_unknownOrClosedContext_throws() {
    assertThrows(IllegalArgumentException.class, () -> flows.testContext(42, 1, 0));
    int ctx = flows.openContext();
    flows.closeContext(ctx);
    assertThrows(IllegalArgumentException.class, () -> flows.testContext(ctx, 1, 0));
    flows.closeContext(0); // nothing to close
    assertThrows(IllegalArgumentException.class, () -> flows.testContext(0, 1, 0), "0 is no context");
  }

  // ---- descriptors: alloc, free, reset, post --------------------------------------------------------

  @Test
  void alloc_newDescriptor_isInitial() {
    FlowDescriptor d = flows.alloc();
    assertEquals(FlowState.INITIAL, d.state());
    assertEquals(Errno.OK, d.errorCode());
    assertEquals(0, d.totalTransferred());
    assertEquals(-1, d.aggregateSize());
    assertEquals(0, d.priority());
    assertNull(d.src());
    assertNull(d.type());
    assertFalse(d.completion().isDone());
    assertEquals(Request.bytes(100).size(), d.fileReq(Request.bytes(100)).aggregateSize(), "defaults to one request");
  }

  @Test
  void freeAndReset_inService_throw() {
    FlowDescriptor d = posted(1).get(0);
    assertThrows(IllegalStateException.class, () -> flows.free(d));
    assertThrows(IllegalStateException.class, () -> flows.reset(d));
    assertEquals(FlowState.IN_SERVICE, d.state());
  }

  @Test
  void reset_afterCompletion_allowsRepost() throws Exception {
    template.completing();
    FlowDescriptor d = posted(1).get(0);
    flows.setPriority(d, 4);
    flows.ready(d);
    done(d);
    flows.reset(d);
    assertEquals(FlowState.INITIAL, d.state());
    assertNull(d.src());
    assertEquals(0, d.tag());
    assertEquals(0, d.priority());
    assertFalse(d.completion().isDone());
    d.tag(2).src(MEM).dest(MEM).aggregateSize(0);
    flows.post(d);
    flows.ready(d);
    assertEquals(FlowState.COMPLETE, done(d).state());
    flows.free(d);
  }

  @Test
  void post_twice_throws() throws Exception {
    FlowDescriptor d = posted(1).get(0);
    assertThrows(IllegalStateException.class, () -> flows.post(d));
    flows.fail(d, Errno.EIO, "x");
    done(d);
    assertThrows(IllegalStateException.class, () -> flows.post(d), "a done flow is reset before it is posted again");
  }

  @Test
  void post_withoutEndpointsOrSize_throws() {
    assertThrows(IllegalArgumentException.class, () -> flows.post(flows.alloc().dest(MEM).aggregateSize(0)));
    assertThrows(IllegalArgumentException.class, () -> flows.post(flows.alloc().src(MEM).aggregateSize(0)));
    FlowDescriptor noSize = flows.alloc().src(MEM).dest(MEM);
    assertThrows(IllegalArgumentException.class, () -> flows.post(noSize));
    assertEquals(FlowState.INITIAL, noSize.state());
    assertEquals(0, flows.getInfo("active-flows"));
  }

  @Test
  void post_unknownProtocolType_throws() {
    FlowDescriptor d = flow(1).type("nosuch");
    assertThrows(IllegalArgumentException.class, () -> flows.post(d));
    assertEquals(FlowState.INITIAL, d.state(), "can be fixed and posted");
    d.type("other");
    flows.post(d);
    FlowProtocolContract.waitFor(() -> other.posted.contains(d), "posted to the named protocol");
    assertFalse(template.posted.contains(d));
  }

  @Test
  void post_unsupportedEndpointPair_throws() {
    Endpoint store = new StoreEndpoint(null, Handle.of(1, 1));
    assertThrows(IllegalArgumentException.class, () -> flows.post(flow(1).src(store)));
    assertThrows(IllegalArgumentException.class, () -> flows.post(flow(2).dest(store)));
    assertEquals(0, flows.getInfo("active-flows"));
  }

  @Test
  void post_unknownContext_throws() {
    FlowDescriptor d = flow(1);
    assertThrows(IllegalArgumentException.class, () -> flows.post(d, 99));
    assertEquals(FlowState.INITIAL, d.state());
  }

  @Test
  void post_sameTagTwiceOnOneConnection_throws() throws Exception {
    EmbeddedChannel ch = new EmbeddedChannel();
    closing(() -> ch.finishAndReleaseAll());
    EmbeddedChannel ch2 = new EmbeddedChannel();
    closing(() -> ch2.finishAndReleaseAll());
    FlowDescriptor a = flow(7).dest(new NetEndpoint(ch));
    flows.post(a);
    FlowDescriptor b = flow(7).dest(new NetEndpoint(ch));
    assertThrows(IllegalStateException.class, () -> flows.post(b));
    assertEquals(FlowState.INITIAL, b.state());
    assertEquals(FlowState.IN_SERVICE, a.state());
    flows.post(flow(8).dest(new NetEndpoint(ch)));
    flows.post(flow(7).dest(new NetEndpoint(ch2)));
    assertEquals(3, flows.getInfo("active-flows"));

    // the first flow still gets its frames
    FlowProtocolContract.waitFor(() -> template.posted.contains(a), "posted");
    assertTrue(flows.deliver(ch, Envelope.oneway(7, new FlowDone(0, 0, 0))));
    assertEquals(List.of(7L), template.received);
  }

  @Test
  void post_afterClose_throws() {
    flows.close();
    assertThrows(IllegalStateException.class, () -> flows.post(flow(1)));
  }

  @Test
  void initialize_noOrDuplicateProtocols_throws() {
    assertThrows(IllegalArgumentException.class, () -> FlowInterface.initialize("x", Duration.ofSeconds(1), counters, List.of()));
    assertThrows(IllegalArgumentException.class, () -> FlowInterface.initialize("x", Duration.ofSeconds(1), counters,
        List.of(new TemplateProtocol("same"), new TemplateProtocol("same"))));
  }

  // ---- getInfo / setInfo --------------------------------------------------------------------------

  @Test
  void getInfo_interfaceParameters() {
    assertTrue(template.initialized && other.initialized);
    assertEquals("template", flows.getInfo("default-protocol"));
    assertEquals(Duration.ofSeconds(10), flows.getInfo("stall-timeout"));
    assertEquals(0, flows.getInfo("active-flows"));
    posted(1, 2);
    assertEquals(2, flows.getInfo("active-flows"));
    assertNull(flows.getInfo("no-such-key"));
    assertNull(flows.getInfo("nosuch.key"));
  }

  @Test
  void setInfo_defaultProtocol_routesUntypedFlows() {
    assertEquals(List.of("template", "other"), flows.protocolNames());
    flows.setInfo("default-protocol", "other");
    assertEquals("other", flows.getInfo("default-protocol"));
    assertEquals(List.of("other", "template"), flows.protocolNames());
    FlowDescriptor d = flow(1);
    flows.post(d);
    FlowProtocolContract.waitFor(() -> other.posted.contains(d), "posted to the new default");
    assertFalse(template.posted.contains(d));
    assertThrows(IllegalArgumentException.class, () -> flows.setInfo("default-protocol", "nosuch"));
    assertEquals("other", flows.getInfo("default-protocol"));
  }

  @Test
  void setInfo_protocolKey_routedToThatProtocol() {
    flows.setInfo("template.buffer-size", 4096);
    flows.setInfo("other.buffer-size", 8192);
    assertEquals(4096, template.info.get("buffer-size"));
    assertEquals(8192, other.info.get("buffer-size"));
    assertEquals(4096, flows.getInfo("template.buffer-size"));
    assertEquals(8192, flows.getInfo("other.buffer-size"));
    assertThrows(IllegalArgumentException.class, () -> flows.setInfo("template.readonly-key", 1),
        "the protocol's refusal reaches the caller");
  }

  @Test
  void setInfo_unknownKey_throws() {
    assertThrows(IllegalArgumentException.class, () -> flows.setInfo("nosuch.key", 1));
    assertThrows(IllegalArgumentException.class, () -> flows.setInfo("no-dot", 1));
  }

  @Test
  void setInfo_stallTimeout_appliesToFlowsInService() throws Exception {
    FlowDescriptor d = posted(1).get(0);
    flows.setInfo("stall-timeout", Duration.ofMillis(100));
    assertEquals(Duration.ofMillis(100), flows.getInfo("stall-timeout"));
    done(d); // within the checker's period (1 s for the initial 10 s) plus 100 ms
    assertEquals(Errno.EIO, d.errorCode());
  }

  // ---- connections, stalls, close -----------------------------------------------------------------

  @Test
  void deliver_routesByConnectionAndTag_releasesTheRest() throws Exception {
    EmbeddedChannel ch = new EmbeddedChannel();
    closing(() -> ch.finishAndReleaseAll());
    FlowDescriptor d = flow(5).dest(new NetEndpoint(ch));
    flows.post(d);
    FlowProtocolContract.waitFor(() -> template.posted.contains(d), "posted");

    assertTrue(flows.deliver(ch, Envelope.oneway(5, new FlowData(direct(10)))));
    ByteBuf unknown = direct(10);
    assertFalse(flows.deliver(ch, Envelope.oneway(6, new FlowData(unknown))), "no flow with that tag");
    assertEquals(0, unknown.refCnt());
    ByteBuf otherConnection = direct(10);
    EmbeddedChannel ch2 = new EmbeddedChannel();
    closing(() -> ch2.finishAndReleaseAll());
    assertFalse(flows.deliver(ch2, Envelope.oneway(5, new FlowData(otherConnection))), "no flow on that connection");
    assertEquals(0, otherConnection.refCnt());
    assertFalse(flows.deliver(ch, Envelope.oneway(5, new FlowAck(5, 0))), "not a flow frame");
    assertEquals(List.of(5L), template.received);
  }

  @Test
  void connectionClosed_failsItsFlowsWithEio() throws Exception {
    EmbeddedChannel ch = new EmbeddedChannel();
    closing(() -> ch.finishAndReleaseAll());
    FlowDescriptor a = flow(1).dest(new NetEndpoint(ch));
    FlowDescriptor b = flow(2);
    flows.post(a);
    flows.post(b);
    ch.close();
    assertEquals(Errno.EIO, done(a).errorCode());
    assertEquals(FlowState.ERROR, a.state());
    assertFalse(flows.test(b, 100), "a flow not on the connection goes on");
  }

  @Test
  void post_onClosedConnection_failsWithEio() throws Exception {
    EmbeddedChannel ch = new EmbeddedChannel();
    closing(() -> ch.finishAndReleaseAll());
    ch.close();
    FlowDescriptor d = flow(1).dest(new NetEndpoint(ch));
    flows.post(d);
    assertEquals(Errno.EIO, d.completion().get(2, TimeUnit.SECONDS).errorCode(), "long before the stall timeout");
  }

  @Test
  void stall_noProgress_failsWithEio() throws Exception {
    FlowInterface quick = closing(FlowInterface.initialize(name + "q", Duration.ofMillis(200), counters, List.of(
        new TemplateProtocol("t"))));
    FlowDescriptor idle = quick.alloc().tag(1).src(MEM).dest(MEM).aggregateSize(0);
    FlowDescriptor busy = quick.alloc().tag(2).src(MEM).dest(MEM).aggregateSize(0);
    long t0 = System.nanoTime();
    quick.post(idle);
    quick.post(busy);
    while (!idle.state().isDone() && System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(5)) {
      quick.submit(() -> busy.transferred(1)); // progress, on the service thread as a protocol would
      Thread.sleep(40);
    }
    long tookMs = (System.nanoTime() - t0) / 1_000_000;
    assertEquals(FlowState.ERROR, idle.state());
    assertEquals(Errno.EIO, idle.errorCode());
    assertTrue(tookMs >= 190, "failed after " + tookMs + " ms");
    assertEquals(FlowState.IN_SERVICE, busy.state(), "a flow making progress is not stalled");
  }

  @Test
  void close_failsFlowsInServiceWithEio() throws Exception {
    List<FlowDescriptor> l = posted(1, 2, 3);
    FlowDescriptor otherFlow = flow(4).type("other");
    flows.post(otherFlow);
    flows.close();
    for (FlowDescriptor d : l) {
      assertTrue(d.completion().isDone(), "done when close returns");
      assertEquals(FlowState.ERROR, d.state());
      assertEquals(Errno.EIO, d.errorCode());
    }
    assertEquals(Errno.EIO, otherFlow.errorCode());
    assertEquals(Set.copyOf(l), Set.copyOf(template.cancelled));
    assertTrue(template.cancelThreads.stream().allMatch(t -> t.equals(name + "-flow-service")));
    assertTrue(template.shutdown && other.shutdown);
    assertEquals(0, flows.getInfo("active-flows"));
    flows.close(); // again: nothing happens
    Thread loop = Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals(name + "-flow-service"))
        .findFirst().orElse(null);
    if (loop != null) {
      loop.join(2000);
      assertFalse(loop.isAlive(), "the service thread stopped");
    }
  }

  @Test
  void idle_nothingReady_serviceThreadBlocked() throws Exception {
    posted(1, 2); // in service, never ready
    FlowProtocolContract.assertIdle(name + "-flow-service");
  }

  private static ByteBuf direct(int n) {
    ByteBuf b = PooledByteBufAllocator.DEFAULT.directBuffer(n);
    b.writeZero(n);
    return b;
  }
}
