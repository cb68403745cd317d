package org.flowfs.meta;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.flowfs.common.Counters;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.wire.MetaOp.Reserved;
import org.flowfs.meta.DirLeases.Lease;
import org.junit.jupiter.api.Test;

/** {@link DirLeases} on a clock and a scheduler the test turns by hand. */
class DirLeasesTest {
  private static final long TERM = Duration.ofSeconds(3).toNanos();
  private static final Handle DIR = Handle.of(0, 10);
  private static final Handle OTHER = Handle.of(0, 11);

  private long now = 1_000;
  /** Tasks the leases scheduled, with the clock reading they are due at. */
  private final List<Map.Entry<Long, Runnable>> due = new ArrayList<>();
  private final Map<Lease, Map<Handle, Layout>> expired = new LinkedHashMap<>();
  private final Counters counters = new Counters();
  private final DirLeases leases = new DirLeases(Duration.ofNanos(TERM), () -> now,
      (delayNs, task) -> due.add(Map.entry(now + delayNs, task)), expired::put, counters);

  /** Moves the clock and runs what fell due, including what those tasks schedule. */
  private void advance(long ns) {
    now += ns;
    boolean ran = true;
    while (ran) {
      ran = false;
      for (Map.Entry<Long, Runnable> e : List.copyOf(due)) {
        if (e.getKey() <= now) {
          due.remove(e);
          e.getValue().run();
          ran = true;
        }
      }
    }
  }

  private static Reserved file(long handle, long datafile) {
    return new Reserved(Handle.of(0, handle),
        new Layout(DistSpec.of("simple_stripe", 65536), List.of(Handle.of(1, datafile)), 4096));
  }

  @Test
  void onePerDirectory_untilItEnds() {
    assertTrue(leases.isEmpty());
    Lease l = leases.grant(DIR);
    assertNotNull(l);
    assertNotEquals(0, l.id());
    assertFalse(leases.isEmpty());
    assertNull(leases.grant(DIR), "one lease per directory");
    assertNotNull(leases.grant(OTHER), "another directory is free");
    leases.end(l);
    assertTrue(l.ended().isDone());
    assertNotNull(leases.grant(DIR), "free again once ended");
  }

  @Test
  void recall_waitsForTheEnd_andMarksTheLeaseOnce() {
    Lease l = leases.grant(DIR);
    assertNull(leases.recall(OTHER), "nothing to wait for elsewhere");
    CompletableFuture<Void> first = leases.recall(DIR);
    CompletableFuture<Void> second = leases.recall(DIR);
    assertSame(l.ended(), first);
    assertSame(first, second);
    assertTrue(leases.recalled(l));
    assertFalse(first.isDone());
    leases.end(l);
    assertTrue(first.isDone());
    assertNull(leases.recall(DIR), "ended: nothing to wait for");
    assertEquals(1, counters.get("lease.recalled"));
    assertEquals(2, counters.get("lease.parked"));
  }

  @Test
  void reservations_areClaimedOnce_andTheRestGoBackAtTheEnd() {
    Lease l = leases.grant(DIR);
    Reserved a = file(20, 1);
    Reserved b = file(21, 2);
    assertTrue(leases.reserve(l, List.of(a, b)));
    assertEquals(List.of(Handle.of(1, 1), Handle.of(1, 2)), leases.reservedDatafiles());
    assertEquals(a.layout(), leases.claim(l, a.handle()));
    assertNull(leases.claim(l, a.handle()), "claimed once");
    assertNull(leases.claim(l, Handle.of(0, 99)), "never reserved");
    assertEquals(List.of(Handle.of(1, 2)), leases.reservedDatafiles(), "a used reservation leaves the lease");
    assertEquals(Map.of(b.handle(), b.layout()), leases.end(l));
    assertEquals(List.of(), leases.reservedDatafiles());
    assertFalse(leases.reserve(l, List.of(file(22, 3))), "ended: takes nothing");
    assertEquals(Map.of(), leases.end(l), "ending twice gives nothing back twice");
  }

  @Test
  void enterBatch_needsTheLiveLeaseOfThatDirectory() {
    Lease l = leases.grant(DIR);
    assertNull(leases.enterBatch(DIR, l.id() + 1));
    assertNull(leases.enterBatch(OTHER, l.id()));
    assertSame(l, leases.enterBatch(DIR, l.id()));
    leases.leaveBatch(l);
    leases.end(l);
    assertNull(leases.enterBatch(DIR, l.id()), "ended");
  }

  @Test
  void expiry_afterATermWithoutBatch_handsTheUnusedReservationsOver() {
    Lease l = leases.grant(DIR);
    Reserved a = file(20, 1);
    leases.reserve(l, List.of(a));
    CompletableFuture<Void> waiting = leases.recall(DIR);
    advance(TERM - 1);
    assertFalse(waiting.isDone());
    advance(1);
    assertTrue(waiting.isDone());
    assertEquals(Map.of(l, Map.of(a.handle(), a.layout())), expired);
    assertEquals(1, counters.get("lease.expired"));
    assertTrue(leases.isEmpty());
    assertNull(leases.enterBatch(DIR, l.id()), "a batch after the expiry finds no lease");
    assertEquals(Map.of(), leases.end(l), "nothing left to give back");
  }

  @Test
  void batches_renewTheTerm_andHoldOffExpiryWhileApplied() {
    Lease l = leases.grant(DIR);
    advance(TERM - 10);
    leases.enterBatch(DIR, l.id());
    leases.leaveBatch(l);
    advance(TERM - 10);
    assertTrue(expired.isEmpty(), "renewed by the batch");
    leases.enterBatch(DIR, l.id()); // still being applied a long time later
    advance(3 * TERM);
    assertTrue(expired.isEmpty(), "never while a batch is applied");
    leases.leaveBatch(l);
    advance(2 * TERM);
    assertEquals(List.of(l), List.copyOf(expired.keySet()));
  }

  @Test
  void close_endsEveryLease() {
    Lease a = leases.grant(DIR);
    Lease b = leases.grant(OTHER);
    leases.close();
    assertTrue(a.ended().isDone() && b.ended().isDone());
    assertTrue(leases.isEmpty());
    advance(2 * TERM);
    assertTrue(expired.isEmpty(), "ended, not expired");
  }
}
