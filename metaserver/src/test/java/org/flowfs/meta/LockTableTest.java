package org.flowfs.meta;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.RecordLocks;
import org.flowfs.common.wire.MetaOp.FlockReq;
import org.flowfs.common.wire.MetaOp.RecordLockReq;
import org.flowfs.common.wire.MetaOp.RecordLockResp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * flock(2)'s and fcntl(2)'s record locks' rules between owners of different clients, the term,
 * and the claims after a restart.
 */
class LockTableTest {
  private static final long TERM = 1_000;
  private static final Handle F = Handle.of(0, 7);
  private static final Handle G = Handle.of(0, 8);

  private final Counters counters = new Counters();

  private static FlockReq req(Handle h, long client, long owner, int op) {
    return new FlockReq(h, client, owner, op, false);
  }

  private static Errno refused(Runnable r) {
    return assertThrows(FsException.class, r::run).errno();
  }

  @Test
  void sharedWithShared_exclusiveAlone_conversionAndUnlock() {
    LockTable t = new LockTable(TERM, null, counters, 0);
    t.lock(req(F, 1, 10, FlockReq.SHARED), 0);
    t.lock(req(F, 2, 10, FlockReq.SHARED), 0); // same owner id, another client: another owner
    assertEquals(2, t.holders(F));
    assertEquals(Errno.EAGAIN, refused(() -> t.lock(req(F, 1, 11, FlockReq.EXCLUSIVE), 0)));
    assertEquals(Errno.EAGAIN, refused(() -> t.lock(req(F, 1, 10, FlockReq.EXCLUSIVE), 0)), "client 2 shares it");
    t.lock(req(F, 2, 10, FlockReq.UNLOCK), 0);
    t.lock(req(F, 1, 10, FlockReq.EXCLUSIVE), 0); // converted: the only holder
    assertEquals(1, t.holders(F));
    assertEquals(Errno.EAGAIN, refused(() -> t.lock(req(F, 2, 10, FlockReq.SHARED), 0)));
    t.lock(req(G, 2, 10, FlockReq.EXCLUSIVE), 0); // another file
    t.lock(req(F, 1, 10, FlockReq.SHARED), 0); // converted back
    t.lock(req(F, 2, 10, FlockReq.SHARED), 0);
    t.lock(req(F, 3, 99, FlockReq.UNLOCK), 0); // holds nothing: nothing happens
    assertEquals(2, t.holders(F));
    assertEquals(3L, counters.snapshot().get("lock.refused"));
  }

  @Test
  void aClientNotHeardFromForATerm_losesItsLocks_othersKeepTheirs() {
    LockTable t = new LockTable(TERM, null, counters, 0);
    t.lock(req(F, 1, 10, FlockReq.EXCLUSIVE), 0);
    t.lock(req(G, 2, 10, FlockReq.SHARED), 0);
    assertTrue(t.renew(2, 900));
    assertEquals(0, t.expire(TERM));
    assertEquals(1, t.expire(TERM + 1)); // client 1 was last heard of at 0
    assertEquals(0, t.holders(F));
    assertEquals(1, t.holders(G));
    assertFalse(t.renew(1, TERM + 2), "unknown now: it claims its locks again");
    t.lock(req(F, 3, 10, FlockReq.EXCLUSIVE), TERM + 2);
  }

  @Test
  void afterARestartWithLocksHeld_onlyClaimsAreGranted_forATerm(@TempDir Path dir) {
    Path marker = dir.resolve(LockTable.MARKER);
    LockTable before = new LockTable(TERM, marker, counters, 0);
    assertFalse(before.inGrace(0), "no marker: no locks were held");
    before.lock(req(F, 1, 10, FlockReq.EXCLUSIVE), 0);
    assertTrue(Files.exists(marker));
    // the server stops with the lock held, and starts again
    LockTable after = new LockTable(TERM, marker, counters, 5_000);
    assertTrue(after.inGrace(5_000));
    assertEquals(Errno.EAGAIN, refused(() -> after.lock(req(F, 2, 10, FlockReq.EXCLUSIVE), 5_000)));
    assertEquals(Errno.EAGAIN, refused(() -> after.lock(req(G, 2, 10, FlockReq.SHARED), 5_000)), "not even a free file");
    after.lock(new FlockReq(F, 1, 10, FlockReq.EXCLUSIVE, true), 5_100); // its holder claims it
    after.lock(req(G, 2, 10, FlockReq.UNLOCK), 5_100); // an unlock is always fine
    assertFalse(after.inGrace(5_000 + TERM));
    assertEquals(Errno.EAGAIN, refused(() -> after.lock(req(F, 2, 10, FlockReq.SHARED), 6_001)));
    after.lock(req(G, 2, 10, FlockReq.SHARED), 6_001);
    after.lock(req(F, 1, 10, FlockReq.UNLOCK), 6_002);
    after.lock(req(G, 2, 10, FlockReq.UNLOCK), 6_002);
    assertFalse(Files.exists(marker), "no lock held: a restart now grants at once");
  }

  private static RecordLockReq range(long client, long owner, int type, long start, long end) {
    return new RecordLockReq(F, client, owner, type, start, end, 100 + (int) owner, false, false);
  }

  private static RecordLockReq test(long client, long owner, int type, long start, long end) {
    return new RecordLockReq(F, client, owner, type, start, end, 0, true, false);
  }

  @Test
  void recordLocks_conflictByRangeAndType_testsNameTheConflict_andFlocksAreApart() {
    LockTable t = new LockTable(TERM, null, counters, 0);
    t.lock(range(1, 10, RecordLocks.WRITE, 0, 99), 0);
    t.lock(range(2, 10, RecordLocks.READ, 100, RecordLocks.EOF), 0); // another client, the rest of the file
    assertEquals(Errno.EAGAIN, refused(() -> t.lock(range(2, 10, RecordLocks.READ, 99, 99), 0)));
    assertEquals(Errno.EAGAIN, refused(() -> t.lock(range(1, 11, RecordLocks.WRITE, 500, 500), 0)), "another owner of client 1");
    t.lock(range(1, 11, RecordLocks.READ, 500, 500), 0); // readers share
    assertEquals(Errno.EAGAIN, refused(() -> t.lock(range(1, 10, RecordLocks.WRITE, 50, 149), 0)), "client 2 reads from 100");
    assertEquals(new RecordLockResp(RecordLocks.UNLOCK, 0, 0, 0, TERM), t.lock(test(3, 1, RecordLocks.READ, 200, 300), 0));
    RecordLockResp c = t.lock(test(2, 99, RecordLocks.WRITE, 120, 120), 0);
    assertEquals(RecordLocks.READ, c.type());
    assertEquals(100, c.start());
    assertEquals(110, c.pid(), "a process of the asking client is named");
    assertEquals(0, t.lock(test(3, 1, RecordLocks.WRITE, 0, 0), 0).pid(), "another client's is not");
    t.lock(new FlockReq(F, 3, 1, FlockReq.EXCLUSIVE, false), 0); // flock and record locks do not meet
    t.lock(range(1, 10, RecordLocks.UNLOCK, 0, RecordLocks.EOF), 0);
    t.lock(range(2, 10, RecordLocks.WRITE, 0, 99), 0);
    assertEquals(3, t.holders(F)); // client 2's owner, client 1's owner 11, and client 3's flock
  }

  @Test
  void recordLocks_goWithAClientNotHeardFrom_andAfterARestart_onlyClaimsAreGranted(@TempDir Path dir) {
    Path marker = dir.resolve(LockTable.MARKER);
    LockTable t = new LockTable(TERM, marker, counters, 0);
    t.lock(range(1, 10, RecordLocks.WRITE, 0, 9), 0);
    assertTrue(Files.exists(marker));
    assertEquals(1, t.expire(TERM + 1));
    assertFalse(Files.exists(marker), "no lock held: a restart waits for none");
    t.lock(range(1, 10, RecordLocks.WRITE, 0, 9), TERM + 2);
    LockTable after = new LockTable(TERM, marker, counters, 5_000);
    assertEquals(Errno.EAGAIN, refused(() -> after.lock(range(2, 10, RecordLocks.READ, 50, 60), 5_000)));
    after.lock(new RecordLockReq(F, 1, 10, RecordLocks.WRITE, 0, 9, 7, false, true), 5_001);
    assertEquals(RecordLocks.WRITE, after.lock(test(2, 10, RecordLocks.READ, 0, 0), 5_002).type(), "tests are answered");
    after.lock(range(2, 10, RecordLocks.READ, 50, 60), 6_001);
  }
}
