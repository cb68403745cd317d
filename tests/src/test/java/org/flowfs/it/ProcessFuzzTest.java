package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.flowfs.cli.EmbeddedCluster;
import org.flowfs.cli.LoopbackPorts;
import org.flowfs.cli.RoleProcess;
import org.flowfs.client.FileSystemClient;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.rpc.RpcClient;
import org.flowfs.common.wire.CommonOp.PingReq;
import org.flowfs.common.wire.MessageRegistry;
import org.flowfs.it.FuzzCampaign.Bystander;
import org.flowfs.it.FuzzCampaign.Target;
import org.flowfs.it.HostileFrames.Role;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fuzz campaign against servers that run as their own processes, as systemd runs them, each
 * with a 256 MiB heap and 256 MiB of direct memory and paranoid leak detection: each survives,
 * its resident memory stays bounded, it logs no leak and no OutOfMemoryError, and the file system
 * still works. Fewer inputs than {@link FuzzTest} by default ({@code -Dflowfs.fuzz.process-scale},
 * default 0.25: 25,000 per server type).
 */
@Timeout(value = 600, unit = TimeUnit.SECONDS)
class ProcessFuzzTest {
  private static final double SCALE = Double.parseDouble(System.getProperty("flowfs.fuzz.process-scale", "0.25"));
  private static final long STALL_MS = 10_000;

  @TempDir static Path dir;
  static final List<Process> servers = new ArrayList<>();
  static final List<Path> logs = new ArrayList<>();
  static FlowFsConfig config;
  static NetRuntime net;
  static FileSystemClient member;

  @BeforeAll
  static void up() throws Exception {
    Path data = dir.resolve("data");
    Files.createDirectories(data);
    StringBuilder text = new StringBuilder(EmbeddedCluster.configText(data, 2, LoopbackPorts.block(3)));
    text.append("rpc.timeout = ").append(STALL_MS).append("ms\n")
        .append("rpc.auth-timeout = 3s\n")
        .append("rpc.max-frame = ").append(FuzzCampaign.MAX_FRAME).append('\n');
    Path conf = data.resolve("flowfs.conf");
    Files.writeString(conf, text);
    config = FlowFsConfig.load(conf);
    for (int i = 0; i < config.ioServers().size(); i++) {
      start("ioserver-" + i, List.of("ioserver", "--config", conf.toString(), "--id", String.valueOf(i)),
          config.ioServer(i).address());
    }
    start("metaserver", List.of("metaserver", "--config", conf.toString()), config.meta().address());
    net = NetRuntime.create("process-fuzz", 2);
    member = new FileSystemClient(config, net);
  }

  private static void start(String name, List<String> args, InetSocketAddress a) throws IOException {
    List<String> cmd = new ArrayList<>(RoleProcess.command("256m", args));
    cmd.add(1, "-Dio.netty.leakDetection.level=paranoid");
    Path log = dir.resolve(name + ".log");
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    servers.add(p);
    logs.add(log);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!ServerProcess.listening(a)) {
      if (!p.isAlive() || System.nanoTime() > deadline) {
        throw new IOException(name + " did not start:\n" + Files.readString(log));
      }
      ServerProcess.sleep(50);
    }
  }

  @AfterAll
  static void down() {
    if (member != null) {
      member.close();
    }
    if (net != null) {
      net.close();
    }
    for (Process p : servers) {
      p.destroy();
    }
    for (Process p : servers) {
      try {
        if (!p.waitFor(20, TimeUnit.SECONDS)) {
          p.destroyForcibly();
        }
      } catch (InterruptedException e) {
        p.destroyForcibly();
      }
    }
  }

  @Test
  void hostileInputs_toServerProcesses_leaveThemServingWithBoundedMemory() throws Exception {
    List<Target> targets = FuzzTest.sacrificialTargets(member, config);
    FuzzTest.workingFileSystem(member, "/warm-up"); // the servers' pools and caches, before the first figure
    List<Long> before = rss();
    Bystander bystander = new Bystander(member, "/live");
    long seed = Long.getLong("flowfs.fuzz.seed", System.nanoTime());
    System.out.println("process fuzz: seed " + seed);
    FuzzCampaign campaign = new FuzzCampaign(targets, config.rpc().secret(), config.ioServers().size());
    long[] peaks = new long[servers.size()];
    Thread sampler = new Thread(() -> {
      try {
        while (!Thread.currentThread().isInterrupted()) {
          List<Long> now = rss();
          for (int i = 0; i < now.size(); i++) {
            peaks[i] = Math.max(peaks[i], now.get(i));
          }
          Thread.sleep(100);
        }
      } catch (IOException | InterruptedException e) {
        // done
      }
    }, "rss-sampler");
    sampler.setDaemon(true);
    sampler.start();
    long t0 = System.nanoTime();
    try {
      campaign.run(SCALE, seed, 8);
    } finally {
      sampler.interrupt();
      sampler.join(1000);
      bystander.stop();
    }
    long peak = java.util.Arrays.stream(peaks).max().orElse(0);
    System.out.printf("process fuzz: peak resident memory per server (KiB) %s%n", java.util.Arrays.toString(peaks));
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    for (Process p : servers) {
      assertTrue(p.isAlive(), "a server process died");
    }
    for (Target t : targets) {
      try (RpcClient c = new RpcClient(t.name(), net, t.address(), config.rpc(), MessageRegistry.DEFAULT)) {
        assertEquals(7, c.call(new PingReq(7)).get(10, TimeUnit.SECONDS).sentNanos(), t.name());
      }
    }
    FuzzTest.workingFileSystem(member, "/after-fuzz");
    FuzzCampaign.awaitFlowsDrained(targets, net, config.rpc(), STALL_MS * 5);
    List<Long> after = rss();
    System.out.printf("process fuzz: %d ms; inputs %s%n", ms, campaign.counts());
    System.out.printf("process fuzz: resident memory per server (KiB) before %s, after %s%n", before, after);
    System.out.printf("process fuzz: bystander %d cycles, %d failures%n", bystander.cycles.get(), bystander.errors.size());
    for (Target t : targets) {
      Map<String, Long> c = FuzzCampaign.stats(t, net, config.rpc());
      System.out.printf("process fuzz: %s %s%n", t.name(), FuzzCampaign.connectionCounters(c));
    }
    assertTrue(campaign.failures().isEmpty(),
        campaign.failures().size() + " failures, first:\n" + String.join("\n", campaign.failures()));
    assertTrue(bystander.errors.isEmpty(), "the member's work failed during the fuzz: " + bystander.errors);
    assertTrue(campaign.total(Role.META) >= 100_000L * SCALE, campaign.counts().toString());
    assertTrue(campaign.total(Role.IO) >= 100_000L * SCALE, campaign.counts().toString());
    for (Path log : logs) {
      String text = Files.readString(log);
      assertFalse(text.contains("LEAK:"), log + " reports a leak");
      assertFalse(text.contains("OutOfMemoryError"), log + " ran out of memory");
    }
    // a JVM with 256 MiB of heap and 256 MiB of direct memory stays within about that
    for (int i = 0; i < after.size(); i++) {
      assertTrue(after.get(i) < 700 * 1024, "server " + i + " resident " + after.get(i) + " KiB");
    }
    assertTrue(peak < 800 * 1024, "a server peaked at " + peak + " KiB resident");
  }

  /** Resident memory of each server process, in KiB. */
  private static List<Long> rss() throws IOException {
    List<Long> out = new ArrayList<>();
    for (Process p : servers) {
      long kb = 0;
      for (String line : Files.readAllLines(Path.of("/proc/" + p.pid() + "/status"))) {
        if (line.startsWith("VmRSS:")) {
          kb = Long.parseLong(line.replaceAll("[^0-9]", ""));
        }
      }
      out.add(kb);
    }
    return out;
  }
}
