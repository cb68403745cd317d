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
import org.flowfs.common.RecordLocks;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.MetaOp.FlockReq;
import org.flowfs.common.wire.MetaOp.LockRenewReq;
import org.flowfs.common.wire.MetaOp.LockRenewResp;
import org.flowfs.common.wire.MetaOp.RecordLockReq;
import org.flowfs.common.wire.MetaOp.RecordLockResp;
import org.flowfs.common.wire.Req;
import org.junit.jupiter.api.Test;

/** The client's side of flock and record locks: what it asks the metadata server (a scripted one here) and when. */
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
      if (req instanceof RecordLockReq q) {
        if (q.type() != RecordLocks.UNLOCK && busy.get() && !q.reclaim() && !q.test()) {
          throw new FsException(Errno.EAGAIN, "locked by another");
        }
        return (R) new RecordLockResp(RecordLocks.UNLOCK, 0, 0, 0, TERM);
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

  private static boolean recordUnlock(Object o) {
    return o instanceof RecordLockReq q && q.type() == RecordLocks.UNLOCK;
  }

  @Test
  void recordLocks_anUnlockOfNothingHeldAsksNothing_theOpenReleasesTheRest_andClaimsAreRanges() throws Exception {
    Server s = new Server();
    try (Locks f = new Locks(s, new Counters())) {
      f.recordLock(1, F, 20, RecordLocks.UNLOCK, 0, RecordLocks.EOF, 0, false, () -> false); // libfuse at a FLUSH
      assertEquals(0, s.asked.size(), "no lock held: no call");
      f.recordLock(1, F, 20, RecordLocks.WRITE, 0, 99, 7, false, () -> false);
      f.recordLock(1, F, 20, RecordLocks.READ, 200, RecordLocks.EOF, 7, false, () -> false);
      assertTrue(f.holdsRecordLocks());
      f.recordLock(1, F, 20, RecordLocks.UNLOCK, 100, 199, 0, false, () -> false);
      assertEquals(0, s.count(LocksTest::recordUnlock), "nothing held between them: no call");
      s.busy.set(true);
      assertEquals(Errno.EAGAIN, assertThrows(FsException.class,
          () -> f.recordLock(1, F, 21, RecordLocks.WRITE, 0, 0, 8, false, () -> false)).errno());
      s.busy.set(false);
      // the server restarted: both ranges are claimed, each as held
      s.knows.set(false);
      await(() -> s.count(o -> o instanceof RecordLockReq q && q.reclaim()) == 2);
      assertEquals(List.of("2 0 99", "1 200 " + RecordLocks.EOF), s.asked.stream()
          .filter(o -> o instanceof RecordLockReq q && q.reclaim())
          .map(o -> (RecordLockReq) o).map(q -> q.type() + " " + q.start() + " " + q.end()).toList());
      f.released(1);
      assertEquals(1, s.count(LocksTest::recordUnlock), "the open's release unlocks its owner's ranges at once");
      assertTrue(!f.holdsRecordLocks());
    }
  }
}
