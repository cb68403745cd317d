package org.flowfs.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.flowfs.common.config.ConfigException;
import org.junit.jupiter.api.Test;

/** What can be tried without confining the test's own JVM (the process tests install it for real). */
class ServiceCpusTest {
  @Test
  void install_aCpuTheProcessLacks_namesTheKey_andChangesNothing() {
    CpuSet had = ServiceCpus.current();
    int absent = had.last() + 1;
    ConfigException e = assertThrows(ConfigException.class, () -> ServiceCpus.install(CpuSet.parse(had.last() + "," + absent)));
    assertEquals("key 'node.service-cpus': CPU " + absent + " is not among the CPUs this process may use (" + had + ")",
        e.getMessage());
    ServiceCpus.confine(); // nothing installed: both leave the thread where it was
    ServiceCpus.release();
    assertEquals(had, ServiceCpus.current());
  }

  @Test
  void install_empty_isNothing() {
    CpuSet had = ServiceCpus.current();
    ServiceCpus.install(CpuSet.EMPTY);
    CpuSet[] there = new CpuSet[1];
    Thread t = new NamedThreads("cpus-test").newThread(() -> there[0] = ServiceCpus.current());
    t.start();
    assertTrue(join(t));
    assertEquals(had, there[0]);
  }

  private static boolean join(Thread t) {
    try {
      t.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return !t.isAlive();
  }
}
