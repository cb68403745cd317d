package org.flowfs.client.api;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;

/** Threads of one JVM as the members of a group: exchanges through shared slots and a barrier. */
final class LocalGroup implements Group {
  /** What the members share. */
  private static final class Shared {
    final byte[][][] slots;
    final CyclicBarrier barrier;
    final Duration timeout;

    Shared(int size, Duration timeout) {
      this.slots = new byte[size][][];
      this.barrier = new CyclicBarrier(size);
      this.timeout = timeout;
    }
  }

  private final Shared shared;
  private final int rank;

  private LocalGroup(Shared shared, int rank) {
    this.shared = shared;
    this.rank = rank;
  }

  static List<Group> create(int size, Duration timeout) {
    if (size < 1) {
      throw new IllegalArgumentException("a group has at least one member");
    }
    Shared s = new Shared(size, timeout);
    List<Group> out = new ArrayList<>();
    for (int r = 0; r < size; r++) {
      out.add(new LocalGroup(s, r));
    }
    return List.copyOf(out);
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return shared.slots.length;
  }

  @Override
  public byte[][] alltoall(byte[][] toEach) {
    if (toEach.length != size()) {
      throw new IllegalArgumentException("one message per member");
    }
    shared.slots[rank] = toEach;
    await();
    byte[][] in = new byte[size()][];
    for (int r = 0; r < in.length; r++) {
      in[r] = shared.slots[r][rank];
    }
    await(); // nobody overwrites a slot before everyone has read it
    return in;
  }

  private void await() {
    try {
      shared.barrier.await(shared.timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new FsException(Errno.ETIMEDOUT, "group member missing after " + shared.timeout.toMillis() + " ms");
    } catch (BrokenBarrierException e) {
      throw new FsException(Errno.EIO, "another group member failed");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      shared.barrier.reset();
      throw new FsException(Errno.EINTR, "interrupted");
    }
  }

  @Override
  public void close() {
    // nothing held
  }
}
