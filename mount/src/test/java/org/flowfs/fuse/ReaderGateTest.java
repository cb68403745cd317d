package org.flowfs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ReaderGateTest {
  /** A worker that enters the gate once and reports its name (or "closed") when it gets through. */
  private static Thread worker(ReaderGate gate, String name, BlockingQueue<String> through) {
    Thread t = new Thread(() -> through.add(gate.enter() ? name : "closed:" + name), name);
    t.setDaemon(true);
    t.start();
    return t;
  }

  private static void awaitParked(ReaderGate gate, int n) throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (gate.parked() != n) {
      assertTrue(System.nanoTime() < until, "parked workers: " + gate.parked() + ", expected " + n);
      Thread.sleep(1);
    }
  }

  @Test
  void onlyTheGivenNumberOfWorkersRead_andTheLastParkedIsWokenWhenNoneIsLeftReading() throws Exception {
    ReaderGate gate = new ReaderGate(2);
    BlockingQueue<String> through = new LinkedBlockingQueue<>();
    assertTrue(gate.enter());
    assertTrue(gate.enter()); // two readers: this thread counts as both
    List<Thread> parked = new ArrayList<>();
    for (String name : List.of("a", "b", "c")) {
      parked.add(worker(gate, name, through));
      awaitParked(gate, parked.size()); // parked in this order: c is on top
    }
    assertEquals(2, gate.reading());

    gate.leave(); // one reader is left: nobody is woken
    assertEquals(null, through.poll(100, TimeUnit.MILLISECONDS));
    assertEquals(1, gate.reading());

    gate.leave(); // none is left: the most recently parked takes over
    assertEquals("c", through.poll(10, TimeUnit.SECONDS));
    assertEquals(1, gate.reading());
    assertEquals(2, gate.parked());

    assertTrue(gate.enter()); // a worker back from its request reads again while there is room
    assertEquals(2, gate.reading());
    gate.leave();
    gate.leave();
    assertEquals("b", through.poll(10, TimeUnit.SECONDS));
    assertEquals(1, gate.parked());
    gate.close();
    assertEquals("closed:a", through.poll(10, TimeUnit.SECONDS));
    for (Thread t : parked) {
      t.join(10_000);
      assertFalse(t.isAlive());
    }
  }

  @Test
  void aClosedGateLetsNoWorkerRead() {
    ReaderGate gate = new ReaderGate(1);
    gate.close();
    assertFalse(gate.enter());
    assertThrows(IllegalArgumentException.class, () -> new ReaderGate(0));
  }

  @Test
  void manyWorkersServingRequests_neverHaveMoreReadersThanAllowed_andAllEndAtClose() throws Exception {
    ReaderGate gate = new ReaderGate(2);
    java.util.concurrent.atomic.AtomicInteger readingNow = new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.atomic.AtomicInteger most = new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.atomic.AtomicInteger served = new java.util.concurrent.atomic.AtomicInteger();
    BlockingQueue<Integer> requests = new LinkedBlockingQueue<>();
    List<Thread> workers = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      Thread t = new Thread(() -> {
        while (gate.enter()) {
          most.accumulateAndGet(readingNow.incrementAndGet(), Math::max);
          Integer r;
          try {
            r = requests.poll(20, TimeUnit.MILLISECONDS); // the kernel's read
          } catch (InterruptedException e) {
            return;
          } finally {
            readingNow.decrementAndGet();
            gate.leave();
          }
          if (r != null) {
            served.incrementAndGet();
            java.util.concurrent.locks.LockSupport.parkNanos(r * 1000L); // the request's work
          }
        }
      });
      t.setDaemon(true);
      workers.add(t);
      t.start();
    }
    for (int i = 0; i < 5_000; i++) {
      requests.add(i % 200);
    }
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (served.get() < 5_000) {
      assertTrue(System.nanoTime() < until, "served " + served.get() + " of 5000");
      Thread.sleep(5);
    }
    gate.close();
    for (Thread t : workers) {
      t.join(10_000);
      assertFalse(t.isAlive(), "a worker did not end at close");
    }
    assertTrue(most.get() <= 2, "readers at once: " + most.get());
  }
}
