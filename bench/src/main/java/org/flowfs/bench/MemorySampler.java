package org.flowfs.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Samples the resident set size of processes (VmRSS, and the huge pages they map) every 200 ms and keeps each one's peak, and
 * the phase of the run (a workload group and repetition) it was reached in.
 */
final class MemorySampler implements AutoCloseable {
  private final Map<String, Long> pids = new ConcurrentHashMap<>();
  private final Map<String, Long> peak = new ConcurrentHashMap<>();
  private final Map<String, String> peakPhase = new ConcurrentHashMap<>();
  private volatile String phase = "start";
  private final Thread thread;
  private volatile boolean running = true;

  MemorySampler() {
    thread = new Thread(() -> {
      while (running) {
        pids.forEach((role, pid) -> {
          long rss = rssKib(pid);
          if (rss > peak.getOrDefault(role, 0L)) { // only this thread writes the peaks
            peak.put(role, rss);
            peakPhase.put(role, phase);
          }
        });
        try {
          Thread.sleep(200);
        } catch (InterruptedException e) {
          return;
        }
      }
    }, "rss-sampler");
    thread.setDaemon(true);
    thread.start();
  }

  void watch(String prefix, Map<String, Long> processes) {
    processes.forEach((role, pid) -> pids.put(prefix + "/" + role, pid));
  }

  void unwatch(String prefix) {
    pids.keySet().removeIf(k -> k.startsWith(prefix + "/"));
  }

  /** Names what runs from now on, for {@link #peakPhases}. */
  void phase(String name) {
    phase = name;
  }

  /** Where each process reached its peak: "role: phase" for every process watched, in role order. */
  String peakPhases() {
    StringBuilder sb = new StringBuilder();
    new TreeMap<>(peakPhase).forEach((role, p) -> sb.append(sb.length() == 0 ? "" : ", ").append(role).append(": ").append(p));
    return sb.toString();
  }

  /** Peak RSS in MiB by process. */
  Map<String, Long> peaksMib() {
    Map<String, Long> m = new TreeMap<>();
    peak.forEach((k, v) -> m.put(k, v / 1024));
    return m;
  }

  /**
   * The process's resident memory in KiB: its RSS, and the huge pages it maps ({@code
   * HugetlbPages}, shared memory in a hugetlbfs, {@code node.shm-dir}), which RSS leaves out; -1
   * when it is gone.
   */
  static long rssKib(long pid) {
    try {
      long kib = -1;
      for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
        if (line.startsWith("VmRSS:") || line.startsWith("HugetlbPages:")) {
          kib = Math.max(kib, 0) + Long.parseLong(line.replaceAll("[^0-9]", ""));
        }
      }
      return kib;
    } catch (IOException | NumberFormatException e) {
      return -1;
    }
  }

  @Override
  public void close() {
    running = false;
    thread.interrupt();
  }
}
