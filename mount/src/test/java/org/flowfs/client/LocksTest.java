package org.flowfs.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.MetaOp.FlockReq;
import org.flowfs.common.wire.MetaOp.LockRenewReq;
import org.flowfs.common.wire.MetaOp.LockRenewResp;
import org.flowfs.common.wire.Req;
import org.junit.jupiter.api.Test;

/** The client's side of flock: what it asks the metadata server (a scripted one here) and when. */
class LocksTest {
  private static final Handle F = Handle.of(0, 5);
  private static final long TERM = 30_000_000; // 30 ms: renewals every 10 ms

  /** Grants, or refuses with EAGAIN while {@code busy}; fails every call while {@code down}. */
  private static final class Server implements Locks.Meta {
    final List<Object> asked = new CopyOnWriteArrayList<>();
    final AtomicBoolean busy = new AtomicBoolean();
    final AtomicBoolean down = new AtomicBoolean();
    final AtomicBoolean knows = new AtomicBoolean(true);

    @Override
    @SuppressWarnings("unchecked")
    public <R extends Message> R call(Req<R> req) {
      if (down.get()) {
        throw new FsException(Errno.EIO, "metadata server unreachable");
      }
      asked.add(req);
      if (req instanceof FlockReq q && q.op() != FlockReq.UNLOCK && busy.get() && !q.reclaim()) {
        throw new FsException(Errno.EAGAIN, "locked by another");
      }
      boolean known = !(req instanceof LockRenewReq) || knows.getAndSet(true);
      return (R) new LockRenewResp(known, TERM);
    }

    long count(java.util.function.Predicate<Object> p) {
      return asked.stream().filter(p).count();
    }
  }

  private static boolean unlock(Object o) {
    return o instanceof FlockReq q && q.op() == FlockReq.UNLOCK;
  }

  private static void await(java.util.function.BooleanSupplier c) throws InterruptedException {
    for (int i = 0; i < 500 && !c.getAsBoolean(); i++) {
      Thread.sleep(10);
    }
    assertTrue(c.getAsBoolean());
  }

  @Test
  void aNonBlockingConflict_isEagain_aBlockingOneWaitsUntilGranted_orInterrupted() throws Exception {
    Server s = new Server();
    try (Locks f = new Locks(s, new Counters())) {
      s.busy.set(true);
      assertEquals(Errno.EAGAIN, assertThrows(FsException.class,
          () -> f.lock(1, F, 10, FlockReq.EXCLUSIVE, false, () -> false)).errno());
      AtomicInteger checks = new AtomicInteger();
      assertEquals(Errno.EINTR, assertThrows(FsException.class,
          () -> f.lock(1, F, 10, FlockReq.EXCLUSIVE, true, () -> checks.incrementAndGet() > 3)).errno());
      Thread freer = new Thread(() -> {
        try {
          Thread.sleep(100);
        } catch (InterruptedException e) {
          return;
        }
        s.busy.set(false);
      });
      freer.start();
      f.lock(1, F, 10, FlockReq.EXCLUSIVE, true, () -> false); // returns once granted
      freer.join();
      f.released(1);
      assertEquals(1, s.count(LocksTest::unlock));
      f.released(1); // nothing held through it any more: nothing asked
      assertEquals(1, s.count(LocksTest::unlock));
    }
  }

  @Test
  void aReleaseTheServerMissed_isSentAgainWithTheRenewals_andLocksItForgotAreClaimed() throws Exception {
    Server s = new Server();
    try (Locks f = new Locks(s, new Counters())) {
      f.lock(1, F, 10, FlockReq.SHARED, false, () -> false);
      f.lock(2, F, 11, FlockReq.SHARED, false, () -> false);
      s.down.set(true);
      f.released(1); // no answer: not an error for the close
      s.down.set(false);
      await(() -> s.count(LocksTest::unlock) == 1);
      // the server restarted: the renewal finds this client unknown, and the lock still held is claimed
      s.knows.set(false);
      await(() -> s.count(o -> o instanceof FlockReq q && q.reclaim()) == 1);
      FlockReq claim = (FlockReq) s.asked.stream().filter(o -> o instanceof FlockReq q && q.reclaim()).findFirst().get();
      assertEquals(11, claim.owner());
    }
  }
}
