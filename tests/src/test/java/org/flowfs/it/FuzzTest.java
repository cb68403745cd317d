package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.internal.PlatformDependent;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.flowfs.cli.EmbeddedCluster;
import org.flowfs.client.Caller;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.common.Attr;
import org.flowfs.common.Counters;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Handle;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.config.Secret;
import org.flowfs.common.request.Request;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.rpc.RawPeer;
import org.flowfs.common.rpc.RpcClient;
import org.flowfs.common.wire.CommonOp.PingReq;
import org.flowfs.common.wire.CommonOp.PingResp;
import org.flowfs.common.wire.Envelope;
import org.flowfs.common.wire.FrameDecoder;
import org.flowfs.common.wire.Frames;
import org.flowfs.common.wire.IoOp.EagerData;
import org.flowfs.common.wire.IoOp.EagerWriteReq;
import org.flowfs.common.wire.IoOp.FlowData;
import org.flowfs.common.wire.IoOp.FlowDone;
import org.flowfs.common.wire.IoOp.FlowReq;
import org.flowfs.common.wire.LeakCheck;
import org.flowfs.common.wire.MessageRegistry;
import org.flowfs.common.wire.RequestSpec;
import org.flowfs.it.HostileFrames.Expect;
import org.flowfs.it.HostileFrames.Role;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hostile input to every server port of a real file system (the servers in this JVM, as {@code
 * flowfs up} runs them): random bytes, truncated frames, oversized length fields, unknown types,
 * wrong versions and kinds, frames of every request type with out-of-range fields, absurd flows,
 * eager writes and flows whose data never comes, many connections; before the membership
 * handshake and after it (a member may be broken too). Each input is checked against what the
 * server must do with it (answer, drop, or close that connection: decided by the real decoder),
 * while a member client keeps working on the same servers. Afterwards every server still answers,
 * a client can create, write, read and list, memory is back where it was and nothing leaked.
 *
 * <p>{@code -Dflowfs.fuzz.scale=N} multiplies the number of inputs (default 1: at least 100,000
 * per server type).
 */
@ExtendWith(LeakCheck.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(value = 600, unit = TimeUnit.SECONDS)
class FuzzTest {
  private static final double SCALE = Double.parseDouble(System.getProperty("flowfs.fuzz.scale", "1"));
  private static final int MAX_FRAME = 2 << 20;
  private static final int PRE_AUTH_LIMIT = 1024;
  /** IoServer.MAX_FLOWS_PER_CONNECTION. */
  private static final int MAX_FLOWS_PER_CONNECTION = 128;
  private static final long STALL_MS = 3000;
  /** Fuzzing threads: enough to keep every server busy, few enough to leave its event loops CPU. */
  private static final int THREADS = 8;

  @TempDir static Path dir;
  static EmbeddedCluster cluster;
  static NetRuntime net;
  static FileSystemClient member;
  static Secret secret;
  static List<Handle> metaHandles = new ArrayList<>();
  static List<Handle> metaDirs = new ArrayList<>();
  static List<List<Handle>> ioHandles = new ArrayList<>();
  static int ioServers;

  @BeforeAll
  static void up() throws Exception {
    Path data = dir.resolve("data");
    Files.createDirectories(data);
    Files.writeString(data.resolve("flowfs.conf"), EmbeddedCluster.configText(data, 2, 0)
        + "rpc.timeout = " + STALL_MS + "ms\n"
        + "rpc.auth-timeout = 3s\n"
        + "rpc.max-frame = " + MAX_FRAME + "\n");
    FlowFsConfig config = FlowFsConfig.load(data.resolve("flowfs.conf"));
    secret = config.rpc().secret();
    cluster = EmbeddedCluster.start(config);
    ioServers = config.ioServers().size();
    net = NetRuntime.create("fuzz-member", 2);
    member = new FileSystemClient(cluster.config(), net);
    // what the fuzzer may damage: its own tree and the datafiles of its own files
    member.mkdir("/fuzz", 0777, Caller.ROOT);
    for (int i = 0; i < 4; i++) {
      metaDirs.add(member.mkdir("/fuzz/d" + i, 0777, Caller.ROOT).handle());
    }
    for (int i = 0; i < ioServers; i++) {
      ioHandles.add(new ArrayList<>());
    }
    for (int i = 0; i < 8; i++) {
      OpenFile f = member.create("/fuzz/d" + (i % 4) + "/f" + i, 0666, 0, Caller.ROOT);
      member.write(f, 0, Unpooled.wrappedBuffer(new byte[300_000 + i]));
      member.release(f);
      Attr a = member.getattr("/fuzz/d" + (i % 4) + "/f" + i);
      metaHandles.add(a.handle());
      for (Handle h : a.layout().datafiles()) {
        ioHandles.get(h.ioServer()).add(h);
      }
    }
    member.mkdir("/live", 0777, Caller.ROOT);
  }

  @AfterAll
  static void down() {
    if (member != null) {
      member.close();
    }
    if (net != null) {
      net.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  // ---- the campaign ---------------------------------------------------------------------------

  /** One server port under attack. */
  private record Target(String name, Role role, InetSocketAddress address, List<Handle> handles, List<Handle> dirs) {}

  /** Inputs sent, by server type and kind. */
  private final Map<String, LongAdder> sent = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();

  private void count(Target t, String kind, long n) {
    sent.computeIfAbsent(t.role + " " + kind, k -> new LongAdder()).add(n);
    sent.computeIfAbsent(t.role + " total", k -> new LongAdder()).add(n);
  }

  private final Map<String, LongAdder> busy = new ConcurrentHashMap<>();
  private final Map<String, LongAdder> latency = new ConcurrentHashMap<>();
  private final Map<String, LongAdder> calls = new ConcurrentHashMap<>();

  private Runnable timed(Target t, String what, Runnable r) {
    return () -> {
      long t0 = System.nanoTime();
      try {
        r.run();
      } finally {
        busy.computeIfAbsent(t.role + " " + what, k -> new LongAdder()).add(System.nanoTime() - t0);
      }
    };
  }

  private void failure(Target t, String what) {
    if (failures.size() < 50) {
      failures.add(t.name + ": " + what);
    }
  }

  @Test
  @Order(1)
  void hostileInputs_toEveryServerPort_closeOnlyTheirConnections_andTheFileSystemStillWorks() throws Exception {
    List<Target> targets = targets();
    Memory before = Memory.settled();
    Counters metaBefore = snapshot(cluster.meta().counters());
    Bystander bystander = new Bystander();
    Pinger pinger = new Pinger(targets);
    Memory.Sampler sampler = new Memory.Sampler();
    long t0 = System.nanoTime();
    ExecutorService pool = Executors.newFixedThreadPool(THREADS, r -> {
      Thread th = new Thread(r, "fuzz");
      th.setDaemon(true);
      return th;
    });
    try {
      long seed = Long.getLong("flowfs.fuzz.seed", System.nanoTime());
      System.out.println("fuzz seed " + seed + " (-Dflowfs.fuzz.seed=" + seed + " repeats it)");
      List<Runnable> tasks = new ArrayList<>();
      for (Target t : targets) {
        int share = t.role == Role.IO ? ioServers : 1; // the I/O server type's inputs are spread over its servers
        // a connection closed by an input carries one hostile input after a few good ones; the most
        // inputs travel pipelined on connections the server keeps (ten times cheaper per input)
        int preAuth = (int) (4000 * SCALE / share);
        int shortConns = (int) (1500 * SCALE / share);
        int longConns = (int) Math.max(1, 120 * SCALE / share);
        for (int i = 0; i < preAuth; i += 50) {
          long s = seed ^ (t.name.hashCode() * 31L + i);
          tasks.add(timed(t, "pre-auth", () -> preAuthBatch(t, new Random(s), 50)));
        }
        for (int i = 0; i < shortConns; i += 10) {
          long s = seed ^ (t.name.hashCode() * 131L + i);
          tasks.add(timed(t, "short", () -> {
            Random r = new Random(s);
            for (int k = 0; k < 10; k++) {
              memberConnection(t, r, 10, true);
            }
          }));
        }
        for (int i = 0; i < longConns; i++) {
          long s = seed ^ (t.name.hashCode() * 1031L + i);
          tasks.add(timed(t, "long", () -> memberConnection(t, new Random(s), 700, false)));
        }
        tasks.add(timed(t, "many", () -> manyConnections(t, 300)));
      }
      Collections.shuffle(tasks, new Random(seed)); // every server under attack at once
      List<Future<?>> work = new ArrayList<>();
      for (Runnable task : tasks) {
        work.add(pool.submit(task));
      }
      for (Future<?> f : work) {
        f.get(300, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
      bystander.stop();
      pinger.stop();
      sampler.stop();
    }
    long fuzzMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);

    // the servers still serve: ping each, then a client's whole cycle
    for (Target t : targets) {
      try (RpcClient c = new RpcClient(t.name, net, t.address, cluster.config().rpc(), MessageRegistry.DEFAULT)) {
        PingResp p = c.call(new PingReq(42)).get(10, TimeUnit.SECONDS);
        assertEquals(42, p.sentNanos(), t.name);
      }
    }
    workingFileSystem("/after-fuzz");
    awaitFlowsDrained();
    Memory after = Memory.settled();

    Map<String, Long> totals = new TreeMap<>();
    sent.forEach((k, v) -> totals.put(k, v.sum()));
    System.out.printf("fuzz: %d ms; inputs %s%n", fuzzMs, totals);
    Map<String, Long> busyMs = new TreeMap<>();
    busy.forEach((k, v) -> busyMs.put(k, TimeUnit.NANOSECONDS.toMillis(v.sum())));
    System.out.printf("fuzz: thread-milliseconds by campaign %s%n", busyMs);
    Map<String, String> lat = new TreeMap<>();
    latency.forEach((k, v) -> lat.put(k, calls.get(k).sum() + " x " + TimeUnit.NANOSECONDS.toMillis(v.sum() / calls.get(k).sum()) + " ms"));
    System.out.printf("fuzz: answered requests, mean time since their batch was sent %s%n", lat);
    System.out.printf("fuzz: bystander %d cycles, %d failures%n", bystander.cycles.get(), bystander.errors.size());
    System.out.printf("fuzz: pings %d, slowest %d ms, failed %s%n", pinger.pings.get(), pinger.slowestMs.get(), pinger.errors);
    System.out.printf("fuzz: memory before %s%nfuzz: memory peak   %s%nfuzz: memory after  %s%n", before, sampler.peak(), after);
    for (Target t : targets) {
      Counters c = t.role == Role.META ? cluster.meta().counters() : cluster.io(Integer.parseInt(t.name.substring(9))).counters();
      System.out.printf("fuzz: %s connections %s%n", t.name, connectionCounters(c));
    }
    assertTrue(failures.isEmpty(), failures.size() + " failures, first: \n" + String.join("\n", failures));
    assertTrue(bystander.errors.isEmpty(), "the member's work failed during the fuzz: " + bystander.errors);
    assertTrue(bystander.cycles.get() > 0, "the member made progress during the fuzz");
    assertTrue(pinger.errors.isEmpty(), "pings failed during the fuzz: " + pinger.errors);
    assertTrue(pinger.slowestMs.get() < 5000, "a server took " + pinger.slowestMs + " ms to answer a ping");
    assertTrue(totals.getOrDefault("META total", 0L) >= 100_000L * SCALE, "inputs to the metadata server: " + totals);
    assertTrue(totals.getOrDefault("IO total", 0L) >= 100_000L * SCALE, "inputs to the I/O servers: " + totals);
    assertTrue(cluster.meta().counters().get("connections.malformed") > metaBefore.get("connections.malformed"),
        "the metadata server counted malformed connections");
    // memory: back near where it started, and never far above it
    assertTrue(after.heapUsed - before.heapUsed < (256L << 20), "heap grew from " + before + " to " + after);
    assertTrue(after.pooledDirect - before.pooledDirect < (64L << 20), "pooled direct memory grew from " + before + " to " + after);
    assertTrue(sampler.peak().pooledDirect < (768L << 20), "pooled direct memory peaked at " + sampler.peak());
  }

  @Test
  @Order(2)
  void flowsAndEagerWritesWhoseDataNeverComes_areFreed() throws Exception {
    Target t = targets().get(1);
    Counters io = cluster.io(0).counters();
    Handle h = t.handles.get(0);
    long erroredBefore = io.get("flow.errors");
    Memory before = Memory.settled();
    int flows = 400;
    try (RawPeer p = RawPeer.member(t.address, secret, 20_000)) {
      Reader rd = new Reader(p);
      for (int i = 0; i < flows; i++) {
        p.send(Envelope.request(1000 + i, new FlowReq(5000 + i, h, true, RequestSpec.of(Request.BYTE), 0, 256 * 1024,
            DistSpec.of("simple_stripe", 65536), 0, ioServers, 0, null)));
      }
      for (int i = 0; i < 200; i++) {
        p.send(Envelope.request(3000 + i, new EagerWriteReq(9000 + i, h, 0, 32 * 1024)));
      }
      // each flow is acknowledged at once; then neither its data nor the eager data ever comes
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(STALL_MS * 4);
      while (rd.answered.size() < flows + 200 && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertEquals(flows + 200, rd.answered.size(), "every flow answered and every eager write failed within the timeout");
      for (int i = 0; i < 200; i++) {
        assertTrue(rd.errors.contains(3000L + i), "eager write " + i + " without data failed");
      }
      long refused = java.util.stream.LongStream.range(1000, 1000 + flows).filter(rd.errors::contains).count();
      assertEquals(flows - MAX_FLOWS_PER_CONNECTION, refused, "flows past the per-connection limit are refused");
      awaitFlowsDrained();
      assertTrue(io.get("flow.errors") - erroredBefore >= MAX_FLOWS_PER_CONNECTION, "the stalled flows failed");
      // the connection is still good for the member
      p.send(Envelope.request(7, new PingReq(7)));
      long d2 = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (!rd.answered.contains(7L) && System.nanoTime() < d2) {
        Thread.sleep(10);
      }
      assertTrue(rd.answered.contains(7L));
      // frames for flows and eager writes nobody waits for: flow frames are dropped, eager data closes
      p.send(Envelope.oneway(5000, new FlowData(Unpooled.wrappedBuffer(new byte[100]))));
      p.send(Envelope.oneway(5001, new FlowDone(0, 0, 0)));
      p.send(Envelope.request(8, new PingReq(8)));
      long d3 = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (!rd.answered.contains(8L) && System.nanoTime() < d3) {
        Thread.sleep(10);
      }
      assertTrue(rd.answered.contains(8L), "flow frames of finished flows are dropped, the connection kept");
      p.send(Envelope.oneway(9000, new EagerData(Unpooled.wrappedBuffer(new byte[10]))));
      assertTrue(rd.awaitClosed(5000), "eager data nobody waits for closes the connection");
    }
    // a connection that closes with flows and eager writes pending frees them at once
    try (RawPeer p = RawPeer.member(t.address, secret, 20_000)) {
      new Reader(p);
      for (int i = 0; i < 100; i++) {
        p.send(Envelope.request(100 + i, new FlowReq(100 + i, h, true, RequestSpec.of(Request.BYTE), 0, 65536,
            DistSpec.of("simple_stripe", 65536), 0, ioServers, 0, null)));
        p.send(Envelope.request(300 + i, new EagerWriteReq(300 + i, h, 0, 1000)));
      }
      Thread.sleep(200);
    }
    long t0 = System.nanoTime();
    awaitFlowsDrained();
    System.out.printf("fuzz: pending flows freed %d ms after their connection closed%n",
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
    Memory after = Memory.settled();
    System.out.printf("fuzz: stalled flows: memory before %s, after %s%n", before, after);
    assertTrue(after.pooledDirect - before.pooledDirect < (16L << 20), before + " -> " + after);
    workingFileSystem("/after-stalls");
  }

  // ---- one connection's worth of inputs ----------------------------------------------------------

  /** {@code n} connections that each send one input without proving membership; each must be closed. */
  private void preAuthBatch(Target t, Random r, int n) {
    HostileFrames g = new HostileFrames(r, t.role, MAX_FRAME, t.handles, t.dirs, ioServers);
    for (int i = 0; i < n; i++) {
      byte[] input;
      String kind;
      switch (r.nextInt(7)) {
        case 0 -> { input = g.randomBytes(); kind = "pre-auth random bytes"; }
        case 1 -> { input = g.oversizedLength(); kind = "pre-auth oversized length"; }
        case 2 -> { input = g.badHeader(); kind = "pre-auth bad header"; }
        case 3 -> { input = g.truncated(r.nextBoolean()); kind = "pre-auth truncated"; }
        case 4 -> { input = g.mutated(1); kind = "pre-auth mutated"; }
        default -> { input = g.request(10, r.nextInt(1000)); kind = "pre-auth request"; }
      }
      count(t, kind, 1);
      try (RawPeer p = RawPeer.connect(t.address, 5000)) {
        p.send(input);
        if (frameLength(input) <= PRE_AUTH_LIMIT - Frames.LENGTH_FIELD && !complete(input)) {
          // waits for the rest of its frame: the auth timeout closes it; check that now and then
          if (r.nextInt(100) == 0 && !p.closedByPeer()) {
            failure(t, kind + ": a connection that never proved membership stayed open");
          }
          continue;
        }
        if (input.length < Frames.LENGTH_FIELD) {
          continue; // not even a length field: it waits for more, as above
        }
        if (!p.closedByPeer()) {
          failure(t, kind + " before the handshake did not close the connection: " + hex(input));
        }
      } catch (IOException e) {
        if (!(e instanceof java.net.SocketException)) {
          failure(t, kind + ": " + e);
        }
      }
    }
  }

  /**
   * A member's connection: the handshake, {@code n} inputs that must be answered (or dropped),
   * checked as the answers come, then (if {@code closeWithHostile}) one input that must close it.
   */
  private void memberConnection(Target t, Random r, int n, boolean closeWithHostile) {
    HostileFrames g = new HostileFrames(r, t.role, MAX_FRAME, t.handles, t.dirs, ioServers);
    byte[] last = null;
    String lastKind = null;
    List<byte[]> frames = new ArrayList<>();
    Map<Long, Integer> answers = new TreeMap<>();
    Map<Long, String> types = new java.util.HashMap<>();
    int attempts = 0;
    while (frames.size() < n && attempts++ < n * 20) {
      long id = 1 + r.nextInt(1 << 30);
      byte[] f;
      String kind;
      int roll = r.nextInt(100);
      if (roll < 10) {
        f = g.mutated(id);
        kind = "member mutated";
      } else if (roll < 13) {
        f = g.request(100, id);
        kind = "member hostile fields";
      } else {
        f = g.request(12, id);
        kind = "member out-of-range fields";
      }
      Expect e = g.expect(f);
      if (e == Expect.CLOSE) {
        if (last == null && closeWithHostile) {
          last = f;
          lastKind = kind + " (closing)";
        }
        continue;
      }
      frames.add(f);
      count(t, kind, 1);
      if (e == Expect.ANSWER) {
        answers.merge(idOf(f), 1, Integer::sum);
        types.put(idOf(f), typeOf(f));
      }
    }
    if (closeWithHostile && last == null) {
      last = switch (r.nextInt(4)) {
        case 0 -> g.randomBytes();
        case 1 -> g.oversizedLength();
        case 2 -> g.badHeader();
        default -> g.truncated(false);
      };
      lastKind = "member garbage (closing)";
    }
    try (RawPeer p = RawPeer.member(t.address, secret, 30_000)) {
      Reader rd = new Reader(p);
      OutputStream out = p.socket().getOutputStream();
      long sentAt = System.nanoTime();
      for (byte[] f : frames) {
        out.write(f);
      }
      out.flush();
      rd.latency = (id, at) -> {
        String type = types.get(id);
        if (type != null) {
          latency.computeIfAbsent(t.role + " " + type, k -> new LongAdder()).add(at - sentAt);
          calls.computeIfAbsent(t.role + " " + type, k -> new LongAdder()).increment();
        }
      };
      long expected = answers.values().stream().mapToLong(Integer::intValue).sum();
      if (!rd.await(answers, 60_000)) {
        StringBuilder missing = new StringBuilder();
        for (byte[] f : frames) {
          if (answers.containsKey(idOf(f)) && rd.got.getOrDefault(idOf(f), 0) < answers.get(idOf(f)) && missing.length() < 4000) {
            missing.append("\n  unanswered ").append(describe(f)).append(": ").append(hex(f));
          }
        }
        failure(t, "answered " + rd.responses.get() + " of " + expected + " requests, closed " + rd.closed.get()
            + (rd.problem != null ? ", " + rd.problem : "") + missing);
        return;
      }
      if (last != null) {
        count(t, lastKind, 1);
        out.write(last);
        out.flush();
        if (complete(last) || frameLength(last) > MAX_FRAME - Frames.LENGTH_FIELD) {
          if (!rd.awaitClosed(10_000)) {
            failure(t, lastKind + " did not close the connection: " + hex(last));
          }
        }
      }
    } catch (IOException e) {
      failure(t, "member connection (" + frames.size() + " frames): " + e);
    }
  }

  /** Many connections at once, half of them members, held open a moment; then the others' work goes on. */
  private void manyConnections(Target t, int n) {
    List<RawPeer> open = new ArrayList<>();
    try {
      for (int i = 0; i < n; i++) {
        open.add(i % 2 == 0 ? RawPeer.member(t.address, secret, 10_000) : RawPeer.connect(t.address, 10_000));
        count(t, "concurrent connections", 1);
      }
      Thread.sleep(200);
    } catch (IOException e) {
      failure(t, "opening " + n + " connections: " + e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      for (RawPeer p : open) {
        try {
          p.close();
        } catch (IOException e) {
          // closing
        }
      }
    }
  }

  /** Reads a connection's frames on its own thread: answers by id, and when the server closes it. */
  private static final class Reader {
    final Map<Long, Integer> got = new ConcurrentHashMap<>();
    final java.util.Set<Long> answered = ConcurrentHashMap.newKeySet();
    final java.util.Set<Long> errors = ConcurrentHashMap.newKeySet();
    final AtomicInteger responses = new AtomicInteger();
    final AtomicBoolean closed = new AtomicBoolean();
    final CountDownLatch eof = new CountDownLatch(1);
    volatile String problem;
    volatile java.util.function.BiConsumer<Long, Long> latency = (id, at) -> { };

    Reader(RawPeer p) throws IOException {
      DataInputStream in = new DataInputStream(p.socket().getInputStream());
      Thread th = new Thread(() -> {
        FrameDecoder dec = new FrameDecoder(MessageRegistry.DEFAULT, 64 << 20);
        try {
          for (;;) {
            int len = in.readInt();
            byte[] body = new byte[len];
            in.readFully(body);
            ByteBuf b = Unpooled.wrappedBuffer(body);
            try {
              Envelope e = dec.decodeFrame(b);
              e.release();
              if (e.kind() == Envelope.Kind.RESPONSE) {
                latency.accept(e.id(), System.nanoTime());
                got.merge(e.id(), 1, Integer::sum);
                answered.add(e.id());
                if (e.message() instanceof org.flowfs.common.wire.CommonOp.ErrorResp) {
                  errors.add(e.id());
                }
                responses.incrementAndGet();
              }
            } finally {
              b.release();
            }
          }
        } catch (IOException e) {
          closed.set(true);
        } catch (RuntimeException e) {
          problem = "undecodable frame from the server: " + e;
          closed.set(true);
        } finally {
          eof.countDown();
        }
      }, "fuzz-reader");
      th.setDaemon(true);
      th.start();
    }

    boolean await(Map<Long, Integer> expected, long ms) {
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
      while (System.nanoTime() < deadline) {
        boolean all = true;
        for (Map.Entry<Long, Integer> e : expected.entrySet()) {
          if (got.getOrDefault(e.getKey(), 0) < e.getValue()) {
            all = false;
            break;
          }
        }
        if (all) {
          return true;
        }
        if (closed.get()) {
          return false;
        }
        try {
          Thread.sleep(2);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      }
      return false;
    }

    boolean awaitClosed(long ms) {
      try {
        return eof.await(ms, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
  }

  // ---- the member who just wants to work ----------------------------------------------------------

  /** A member client doing ordinary work in a loop while the servers are under attack. */
  private static final class Bystander {
    final AtomicLong cycles = new AtomicLong();
    final ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean stop = new AtomicBoolean();
    private final Thread thread;

    Bystander() {
      thread = new Thread(this::run, "fuzz-bystander");
      thread.setDaemon(true);
      thread.start();
    }

    private void run() {
      Random r = new Random(7);
      long attempts = 0;
      while (!stop.get()) {
        long i = attempts++;
        try {
          byte[] data = new byte[r.nextInt(4) == 0 ? 200_000 + r.nextInt(100_000) : 1 + r.nextInt(40_000)];
          r.nextBytes(data);
          String path = "/live/f" + i;
          OpenFile f = member.create(path, 0644, 0, Caller.ROOT);
          member.write(f, 0, Unpooled.wrappedBuffer(data));
          member.release(f);
          OpenFile g = member.open(path, 0);
          ByteBuf dst = Unpooled.buffer(data.length);
          try {
            int n = member.read(g, 0, data.length, dst);
            byte[] back = new byte[n];
            dst.getBytes(0, back);
            if (n != data.length || !java.util.Arrays.equals(data, back)) {
              errors.add("cycle " + i + ": read back " + n + " bytes of " + data.length + ", or different ones");
            }
          } finally {
            member.release(g);
            dst.release();
          }
          long d = member.opendir("/live");
          member.readdir(d, 0);
          member.releasedir(d);
          member.unlink(path);
          cycles.incrementAndGet();
        } catch (RuntimeException e) {
          errors.add("cycle " + i + ": " + e);
          if (errors.size() > 5) {
            return;
          }
        }
      }
    }

    void stop() throws InterruptedException {
      stop.set(true);
      thread.join(30_000);
    }
  }

  /** Pings every server all along (answered on its event loop): a blocked event loop shows as a slow ping. */
  private static final class Pinger {
    final AtomicLong pings = new AtomicLong();
    final AtomicLong slowestMs = new AtomicLong();
    final ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean stop = new AtomicBoolean();
    private final Thread thread;

    Pinger(List<Target> targets) {
      thread = new Thread(() -> {
        List<RpcClient> clients = new ArrayList<>();
        for (Target t : targets) {
          clients.add(new RpcClient(t.name, net, t.address, cluster.config().rpc(), MessageRegistry.DEFAULT));
        }
        try {
          while (!stop.get()) {
            for (RpcClient c : clients) {
              long t0 = System.nanoTime();
              try {
                c.call(new PingReq(t0)).get(30, TimeUnit.SECONDS);
                slowestMs.accumulateAndGet(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0), Math::max);
                pings.incrementAndGet();
              } catch (Exception e) {
                if (errors.size() < 10) {
                  errors.add(c.peer() + ": " + e);
                }
              }
            }
            Thread.sleep(50);
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } finally {
          clients.forEach(RpcClient::close);
        }
      }, "fuzz-pinger");
      thread.setDaemon(true);
      thread.start();
    }

    void stop() throws InterruptedException {
      stop.set(true);
      thread.join(40_000);
    }
  }

  /** A fresh directory, files of every data path, read back and listed. */
  private static void workingFileSystem(String dirPath) {
    member.mkdir(dirPath, 0755, Caller.ROOT);
    Random r = new Random(11);
    List<String> names = new ArrayList<>();
    for (int size : new int[] {0, 100, 20_000, 70_000, 1_000_000}) {
      byte[] data = new byte[size];
      r.nextBytes(data);
      String name = "f" + size;
      names.add(name);
      OpenFile f = member.create(dirPath + "/" + name, 0644, 0, Caller.ROOT);
      member.write(f, 0, Unpooled.wrappedBuffer(data));
      member.release(f);
      OpenFile g = member.open(dirPath + "/" + name, 0);
      ByteBuf dst = Unpooled.buffer(Math.max(1, size));
      try {
        assertEquals(size, member.read(g, 0, size, dst));
        byte[] back = new byte[size];
        dst.getBytes(0, back);
        assertArrayEquals(data, back, name);
      } finally {
        member.release(g);
        dst.release();
      }
    }
    long d = member.opendir(dirPath);
    List<String> listed = new ArrayList<>();
    try {
      for (int i = 0; ; i++) {
        var e = member.readdir(d, i);
        if (e == null) {
          break;
        }
        listed.add(e.name());
      }
    } finally {
      member.releasedir(d);
    }
    Collections.sort(listed);
    Collections.sort(names);
    assertEquals(names, listed);
  }

  // ---- helpers ------------------------------------------------------------------------------------

  private static List<Target> targets() {
    FlowFsConfig c = cluster.config();
    List<Target> out = new ArrayList<>();
    List<Handle> meta = new ArrayList<>(metaHandles);
    out.add(new Target("metaserver", Role.META, resolved(c.meta().address()), meta, metaDirs));
    for (int i = 0; i < ioServers; i++) {
      out.add(new Target("ioserver " + i, Role.IO, resolved(c.ioServer(i).address()), ioHandles.get(i), List.of()));
    }
    return out;
  }

  private static InetSocketAddress resolved(InetSocketAddress a) {
    return new InetSocketAddress(a.getHostString(), a.getPort());
  }

  /** Waits until no I/O server has a flow in service (stalled ones fail after the stall timeout). */
  private static void awaitFlowsDrained() throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(STALL_MS * 5);
    for (;;) {
      long active = 0;
      for (int i = 0; i < ioServers; i++) {
        Counters c = cluster.io(i).counters();
        active += c.get("flow.posted") - c.get("flow.completed") - c.get("flow.errors");
      }
      if (active <= 0) {
        return;
      }
      if (System.nanoTime() > deadline) {
        fail(active + " flows still in service long after the stall timeout");
      }
      Thread.sleep(50);
    }
  }

  private static Counters snapshot(Counters c) {
    Counters s = new Counters();
    c.snapshot().forEach(s::add);
    return s;
  }

  private static Map<String, Long> connectionCounters(Counters c) {
    Map<String, Long> m = new TreeMap<>();
    c.snapshot().forEach((k, v) -> {
      if (k.startsWith("connections.") || k.startsWith("flow.") || k.startsWith("eager.")) {
        m.put(k, v);
      }
    });
    return m;
  }

  /** The length field of a frame (0 if it has none). */
  private static long frameLength(byte[] f) {
    if (f.length < Frames.LENGTH_FIELD) {
      return 0;
    }
    return ((f[0] & 0xFFL) << 24) | ((f[1] & 0xFF) << 16) | ((f[2] & 0xFF) << 8) | (f[3] & 0xFF);
  }

  /** Whether the input holds at least one whole frame. */
  private static boolean complete(byte[] f) {
    return f.length >= Frames.LENGTH_FIELD && frameLength(f) + Frames.LENGTH_FIELD <= f.length;
  }

  private static String typeOf(byte[] f) {
    int id = ((f[6] & 0xFF) << 8) | (f[7] & 0xFF);
    for (Class<?> c : MessageRegistry.DEFAULT.types()) {
      if (MessageRegistry.DEFAULT.idOf(c) == id) {
        return c.getSimpleName();
      }
    }
    return "?";
  }

  private static long idOf(byte[] f) {
    long id = 0;
    for (int i = 8; i < 16; i++) {
      id = (id << 8) | (f[i] & 0xFF);
    }
    return id;
  }

  /** The frame as the real decoder sees it. */
  private static String describe(byte[] f) {
    ByteBuf body = Unpooled.wrappedBuffer(f, Frames.LENGTH_FIELD, f.length - Frames.LENGTH_FIELD);
    try {
      Envelope e = new FrameDecoder(MessageRegistry.DEFAULT, MAX_FRAME).decodeFrame(body);
      e.release();
      String m = e.message().toString();
      return e.kind() + " " + (m.length() > 300 ? m.substring(0, 300) + "..." : m);
    } catch (RuntimeException x) {
      return "undecodable (" + x.getMessage() + ")";
    } finally {
      body.release();
    }
  }

  private static String hex(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < Math.min(b.length, 48); i++) {
      sb.append(String.format("%02x", b[i]));
    }
    return sb + (b.length > 48 ? "... (" + b.length + " bytes)" : "");
  }

  /** Memory of this JVM, which runs the servers: heap after a collection and Netty's direct memory. */
  private record Memory(long heapUsed, long pooledDirect, long nettyDirect) {
    static Memory now() {
      Runtime rt = Runtime.getRuntime();
      return new Memory(rt.totalMemory() - rt.freeMemory(), PooledByteBufAllocator.DEFAULT.metric().usedDirectMemory(),
          PlatformDependent.usedDirectMemory());
    }

    static Memory settled() throws InterruptedException {
      for (int i = 0; i < 3; i++) {
        System.gc();
        Thread.sleep(50);
      }
      return now();
    }

    @Override
    public String toString() {
      return String.format("heap %d MiB, pooled direct %d MiB, netty direct %d MiB", heapUsed >> 20, pooledDirect >> 20,
          nettyDirect >> 20);
    }

    /** The highest figures seen while it runs, sampled every 50 ms. */
    static final class Sampler {
      private final AtomicBoolean stop = new AtomicBoolean();
      private volatile long heap;
      private volatile long pooled;
      private volatile long direct;
      private final Thread thread;

      Sampler() {
        thread = new Thread(() -> {
          while (!stop.get()) {
            Memory m = now();
            heap = Math.max(heap, m.heapUsed);
            pooled = Math.max(pooled, m.pooledDirect);
            direct = Math.max(direct, m.nettyDirect);
            try {
              Thread.sleep(50);
            } catch (InterruptedException e) {
              return;
            }
          }
        }, "fuzz-memory");
        thread.setDaemon(true);
        thread.start();
      }

      Memory peak() {
        return new Memory(heap, pooled, direct);
      }

      void stop() throws InterruptedException {
        stop.set(true);
        thread.join(1000);
      }
    }
  }
}
