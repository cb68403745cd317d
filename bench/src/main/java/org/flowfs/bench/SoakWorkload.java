package org.flowfs.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The soak: the workload groups in turn, smaller, on the FlowFS mount for a fixed time, with the
 * resident set of every FlowFS process sampled at each tenth of it. The memory target is that
 * nothing grows: RSS at the end within 10% of RSS at the second tenth (minute 2 of 10).
 */
final class SoakWorkload {
  /** Samples per run, after the start one: one per tenth. */
  static final int SAMPLES = 10;
  /** The sample the end is judged against: minute 2 of a 10-minute soak. */
  static final int MARK = 2;

  private SoakWorkload() {}

  /** Rounds run and RSS in MiB per process at 0, 1/10, ..., 10/10 of the time. */
  record Result(int seconds, int rounds, Map<String, List<Long>> rssMib) {
    /** Growth of a process's RSS from the mark to the end, as a fraction. */
    double growth(String process) {
      List<Long> s = rssMib.get(process);
      return (double) s.get(s.size() - 1) / s.get(MARK) - 1;
    }

    boolean met() {
      return rssMib.keySet().stream().allMatch(p -> growth(p) <= 0.10);
    }
  }

  static Result run(Target flowfs, Workloads.Sizes round, int seconds) throws Exception {
    Map<String, List<Long>> rss = new LinkedHashMap<>();
    Map<String, Long> pids = flowfs.pids();
    pids.keySet().forEach(k -> rss.put(k, new ArrayList<>()));
    Runnable sample = () -> pids.forEach((k, pid) -> rss.get(k).add(MemorySampler.rssKib(pid) / 1024));
    sample.run();
    long start = System.nanoTime();
    long step = TimeUnit.SECONDS.toNanos(seconds) / SAMPLES;
    Thread sampler = new Thread(() -> {
      for (int i = 1; i < SAMPLES; i++) {
        long wait = start + i * step - System.nanoTime();
        try {
          TimeUnit.NANOSECONDS.sleep(Math.max(0, wait));
        } catch (InterruptedException e) {
          return;
        }
        sample.run();
      }
    }, "soak-sampler");
    sampler.start();
    Workloads w = new Workloads(round);
    int rounds = 0;
    try {
      while (System.nanoTime() - start < TimeUnit.SECONDS.toNanos(seconds)) {
        String group = Workloads.GROUPS.get(rounds++ % Workloads.GROUPS.size());
        Workloads.empty(flowfs.root());
        w.run(group, flowfs.root(), r -> {});
      }
    } finally {
      sampler.join();
    }
    sample.run();
    return new Result(seconds, rounds, rss);
  }
}
