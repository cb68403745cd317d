package org.flowfs.fuse;

import java.util.ArrayDeque;
import java.util.concurrent.locks.LockSupport;

/**
 * Decides which of the FUSE worker threads wait on the kernel for the next request. The kernel
 * hands each request to the thread that has waited longest, so with every idle worker waiting
 * there, a one-at-a-time workload (a shell loop, {@code tar -x}) runs each request on a different
 * thread, the coldest one: its stack, thread-local buffer caches and allocation buffer long out
 * of the processor's caches, and another thread to schedule. Here at most {@code readers} workers
 * wait on the kernel; the other idle ones park, the most recently parked on top (LIFO), and one
 * is woken only when the last waiting worker takes a request. A serial workload then stays on
 * {@code readers} hot threads and costs no extra wake-up, while a concurrent one still gets every
 * worker: a worker that takes the last reader's place is woken before the request that emptied
 * it is processed, as the kernel would have had it waiting already.
 *
 * <p>Thread safe; {@link #enter} blocks (parks), the other methods do not.
 */
final class ReaderGate {
  private final int readers;
  private final ArrayDeque<Thread> parked = new ArrayDeque<>();
  /** Workers reading from the kernel, or woken to do so. */
  private int reading;
  private boolean open = true;

  /** A gate that lets {@code readers} (at least 1) workers wait on the kernel at once. */
  ReaderGate(int readers) {
    if (readers < 1) {
      throw new IllegalArgumentException("readers must be at least 1: " + readers);
    }
    this.readers = readers;
  }

  /**
   * Waits until the calling worker may read the next request; false once the gate is {@link
   * #close closed} (the loop is ending): the worker then stops.
   */
  boolean enter() {
    Thread me = Thread.currentThread();
    synchronized (this) {
      if (!open) {
        return false;
      }
      if (reading < readers) {
        reading++;
        return true;
      }
      parked.push(me);
    }
    while (true) {
      LockSupport.park(this);
      synchronized (this) {
        if (!parked.contains(me)) { // handed a reader's place (counted for it), or the gate closed
          return open;
        }
      }
    }
  }

  /** The calling worker took a request (or its read failed): it no longer waits on the kernel. */
  void leave() {
    Thread next = null;
    synchronized (this) {
      reading--;
      if (reading == 0 && !parked.isEmpty()) {
        next = parked.pop();
        reading++;
      }
    }
    if (next != null) {
      LockSupport.unpark(next);
    }
  }

  /** Ends the gate: every parked worker returns false from {@link #enter}, as will later calls. */
  void close() {
    Thread[] all;
    synchronized (this) {
      open = false;
      all = parked.toArray(Thread[]::new);
      parked.clear();
    }
    for (Thread t : all) {
      LockSupport.unpark(t);
    }
  }

  /** Workers now reading or woken to read (for tests). */
  synchronized int reading() {
    return reading;
  }

  /** Workers now parked (for tests). */
  synchronized int parked() {
    return parked.size();
  }
}
