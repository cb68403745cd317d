package org.flowfs.it;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The last line of cleanup: deployments still open when the test JVM exits (a test that crashed
 * before its {@code @AfterAll}) are closed by one shutdown hook, so no mount or server outlives
 * the run.
 */
final class Reaper {
  private static final Set<Deployment> OPEN = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(() -> OPEN.forEach(d -> {
      try {
        d.close();
      } catch (RuntimeException e) {
        // best effort at exit
      }
    }), "it-reaper"));
  }

  private Reaper() {}

  static void track(Deployment d) {
    OPEN.add(d);
  }

  static void untrack(Deployment d) {
    OPEN.remove(d);
  }
}
