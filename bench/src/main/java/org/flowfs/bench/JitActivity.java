package org.flowfs.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Locale;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * The CPU time the JIT compiler threads of some JVMs have used, from {@code /proc/PID/task/TID/stat}
 * (threads named {@code C1 CompilerThreadN} and {@code C2 CompilerThreadN}): whether new servers
 * are still compiling their hot paths, which on a machine of few cores takes processor time from
 * what is measured.
 */
final class JitActivity {
  /** Linux reports a task's times in clock ticks of 1/100 s ({@code USER_HZ}). */
  private static final double TICK_SECONDS = 0.01;

  /** The share of the machine's CPU compilers may take in the last warm-up round. */
  static final double QUIET = 0.05;
  /** Warm-up rounds at most in a full run. */
  static final int MAX_ROUNDS = 8;

  private JitActivity() {}

  /** A warm-up round: some work run again and again. */
  interface Round {
    void run() throws Exception;
  }

  /**
   * Runs {@code round} again until the JIT compilers of the processes {@code pids} took at most
   * {@link #QUIET} of the machine's CPU during one, or {@code max} rounds ran; logs each round's
   * share, as {@code what}.
   */
  static void untilQuiet(String what, Supplier<Collection<Long>> pids, int max, Round round) throws Exception {
    int cores = Runtime.getRuntime().availableProcessors();
    for (int i = 1; i <= max; i++) {
      double c0 = compilerSeconds(pids.get());
      long t0 = System.nanoTime();
      round.run();
      double share = (compilerSeconds(pids.get()) - c0) / ((System.nanoTime() - t0) / 1e9 * cores);
      System.err.printf(Locale.ROOT, "%s, warm-up round %d: JIT compilers took %.0f%% of the CPU%n", what, i, share * 100);
      if (share <= QUIET) {
        return;
      }
    }
  }

  /** Seconds of CPU the compiler threads of the processes {@code pids} used so far (gone ones count 0). */
  static double compilerSeconds(Collection<Long> pids) {
    long ticks = 0;
    for (long pid : pids) {
      try (Stream<Path> tasks = Files.list(Path.of("/proc", String.valueOf(pid), "task"))) {
        for (Path task : (Iterable<Path>) tasks::iterator) {
          ticks += compilerTicks(task.resolve("stat"));
        }
      } catch (IOException e) {
        // the process is gone
      }
    }
    return ticks * TICK_SECONDS;
  }

  /** utime + stime of a compiler thread, 0 for another thread or one that is gone. */
  private static long compilerTicks(Path stat) {
    String s;
    try {
      s = Files.readString(stat);
    } catch (IOException e) {
      return 0;
    }
    int open = s.indexOf('(');
    int close = s.lastIndexOf(')');
    String comm = s.substring(open + 1, close);
    if (!comm.startsWith("C1 CompilerThre") && !comm.startsWith("C2 CompilerThre")) {
      return 0;
    }
    String[] f = s.substring(close + 2).split(" ");
    return Long.parseLong(f[11]) + Long.parseLong(f[12]); // fields 14 and 15 of stat(5)
  }
}
