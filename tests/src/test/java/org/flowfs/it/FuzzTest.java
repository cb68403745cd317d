package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.internal.PlatformDependent;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.LongStream;
import org.flowfs.cli.EmbeddedCluster;
import org.flowfs.client.Caller;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.common.Attr;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Handle;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.config.Secret;
import org.flowfs.common.request.Request;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.rpc.RawPeer;
import org.flowfs.common.rpc.RpcClient;
import org.flowfs.common.wire.CommonOp.PingReq;
import org.flowfs.common.wire.Envelope;
import org.flowfs.common.wire.IoOp.EagerData;
import org.flowfs.common.wire.IoOp.EagerWriteReq;
import org.flowfs.common.wire.IoOp.FlowData;
import org.flowfs.common.wire.IoOp.FlowDone;
import org.flowfs.common.wire.IoOp.FlowReq;
import org.flowfs.common.wire.LeakCheck;
import org.flowfs.common.wire.MessageRegistry;
import org.flowfs.common.wire.RequestSpec;
import org.flowfs.it.FuzzCampaign.Bystander;
import org.flowfs.it.FuzzCampaign.Pinger;
import org.flowfs.it.FuzzCampaign.Reader;
import org.flowfs.it.FuzzCampaign.Target;
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
 * Hostile input to every server port of a real file system (its servers in this JVM, as {@code
 * flowfs up} runs them): random bytes, truncated frames, oversized length fields, unknown types,
 * wrong versions and kinds, frames of every request type with out-of-range fields, absurd flows,
 * eager writes and flows whose data never comes, many connections; before the membership
 * handshake and after it (a member may be broken too). See {@link FuzzCampaign} for how each input
 * is checked. Meanwhile a member keeps working on the same servers and every server is pinged;
 * afterwards every server still answers, a client can create, write, read and list, memory is
 * back where it was and no buffer leaked (paranoid leak detection).
 *
 * <p>{@code -Dflowfs.fuzz.scale=N} multiplies the number of inputs (default 0.5: over 50,000 per
 * server type, about a minute on 2 cores; 1 and above for a deeper run); {@code -Dflowfs.fuzz.seed=S}
 * repeats a run.
 */
@ExtendWith(LeakCheck.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(value = 600, unit = TimeUnit.SECONDS)
class FuzzTest {
  private static final double SCALE = Double.parseDouble(System.getProperty("flowfs.fuzz.scale", "0.5"));
  /**
   * The servers' rpc.timeout: also the stall timeout of flows and the wait for eager data. Long
   * enough that the member's flows survive the fuzzer's load on the I/O servers' disks (a flow
   * waiting for its server's storage queue counts as stalled).
   */
  private static final long STALL_MS = 10_000;
  /** Fuzzing threads: enough to keep every server busy, few enough to leave its event loops CPU. */
  private static final int THREADS = 8;
  /** IoServer.MAX_FLOWS_PER_CONNECTION. */
  private static final int MAX_FLOWS_PER_CONNECTION = 128;

  @TempDir static Path dir;
  static EmbeddedCluster cluster;
  static NetRuntime net;
  static FileSystemClient member;
  static FlowFsConfig config;
  static List<Target> targets;

  @BeforeAll
  static void up() throws Exception {
    Path data = dir.resolve("data");
    Files.createDirectories(data);
    Files.writeString(data.resolve("flowfs.conf"), EmbeddedCluster.configText(data, 2, 0)
        + "rpc.timeout = " + STALL_MS + "ms\n"
        + "rpc.auth-timeout = 3s\n"
        + "rpc.max-frame = " + FuzzCampaign.MAX_FRAME + "\n");
    cluster = EmbeddedCluster.start(FlowFsConfig.load(data.resolve("flowfs.conf")));
    config = cluster.config();
    net = NetRuntime.create("fuzz-member", 2);
    member = new FileSystemClient(config, net);
    targets = sacrificialTargets(member, config);
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

  /**
   * Every server of {@code config} as a target, with what the fuzzer may damage: a tree of its own
   * ({@code /fuzz}) on the metadata server, the datafiles of its own files on the I/O servers.
   */
  static List<Target> sacrificialTargets(FileSystemClient fs, FlowFsConfig config) {
    fs.mkdir("/fuzz", 0777, Caller.ROOT);
    List<Handle> dirs = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      dirs.add(fs.mkdir("/fuzz/d" + i, 0777, Caller.ROOT).handle());
    }
    List<Handle> files = new ArrayList<>();
    List<List<Handle>> datafiles = new ArrayList<>();
    for (int i = 0; i < config.ioServers().size(); i++) {
      datafiles.add(new ArrayList<>());
    }
    for (int i = 0; i < 8; i++) {
      String path = "/fuzz/d" + (i % 4) + "/f" + i;
      OpenFile f = fs.create(path, 0666, 0, Caller.ROOT);
      fs.write(f, 0, Unpooled.wrappedBuffer(new byte[300_000 + i]));
      fs.release(f);
      Attr a = fs.getattr(path);
      files.add(a.handle());
      for (Handle h : a.layout().datafiles()) {
        datafiles.get(h.ioServer()).add(h);
      }
    }
    fs.mkdir("/live", 0777, Caller.ROOT);
    List<Target> out = new ArrayList<>();
    out.add(new Target("metaserver", Role.META, resolved(config.meta().address()), files, dirs));
    for (int i = 0; i < config.ioServers().size(); i++) {
      out.add(new Target("ioserver " + i, Role.IO, resolved(config.ioServer(i).address()), datafiles.get(i), List.of()));
    }
    return out;
  }

  @Test
  @Order(1)
  void hostileInputs_toEveryServerPort_closeOnlyTheirConnections_andTheFileSystemStillWorks() throws Exception {
    Memory before = Memory.settled();
    Bystander bystander = new Bystander(member, "/live");
    Pinger pinger = new Pinger(targets, net, config.rpc());
    Memory.Sampler sampler = new Memory.Sampler();
    long seed = Long.getLong("flowfs.fuzz.seed", System.nanoTime());
    System.out.println("fuzz: seed " + seed + " (-Dflowfs.fuzz.seed=" + seed + " repeats it)");
    FuzzCampaign campaign = new FuzzCampaign(targets, config.rpc().secret(), config.ioServers().size());
    long t0 = System.nanoTime();
    try {
      campaign.run(SCALE, seed, THREADS);
    } finally {
      bystander.stop();
      pinger.stop();
      sampler.stop();
    }
    long fuzzMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);

    // the servers still serve: a ping to each, then a client's whole cycle
    for (Target t : targets) {
      try (RpcClient c = new RpcClient(t.name(), net, t.address(), config.rpc(), MessageRegistry.DEFAULT)) {
        assertEquals(42, c.call(new PingReq(42)).get(10, TimeUnit.SECONDS).sentNanos(), t.name());
      }
    }
    workingFileSystem(member, "/after-fuzz");
    FuzzCampaign.awaitFlowsDrained(targets, net, config.rpc(), STALL_MS * 5);
    Memory after = Memory.settled();

    Map<String, Long> totals = campaign.counts();
    System.out.printf("fuzz: %d ms; inputs %s%n", fuzzMs, totals);
    System.out.printf("fuzz: thread-milliseconds by campaign %s%n", campaign.busyMs());
    System.out.printf("fuzz: bystander %d cycles, %d failures%n", bystander.cycles.get(), bystander.errors.size());
    System.out.printf("fuzz: pings %d, slowest %d ms, failed %s%n", pinger.pings.get(), pinger.slowestMs.get(), pinger.errors);
    System.out.printf("fuzz: memory before %s%nfuzz: memory peak   %s%nfuzz: memory after  %s%n", before, sampler.peak(), after);
    long unexpected = 0;
    for (Target t : targets) {
      Map<String, Long> c = FuzzCampaign.stats(t, net, config.rpc());
      System.out.printf("fuzz: %s %s%n", t.name(), FuzzCampaign.connectionCounters(c));
      unexpected += c.getOrDefault("connections.failed", 0L);
    }
    assertTrue(campaign.failures().isEmpty(),
        campaign.failures().size() + " failures, first:\n" + String.join("\n", campaign.failures()));
    assertEquals(0, unexpected, "connections closed by an unexpected exception (connections.failed)");
    assertTrue(bystander.errors.isEmpty(), "the member's work failed during the fuzz: " + bystander.errors);
    assertTrue(bystander.cycles.get() > 0, "the member made progress during the fuzz");
    assertTrue(pinger.errors.isEmpty(), "pings failed during the fuzz: " + pinger.errors);
    assertTrue(pinger.slowestMs.get() < 5000, "a server took " + pinger.slowestMs + " ms to answer a ping");
    assertTrue(campaign.total(Role.META) >= 100_000L * SCALE, "inputs to the metadata server: " + totals);
    assertTrue(campaign.total(Role.IO) >= 100_000L * SCALE, "inputs to the I/O servers: " + totals);
    assertTrue(FuzzCampaign.stats(targets.get(0), net, config.rpc()).getOrDefault("connections.malformed", 0L) > 0,
        "the metadata server counted the connections it closed");
    // memory: back near where it started, and never far above it
    assertTrue(after.heapUsed - before.heapUsed < (256L << 20), "heap grew from " + before + " to " + after);
    assertTrue(after.pooledDirect - before.pooledDirect < (64L << 20), "pooled direct memory grew from " + before + " to " + after);
    assertTrue(sampler.peak().pooledDirect < (768L << 20), "pooled direct memory peaked at " + sampler.peak());
  }

  @Test
  @Order(2)
  void flowsAndEagerWritesWhoseDataNeverComes_areFreed() throws Exception {
    Target t = targets.get(1);
    Handle h = t.handles().get(0);
    Secret secret = config.rpc().secret();
    long erroredBefore = FuzzCampaign.stats(t, net, config.rpc()).getOrDefault("flow.errors", 0L);
    Memory before = Memory.settled();
    int flows = 400;
    try (RawPeer p = RawPeer.member(t.address(), secret, 20_000)) {
      Reader rd = new Reader(p);
      for (int i = 0; i < flows; i++) {
        p.send(Envelope.request(1000 + i, new FlowReq(5000 + i, h, true, RequestSpec.of(Request.BYTE), 0, 256 * 1024,
            DistSpec.of("simple_stripe", 65536), 0, config.ioServers().size(), 0, null)));
      }
      for (int i = 0; i < 200; i++) {
        p.send(Envelope.request(3000 + i, new EagerWriteReq(9000 + i, h, 0, 32 * 1024)));
      }
      // flows are acknowledged at once (up to the per-connection limit); then neither their data
      // nor the eager writes' ever comes
      assertTrue(rd.awaitAnswers(flows + 200, STALL_MS * 4), "every flow answered and every eager write failed in time");
      for (int i = 0; i < 200; i++) {
        assertTrue(rd.errors.contains(3000L + i), "eager write " + i + " without data failed");
      }
      long refused = LongStream.range(1000, 1000 + flows).filter(rd.errors::contains).count();
      assertEquals(flows - MAX_FLOWS_PER_CONNECTION, refused, "flows past the per-connection limit are refused");
      FuzzCampaign.awaitFlowsDrained(targets, net, config.rpc(), STALL_MS * 5);
      long errored = FuzzCampaign.stats(t, net, config.rpc()).getOrDefault("flow.errors", 0L) - erroredBefore;
      assertTrue(errored >= MAX_FLOWS_PER_CONNECTION, "the stalled flows failed: " + errored);
      // the connection is still good for the member
      p.send(Envelope.request(7, new PingReq(7)));
      assertTrue(awaitAnswer(rd, 7), "a ping after the stalls");
      // frames of flows nobody waits for are dropped; eager data nobody waits for closes
      p.send(Envelope.oneway(5000, new FlowData(Unpooled.wrappedBuffer(new byte[100]))));
      p.send(Envelope.oneway(5001, new FlowDone(0, 0, 0)));
      p.send(Envelope.request(8, new PingReq(8)));
      assertTrue(awaitAnswer(rd, 8), "flow frames of finished flows are dropped, the connection kept");
      p.send(Envelope.oneway(9000, new EagerData(Unpooled.wrappedBuffer(new byte[10]))));
      assertTrue(rd.awaitClosed(5000), "eager data nobody waits for closes the connection");
    }
    // a connection that closes with flows and eager writes pending frees them at once
    try (RawPeer p = RawPeer.member(t.address(), secret, 20_000)) {
      Reader rd = new Reader(p);
      for (int i = 0; i < 100; i++) {
        p.send(Envelope.request(100 + i, new FlowReq(100 + i, h, true, RequestSpec.of(Request.BYTE), 0, 65536,
            DistSpec.of("simple_stripe", 65536), 0, config.ioServers().size(), 0, null)));
        p.send(Envelope.request(300 + i, new EagerWriteReq(300 + i, h, 0, 1000)));
      }
      assertTrue(rd.awaitAnswers(100, 5000), "the flows were acknowledged");
    }
    long t0 = System.nanoTime();
    FuzzCampaign.awaitFlowsDrained(targets, net, config.rpc(), STALL_MS / 2);
    System.out.printf("fuzz: flows of a closed connection freed within %d ms%n",
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
    Memory after = Memory.settled();
    System.out.printf("fuzz: stalled flows: memory before %s, after %s%n", before, after);
    assertTrue(after.pooledDirect - before.pooledDirect < (16L << 20), before + " -> " + after);
    workingFileSystem(member, "/after-stalls");
  }

  private static boolean awaitAnswer(Reader rd, long id) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!rd.answered.contains(id) && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    return rd.answered.contains(id);
  }

  /** A fresh directory, files of every data path, read back and listed. */
  static void workingFileSystem(FileSystemClient fs, String dirPath) {
    fs.mkdir(dirPath, 0755, Caller.ROOT);
    Random r = new Random(11);
    List<String> names = new ArrayList<>();
    for (int size : new int[] {0, 100, 20_000, 70_000, 1_000_000}) {
      byte[] data = new byte[size];
      r.nextBytes(data);
      String name = "f" + size;
      names.add(name);
      OpenFile f = fs.create(dirPath + "/" + name, 0644, 0, Caller.ROOT);
      fs.write(f, 0, Unpooled.wrappedBuffer(data));
      fs.release(f);
      OpenFile g = fs.open(dirPath + "/" + name, 0);
      ByteBuf dst = Unpooled.buffer(Math.max(1, size));
      try {
        assertEquals(size, fs.read(g, 0, size, dst));
        byte[] back = new byte[size];
        dst.getBytes(0, back);
        assertArrayEquals(data, back, name);
      } finally {
        fs.release(g);
        dst.release();
      }
    }
    long d = fs.opendir(dirPath);
    List<String> listed = new ArrayList<>();
    try {
      for (int i = 0; ; i++) {
        var e = fs.readdir(d, i);
        if (e == null) {
          break;
        }
        listed.add(e.name());
      }
    } finally {
      fs.releasedir(d);
    }
    Collections.sort(listed);
    Collections.sort(names);
    assertEquals(names, listed);
  }

  static InetSocketAddress resolved(InetSocketAddress a) {
    return new InetSocketAddress(a.getHostString(), a.getPort());
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

    /** The highest figures seen while it runs, sampled every 50 ms (heap: not after a collection). */
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
