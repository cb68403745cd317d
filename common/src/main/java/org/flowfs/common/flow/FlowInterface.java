package org.flowfs.common.flow;

import io.netty.channel.Channel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.PriorityBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.NamedThreads;
import org.flowfs.common.wire.Envelope;
import org.flowfs.common.wire.IoOp.FlowData;
import org.flowfs.common.wire.IoOp.FlowDone;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The flow interface (seed 001's {@code PINT_flow_*}): flows are allocated, posted, serviced and
 * tested here; the protocols below move the bytes.
 *
 * <p><b>The service loop</b> runs on one thread. Protocols hand a flow to it with {@link #ready}
 * when an event makes the flow ready for service; the loop takes ready flows highest priority
 * first (then in arrival order) and calls the flow's protocol for one iteration of work. Nothing
 * polls: the loop sleeps until a flow is ready.
 *
 * <p>A flow with a network endpoint is found by (connection, tag) when its frames arrive
 * ({@link #deliver}); when its connection closes, or it makes no progress for the stall timeout,
 * it fails with EIO. Thread safe.
 */
public final class FlowInterface implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(FlowInterface.class);

  private final String name;
  private final Map<String, FlowProtocol> protocols = new LinkedHashMap<>();
  private volatile String defaultType;
  private volatile Duration stallTimeout;
  private final Counters counters;
  private final PriorityBlockingQueue<Work> queue = new PriorityBlockingQueue<>();
  private final AtomicLong seq = new AtomicLong();
  private final Map<Key, FlowDescriptor> byTag = new ConcurrentHashMap<>();
  private final Set<FlowDescriptor> active = ConcurrentHashMap.newKeySet();
  private final Set<Channel> watched = ConcurrentHashMap.newKeySet();
  private final Map<Integer, LinkedBlockingQueue<FlowDescriptor>> contexts = new ConcurrentHashMap<>();
  /** The context of a flow posted without one: its completion is queued nowhere. */
  static final int NO_CONTEXT = 0;
  private final AtomicInteger nextContext = new AtomicInteger(1);
  private final ScheduledExecutorService timer;
  private final Thread loop;
  private volatile boolean closed;

  private record Key(Channel channel, long tag) {}

  /** One item of the service queue: a ready flow, or a task that must run on the service thread. */
  private record Work(int priority, long seq, FlowDescriptor flow, Runnable task) implements Comparable<Work> {
    @Override
    public int compareTo(Work o) {
      if (priority != o.priority) {
        return Integer.compare(o.priority, priority);
      }
      return Long.compare(seq, o.seq);
    }
  }

  private FlowInterface(String name, Duration stallTimeout, Counters counters, List<FlowProtocol> protos) {
    this.name = name;
    this.stallTimeout = stallTimeout;
    this.counters = counters;
    for (FlowProtocol p : protos) {
      if (protocols.put(p.name(), p) != null) {
        throw new IllegalArgumentException("two flow protocols named " + p.name());
      }
    }
    this.defaultType = protos.get(0).name();
    this.loop = new Thread(NamedThreads.confined(this::serviceLoop), name + "-flow-service");
    this.loop.setDaemon(true);
    ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, new NamedThreads(name + "-flow-timer"));
    t.setRemoveOnCancelPolicy(true);
    this.timer = t;
  }

  /**
   * Starts a flow interface with these protocols, the first being the default (PINT_flow_initialize).
   *
   * @param stallTimeout a flow that moves nothing for this long fails with EIO
   */
  public static FlowInterface initialize(String name, Duration stallTimeout, Counters counters, List<FlowProtocol> protocols) {
    if (protocols.isEmpty()) {
      throw new IllegalArgumentException("no flow protocols");
    }
    FlowInterface f = new FlowInterface(name, stallTimeout, counters, protocols);
    for (FlowProtocol p : protocols) {
      p.initialize(f);
    }
    f.loop.start();
    long period = Math.max(50, Math.min(1000, stallTimeout.toMillis() / 4));
    f.timer.scheduleAtFixedRate(f::checkStalls, period, period, TimeUnit.MILLISECONDS);
    return f;
  }

  public Counters counters() {
    return counters;
  }

  /** The registered protocol names, the default first. */
  public List<String> protocolNames() {
    List<String> l = new ArrayList<>(protocols.keySet());
    l.remove(defaultType);
    l.add(0, defaultType);
    return l;
  }

  // ---- descriptors ----------------------------------------------------------------------------

  /** A new descriptor in its initial state (PINT_flow_alloc). */
  public FlowDescriptor alloc() {
    return new FlowDescriptor();
  }

  /** Forgets a descriptor that is not in service (PINT_flow_free). */
  public void free(FlowDescriptor d) {
    if (d.state() == FlowState.IN_SERVICE) {
      throw new IllegalStateException("cannot free a flow in service");
    }
    d.protocolData(null);
  }

  /** Back to the initial state, for reuse (PINT_flow_reset). */
  public void reset(FlowDescriptor d) {
    if (d.state() == FlowState.IN_SERVICE) {
      throw new IllegalStateException("cannot reset a flow in service");
    }
    d.reset();
  }

  /** Higher priorities are serviced first among ready flows; may change while in service. */
  public void setPriority(FlowDescriptor d, int priority) {
    d.priority = priority;
  }

  public int getPriority(FlowDescriptor d) {
    return d.priority;
  }

  /** Opens a context: a set of flows whose completions {@link #testContext} returns. */
  public int openContext() {
    int id = nextContext.getAndIncrement();
    contexts.put(id, new LinkedBlockingQueue<>());
    return id;
  }

  public void closeContext(int id) {
    contexts.remove(id);
  }

  /**
   * Posts a flow for service in no context (PINT_flow_post): its end is seen through its
   * completion, {@link #test} or {@link #testSome}, and nothing keeps it once it ended.
   */
  public CompletableFuture<FlowDescriptor> post(FlowDescriptor d) {
    return post(d, NO_CONTEXT);
  }

  /**
   * Posts a flow for service; its completion is also queued for {@link #testContext} of {@code
   * contextId}, one opened with {@link #openContext}, or queued nowhere for {@link #NO_CONTEXT}.
   */
  public CompletableFuture<FlowDescriptor> post(FlowDescriptor d, int contextId) {
    if (closed) {
      throw new IllegalStateException(name + " flow interface is closed");
    }
    if (d.state() != FlowState.INITIAL) {
      throw new IllegalStateException("flow already posted: " + d);
    }
    if (d.src() == null || d.dest() == null || d.fileReq() == null && d.aggregateSize() < 0) {
      throw new IllegalArgumentException("a flow needs src, dest, and a file request or an aggregate size");
    }
    FlowProtocol p = protocols.get(d.type() == null ? defaultType : d.type());
    if (p == null) {
      throw new IllegalArgumentException("no flow protocol '" + d.type() + "'; have " + protocols.keySet());
    }
    if (!p.supports(d.src(), d.dest())) {
      throw new IllegalArgumentException(p.name() + " cannot move " + d.src().getClass().getSimpleName()
          + " to " + d.dest().getClass().getSimpleName());
    }
    if (contextId != NO_CONTEXT && !contexts.containsKey(contextId)) {
      throw new IllegalArgumentException("no context " + contextId);
    }
    d.flowproto = p;
    d.contextId = contextId;
    d.state(FlowState.IN_SERVICE);
    d.lastProgressNanos = System.nanoTime();
    active.add(d);
    List<Key> keys = new ArrayList<>(2);
    for (Endpoint e : List.of(d.src(), d.dest())) {
      if (e instanceof NetEndpoint n) {
        Key k = new Key(n.channel(), d.tag());
        if (byTag.putIfAbsent(k, d) != null) {
          keys.forEach(x -> byTag.remove(x, d));
          active.remove(d);
          d.state(FlowState.INITIAL);
          throw new IllegalStateException("a flow with tag " + d.tag() + " is already in service on " + n.channel());
        }
        keys.add(k);
      }
    }
    // watch only once the flow can be found by its connection: a connection that is closed
    // already (or closes right now) must fail it
    keys.forEach(k -> watch(k.channel()));
    counters.increment("flow.posted");
    submit(() -> {
      if (d.state() != FlowState.IN_SERVICE) {
        return; // failed before its protocol took it (closed connection, close()): nothing to start
      }
      try {
        p.post(d);
      } catch (RuntimeException e) {
        fail(d, Errno.from(e), e.getMessage());
      }
    });
    return d.completion();
  }

  // ---- completion tests -----------------------------------------------------------------------

  /** Waits up to {@code timeoutMs} for one flow; true if it is done (PINT_flow_test). */
  public boolean test(FlowDescriptor d, long timeoutMs) {
    try {
      d.completion().get(timeoutMs, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (java.util.concurrent.ExecutionException e) {
      return true;
    }
    return true;
  }

  /** The flows of {@code flows} that are done, waiting up to {@code timeoutMs} for one (PINT_flow_testsome). */
  public List<FlowDescriptor> testSome(Collection<FlowDescriptor> flows, long timeoutMs) {
    List<FlowDescriptor> done = doneOf(flows);
    if (!done.isEmpty() || timeoutMs <= 0 || flows.isEmpty()) {
      return done;
    }
    try {
      CompletableFuture.anyOf(flows.stream().map(FlowDescriptor::completion).toArray(CompletableFuture[]::new))
          .get(timeoutMs, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.TimeoutException | java.util.concurrent.ExecutionException e) {
      // report what is done
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return doneOf(flows);
  }

  private static List<FlowDescriptor> doneOf(Collection<FlowDescriptor> flows) {
    List<FlowDescriptor> done = new ArrayList<>();
    for (FlowDescriptor d : flows) {
      if (d.state().isDone()) {
        done.add(d);
      }
    }
    return done;
  }

  /** Up to {@code max} flows of a context that completed, waiting up to {@code timeoutMs} for one (PINT_flow_testcontext). */
  public List<FlowDescriptor> testContext(int contextId, int max, long timeoutMs) {
    LinkedBlockingQueue<FlowDescriptor> q = contexts.get(contextId);
    if (q == null) {
      throw new IllegalArgumentException("no context " + contextId);
    }
    List<FlowDescriptor> out = new ArrayList<>();
    if (max <= 0) {
      return out;
    }
    q.drainTo(out, max);
    if (out.isEmpty() && timeoutMs > 0) {
      try {
        FlowDescriptor d = q.poll(timeoutMs, TimeUnit.MILLISECONDS);
        if (d != null) {
          out.add(d);
          q.drainTo(out, max - 1);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return out;
  }

  // ---- parameters -----------------------------------------------------------------------------

  /**
   * Reads a parameter (PINT_flow_getinfo): {@code default-protocol}, {@code stall-timeout}, {@code
   * active-flows}, or {@code <protocol>.<key>} for a protocol's own.
   */
  public Object getInfo(String key) {
    return switch (key) {
      case "default-protocol" -> defaultType;
      case "stall-timeout" -> stallTimeout;
      case "active-flows" -> active.size();
      default -> {
        int dot = key.indexOf('.');
        FlowProtocol p = dot < 0 ? null : protocols.get(key.substring(0, dot));
        yield p == null ? null : p.getInfo(key.substring(dot + 1));
      }
    };
  }

  /** Sets a parameter (PINT_flow_setinfo); keys as for {@link #getInfo}. */
  public void setInfo(String key, Object value) {
    switch (key) {
      case "default-protocol" -> {
        if (!protocols.containsKey((String) value)) {
          throw new IllegalArgumentException("no flow protocol '" + value + "'");
        }
        defaultType = (String) value;
      }
      case "stall-timeout" -> stallTimeout = (Duration) value;
      default -> {
        int dot = key.indexOf('.');
        FlowProtocol p = dot < 0 ? null : protocols.get(key.substring(0, dot));
        if (p == null) {
          throw new IllegalArgumentException("unknown flow parameter " + key);
        }
        p.setInfo(key.substring(dot + 1), value);
      }
    }
  }

  // ---- for protocols and the network ------------------------------------------------------------

  /** Queues a flow for one iteration of service; called by protocols on events. Idempotent while queued. */
  public void ready(FlowDescriptor d) {
    if (d.state() == FlowState.IN_SERVICE && d.queued.compareAndSet(false, true)) {
      queue.add(new Work(d.priority, seq.incrementAndGet(), d, null));
    }
  }

  /** Runs {@code task} on the service thread, before any ready flow. */
  public void submit(Runnable task) {
    queue.add(new Work(Integer.MAX_VALUE, seq.incrementAndGet(), null, task));
  }

  /** Ends a flow successfully; protocols call this on the service thread. */
  public void complete(FlowDescriptor d) {
    finish(d, FlowState.COMPLETE, Errno.OK, null);
  }

  /**
   * Ends a flow in the ERROR state. From any thread: the protocol releases what the flow holds
   * on the service thread first.
   */
  public void fail(FlowDescriptor d, Errno errno, String detail) {
    if (Thread.currentThread() == loop) {
      if (d.state() == FlowState.IN_SERVICE) {
        d.errorCode(errno == Errno.OK ? Errno.EIO : errno);
        try {
          d.flowproto.cancel(d);
        } catch (RuntimeException e) {
          LOG.warn("{}: releasing failed {} failed", name, d, e);
        }
        finish(d, FlowState.ERROR, d.errorCode(), detail);
      }
    } else {
      submit(() -> fail(d, errno, detail));
    }
  }

  private void finish(FlowDescriptor d, FlowState s, Errno e, String detail) {
    if (d.state() != FlowState.IN_SERVICE) {
      return;
    }
    active.remove(d);
    for (Endpoint ep : List.of(d.src(), d.dest())) {
      if (ep instanceof NetEndpoint n) {
        byTag.remove(new Key(n.channel(), d.tag()), d);
      }
    }
    d.errorCode(e);
    if (s == FlowState.ERROR) {
      d.errorDetail(detail);
    }
    d.state(s);
    if (s == FlowState.ERROR) {
      counters.increment("flow.errors");
      LOG.debug("{}: {} failed: {} {}", name, d, e, detail);
    } else {
      counters.increment("flow.completed");
    }
    LinkedBlockingQueue<FlowDescriptor> q = contexts.get(d.contextId);
    if (q != null) {
      q.add(d);
    }
    d.completion().complete(d);
  }

  /**
   * Routes a frame of a flow ({@code FlowData}, {@code FlowDone}) to the flow with its tag on
   * this connection; returns false (and releases the frame) if there is none.
   */
  public boolean deliver(Channel ch, Envelope env) {
    FlowDescriptor d = byTag.get(new Key(ch, env.id()));
    if (d == null || !(env.message() instanceof FlowData || env.message() instanceof FlowDone)) {
      env.release();
      return false;
    }
    d.flowproto.receive(d, env);
    return true;
  }

  private void watch(Channel ch) {
    if (watched.add(ch)) {
      ch.closeFuture().addListener(f -> {
        watched.remove(ch);
        for (Map.Entry<Key, FlowDescriptor> e : byTag.entrySet()) {
          if (e.getKey().channel() == ch) {
            fail(e.getValue(), Errno.EIO, "connection to " + ch.remoteAddress() + " closed");
          }
        }
      });
    }
  }

  private void checkStalls() {
    long limit = stallTimeout.toNanos();
    long now = System.nanoTime();
    for (FlowDescriptor d : active) {
      if (now - d.lastProgressNanos > limit) {
        fail(d, Errno.EIO, "no progress for " + stallTimeout.toMillis() + " ms");
      }
    }
  }

  private void serviceLoop() {
    while (!closed) {
      Work w;
      try {
        w = queue.take();
      } catch (InterruptedException e) {
        if (closed) {
          return;
        }
        continue;
      }
      try {
        if (w.task() != null) {
          w.task().run();
        } else {
          FlowDescriptor d = w.flow();
          d.queued.set(false);
          if (d.state() == FlowState.IN_SERVICE) {
            d.flowproto.service(d);
          }
        }
      } catch (RuntimeException e) {
        if (w.flow() != null) {
          fail(w.flow(), Errno.from(e), e.toString());
        } else {
          LOG.error("{}: flow task failed", name, e);
        }
      }
    }
  }

  /** Fails every flow still in service, stops the protocols and the service thread (PINT_flow_finalize). */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    CompletableFuture<Void> drained = new CompletableFuture<>();
    submit(() -> {
      for (FlowDescriptor d : List.copyOf(active)) {
        fail(d, Errno.EIO, "flow interface closed");
      }
      for (FlowProtocol p : protocols.values()) {
        p.shutdown();
      }
      drained.complete(null);
    });
    try {
      drained.get(5, TimeUnit.SECONDS);
    } catch (Exception e) {
      LOG.warn("{}: flows did not drain: {}", name, e.toString());
    }
    closed = true;
    loop.interrupt();
    timer.shutdownNow();
  }
}
