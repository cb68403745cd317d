package org.flowfs.it;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
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
import org.flowfs.client.Caller;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.common.Handle;
import org.flowfs.common.config.RpcConfig;
import org.flowfs.common.config.Secret;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.rpc.RawPeer;
import org.flowfs.common.rpc.RpcClient;
import org.flowfs.common.wire.CommonOp.ErrorResp;
import org.flowfs.common.wire.CommonOp.PingReq;
import org.flowfs.common.wire.CommonOp.StatsReq;
import org.flowfs.common.wire.Envelope;
import org.flowfs.common.wire.FrameDecoder;
import org.flowfs.common.wire.Frames;
import org.flowfs.common.wire.MessageRegistry;
import org.flowfs.it.HostileFrames.Expect;
import org.flowfs.it.HostileFrames.Role;

/**
 * The fuzz campaign against a running file system, whichever shape it runs in: every input sent
 * to every server port, each checked against what the server must do with it (answer it, drop it,
 * or close that connection: decided by decoding it with the real decoder), with failures,
 * counts and timings collected for the test to report and assert. Also the two witnesses that run
 * alongside: a member doing ordinary work ({@link Bystander}) and pings to every server
 * ({@link Pinger}). Thread safe.
 */
final class FuzzCampaign {
  /** The largest frame a server of the fuzzed file system accepts (its rpc.max-frame). */
  static final int MAX_FRAME = 2 << 20;
  /**
   * How long a connection that never proves membership may stay open: the fuzzed servers' {@code
   * rpc.auth-timeout} of 3 s, counted from their accept, which lags under the campaign's load.
   */
  static final int AUTH_CLOSE_WAIT_MS = 15_000;
  /** RpcServer.PRE_AUTH_FRAME. */
  static final int PRE_AUTH_LIMIT = 1024;

  /** One server port under attack, and what its inputs may damage. */
  record Target(String name, Role role, InetSocketAddress address, List<Handle> handles, List<Handle> dirs) {}

  private final List<Target> targets;
  private final Secret secret;
  private final int ioServers;
  private final Map<String, LongAdder> sent = new ConcurrentHashMap<>();
  private final Map<String, LongAdder> busy = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();

  FuzzCampaign(List<Target> targets, Secret secret, int ioServers) {
    this.targets = targets;
    this.secret = secret;
    this.ioServers = ioServers;
  }

  /**
   * Runs the whole campaign on {@code threads} threads: per server type, {@code scale} x (4,000
   * connections with one input before the handshake, 1,500 members' connections of ten good
   * inputs and a closing one, 120 members' connections of 700 pipelined inputs), spread over the
   * servers of the type, plus 300 concurrent connections per server. Every server is under attack
   * at once.
   */
  void run(double scale, long seed, int threads) throws Exception {
    List<Runnable> tasks = new ArrayList<>();
    for (Target t : targets) {
      int share = t.role() == Role.IO ? ioServers : 1;
      // a connection closed by an input carries one hostile input after a few good ones; most
      // inputs travel pipelined on connections the server keeps (ten times cheaper per input)
      int preAuth = (int) (4000 * scale / share);
      int shortConns = (int) (1500 * scale / share);
      int longConns = (int) Math.max(1, 120 * scale / share);
      for (int i = 0; i < preAuth; i += 50) {
        long s = seed ^ (t.name().hashCode() * 31L + i);
        tasks.add(timed(t, "pre-auth", () -> preAuthBatch(t, new Random(s), 50)));
      }
      for (int i = 0; i < shortConns; i += 10) {
        long s = seed ^ (t.name().hashCode() * 131L + i);
        tasks.add(timed(t, "short", () -> {
          Random r = new Random(s);
          for (int k = 0; k < 10; k++) {
            memberConnection(t, r, 10, true);
          }
        }));
      }
      for (int i = 0; i < longConns; i++) {
        long s = seed ^ (t.name().hashCode() * 1031L + i);
        tasks.add(timed(t, "long", () -> memberConnection(t, new Random(s), 700, false)));
      }
      tasks.add(timed(t, "many", () -> manyConnections(t, 300)));
    }
    Collections.shuffle(tasks, new Random(seed));
    ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
      Thread th = new Thread(r, "fuzz");
      th.setDaemon(true);
      return th;
    });
    try {
      List<Future<?>> work = new ArrayList<>();
      for (Runnable task : tasks) {
        work.add(pool.submit(task));
      }
      for (Future<?> f : work) {
        f.get(300, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /** Inputs sent, by server type and kind, and "ROLE total". */
  Map<String, Long> counts() {
    Map<String, Long> m = new TreeMap<>();
    sent.forEach((k, v) -> m.put(k, v.sum()));
    return m;
  }

  long total(Role role) {
    LongAdder a = sent.get(role + " total");
    return a == null ? 0 : a.sum();
  }

  /** Thread time spent per campaign, in ms. */
  Map<String, Long> busyMs() {
    Map<String, Long> m = new TreeMap<>();
    busy.forEach((k, v) -> m.put(k, TimeUnit.NANOSECONDS.toMillis(v.sum())));
    return m;
  }

  List<String> failures() {
    return List.copyOf(failures);
  }

  private void count(Target t, String kind, long n) {
    sent.computeIfAbsent(t.role() + " " + kind, k -> new LongAdder()).add(n);
    sent.computeIfAbsent(t.role() + " total", k -> new LongAdder()).add(n);
  }

  private Runnable timed(Target t, String what, Runnable r) {
    return () -> {
      long t0 = System.nanoTime();
      try {
        r.run();
      } finally {
        busy.computeIfAbsent(t.role() + " " + what, k -> new LongAdder()).add(System.nanoTime() - t0);
      }
    };
  }

  private void failure(Target t, String what) {
    if (failures.size() < 50) {
      failures.add(t.name() + ": " + what);
    }
  }

  // ---- one connection's worth of inputs ----------------------------------------------------------

  /** {@code n} connections that each send one input without proving membership; each must be closed. */
  private void preAuthBatch(Target t, Random r, int n) {
    HostileFrames g = new HostileFrames(r, t.role(), MAX_FRAME, t.handles(), t.dirs(), ioServers);
    for (int i = 0; i < n; i++) {
      byte[] input;
      String kind;
      switch (r.nextInt(7)) {
        case 0 -> {
          input = g.randomBytes();
          kind = "pre-auth random bytes";
        }
        case 1 -> {
          input = g.oversizedLength();
          kind = "pre-auth oversized length";
        }
        case 2 -> {
          input = g.badHeader();
          kind = "pre-auth bad header";
        }
        case 3 -> {
          input = g.truncated(r.nextBoolean());
          kind = "pre-auth truncated";
        }
        case 4 -> {
          input = g.mutated(1);
          kind = "pre-auth mutated";
        }
        default -> {
          input = g.request(10, r.nextInt(1000));
          kind = "pre-auth request";
        }
      }
      count(t, kind, 1);
      try (RawPeer p = RawPeer.connect(t.address(), 5000)) {
        p.send(input);
        if (input.length < Frames.LENGTH_FIELD
            || frameLength(input) <= PRE_AUTH_LIMIT - Frames.LENGTH_FIELD && !complete(input)) {
          // it waits for the rest of its frame, and the auth timeout (3 s here) closes it:
          // checked now and then, with room for a server that accepts late under the campaign's load
          if (r.nextInt(100) == 0 && !p.closedByPeer(AUTH_CLOSE_WAIT_MS)) {
            failure(t, kind + ": a connection that never proved membership stayed open");
          }
          continue;
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
    HostileFrames g = new HostileFrames(r, t.role(), MAX_FRAME, t.handles(), t.dirs(), ioServers);
    byte[] last = null;
    String lastKind = null;
    List<byte[]> frames = new ArrayList<>();
    Map<Long, Integer> answers = new HashMap<>();
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
    int port = -1;
    try (RawPeer p = member(t, 30_000)) {
      port = p.socket().getLocalPort();
      Reader rd = new Reader(p);
      OutputStream out = p.socket().getOutputStream();
      for (byte[] f : frames) {
        out.write(f);
      }
      out.flush();
      long expected = answers.values().stream().mapToLong(Integer::intValue).sum();
      if (!rd.await(answers, 60_000)) {
        StringBuilder missing = new StringBuilder();
        for (byte[] f : frames) {
          Integer want = answers.get(idOf(f));
          if (want != null && rd.got.getOrDefault(idOf(f), 0) < want && missing.length() < 4000) {
            missing.append("\n  unanswered ").append(describe(f)).append(": ").append(hex(f));
          }
        }
        failure(t, "answered " + rd.responses.get() + " of " + expected + " requests, closed " + rd.closed.get()
            + (rd.problem != null ? ", " + rd.problem : "") + missing);
        return;
      }
      if (last != null) {
        count(t, lastKind, 1);
        try {
          out.write(last);
          out.flush();
        } catch (SocketException e) {
          // the server closed the connection on the frame's first bytes, before the rest of it
          // was written (a length past the limit is known from the header): as it must
          if (!rd.awaitClosed(10_000)) {
            failure(t, lastKind + ": writing it failed (" + e + ") but the connection did not close");
          }
          return;
        }
        if ((complete(last) || frameLength(last) > MAX_FRAME - Frames.LENGTH_FIELD) && !rd.awaitClosed(10_000)) {
          failure(t, lastKind + " did not close the connection: " + hex(last));
        }
      }
    } catch (IOException e) {
      StringBuilder sent = new StringBuilder();
      for (byte[] f : frames) {
        sent.append("\n  ").append(describe(f)).append(f.length <= 256 ? ": " + hex(f) : "");
      }
      failure(t, "member connection from port " + port + " (" + frames.size() + " frames): " + e + sent);
    }
  }

  /**
   * A member connection, with one more try when the handshake fails with an I/O error: under the
   * campaign's load a server can get to a member's proof only after the tests' short
   * rpc.auth-timeout (3 s from its accept), and then closes the connection as it should (its
   * connections.auth-timeout counter shows it); a client connects again, as RpcClient does.
   */
  private RawPeer member(Target t, int soTimeoutMs) throws IOException {
    try {
      return RawPeer.member(t.address(), secret, soTimeoutMs);
    } catch (IOException e) {
      System.out.println("fuzz: " + t.name() + ": a member handshake failed (" + e + "), connecting again");
      return RawPeer.member(t.address(), secret, soTimeoutMs);
    }
  }

  /** Many connections at once, half of them members, held open a moment. */
  private void manyConnections(Target t, int n) {
    List<RawPeer> open = new ArrayList<>();
    try {
      for (int i = 0; i < n; i++) {
        open.add(i % 2 == 0 ? member(t, 10_000) : RawPeer.connect(t.address(), 10_000));
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
          // closing anyway
        }
      }
    }
  }

  // ---- reading what a server sends --------------------------------------------------------------

  /** Reads a connection's frames on its own thread: answers by id, and when the server closes it. */
  static final class Reader {
    final Map<Long, Integer> got = new ConcurrentHashMap<>();
    final Set<Long> answered = ConcurrentHashMap.newKeySet();
    final Set<Long> errors = ConcurrentHashMap.newKeySet();
    final AtomicInteger responses = new AtomicInteger();
    final AtomicBoolean closed = new AtomicBoolean();
    final CountDownLatch eof = new CountDownLatch(1);
    volatile String problem;

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
                if (e.message() instanceof ErrorResp) {
                  errors.add(e.id());
                }
                got.merge(e.id(), 1, Integer::sum);
                answered.add(e.id());
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

    /** Waits until every id in {@code expected} was answered as often as it says. */
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

    /** Waits until {@code n} answers came. */
    boolean awaitAnswers(int n, long ms) throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
      while (answered.size() < n && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      return answered.size() >= n;
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

  // ---- the witnesses ----------------------------------------------------------------------------

  /** A member client doing ordinary work in a loop while the servers are under attack. */
  static final class Bystander {
    final AtomicLong cycles = new AtomicLong();
    final ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean stop = new AtomicBoolean();
    private final FileSystemClient fs;
    private final String dir;
    private final Thread thread;

    Bystander(FileSystemClient fs, String dir) {
      this.fs = fs;
      this.dir = dir;
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
          // every data path: short, eager and flow writes
          byte[] data = new byte[r.nextInt(4) == 0 ? 200_000 + r.nextInt(100_000) : 1 + r.nextInt(40_000)];
          r.nextBytes(data);
          String path = dir + "/f" + i;
          OpenFile f = fs.create(path, 0644, 0, Caller.ROOT);
          fs.write(f, 0, Unpooled.wrappedBuffer(data));
          fs.release(f);
          OpenFile g = fs.open(path, 0);
          ByteBuf dst = Unpooled.buffer(data.length);
          try {
            int n = fs.read(g, 0, data.length, dst);
            byte[] back = new byte[n];
            dst.getBytes(0, back);
            if (n != data.length || !Arrays.equals(data, back)) {
              errors.add("cycle " + i + ": read back " + n + " bytes of " + data.length + ", or different ones");
            }
          } finally {
            fs.release(g);
            dst.release();
          }
          long d = fs.opendir(dir);
          fs.readdir(d, 0);
          fs.releasedir(d);
          fs.unlink(path);
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
  static final class Pinger {
    final AtomicLong pings = new AtomicLong();
    final AtomicLong slowestMs = new AtomicLong();
    final ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean stop = new AtomicBoolean();
    private final Thread thread;

    Pinger(List<Target> targets, NetRuntime net, RpcConfig rpc) {
      thread = new Thread(() -> {
        List<RpcClient> clients = new ArrayList<>();
        for (Target t : targets) {
          clients.add(new RpcClient(t.name(), net, t.address(), rpc, MessageRegistry.DEFAULT));
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

  // ---- asking the servers -------------------------------------------------------------------------

  /** A server's counters, as {@code flowfs stats} reads them. */
  static Map<String, Long> stats(Target t, NetRuntime net, RpcConfig rpc) throws Exception {
    try (RpcClient c = new RpcClient(t.name(), net, t.address(), rpc, MessageRegistry.DEFAULT)) {
      return c.call(new StatsReq()).get(10, TimeUnit.SECONDS).counters();
    }
  }

  /** The counters that tell how connections ended and how flows went. */
  static Map<String, Long> connectionCounters(Map<String, Long> all) {
    Map<String, Long> m = new TreeMap<>();
    all.forEach((k, v) -> {
      if (k.startsWith("connections.") || k.startsWith("flow.") || k.startsWith("errors.")) {
        m.put(k, v);
      }
    });
    return m;
  }

  /** Waits until no I/O server has a flow in service (stalled ones fail after the stall timeout). */
  static void awaitFlowsDrained(List<Target> targets, NetRuntime net, RpcConfig rpc, long ms) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
    for (;;) {
      long active = 0;
      for (Target t : targets) {
        if (t.role() == Role.IO) {
          Map<String, Long> c = stats(t, net, rpc);
          active += c.getOrDefault("flow.posted", 0L) - c.getOrDefault("flow.completed", 0L) - c.getOrDefault("flow.errors", 0L);
        }
      }
      if (active <= 0) {
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError(active + " flows still in service long after the stall timeout");
      }
      Thread.sleep(50);
    }
  }

  // ---- frames -------------------------------------------------------------------------------------

  /** The length field of a frame (0 if it has none). */
  static long frameLength(byte[] f) {
    if (f.length < Frames.LENGTH_FIELD) {
      return 0;
    }
    return ((f[0] & 0xFFL) << 24) | ((f[1] & 0xFF) << 16) | ((f[2] & 0xFF) << 8) | (f[3] & 0xFF);
  }

  /** Whether the input holds at least one whole frame. */
  static boolean complete(byte[] f) {
    return f.length >= Frames.LENGTH_FIELD && frameLength(f) + Frames.LENGTH_FIELD <= f.length;
  }

  static long idOf(byte[] f) {
    long id = 0;
    for (int i = 8; i < 16; i++) {
      id = (id << 8) | (f[i] & 0xFF);
    }
    return id;
  }

  /** The frame as the real decoder sees it. */
  static String describe(byte[] f) {
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

  static String hex(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < Math.min(b.length, 1024); i++) {
      sb.append(String.format("%02x", b[i]));
    }
    return sb + (b.length > 1024 ? "... (" + b.length + " bytes)" : "");
  }
}
