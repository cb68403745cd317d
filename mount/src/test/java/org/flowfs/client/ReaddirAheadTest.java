package org.flowfs.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FileType;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.wire.MetaOp.Dirent;
import org.flowfs.common.wire.MetaOp.ReaddirResp;
import org.junit.jupiter.api.Test;

class ReaddirAheadTest {
  static final Duration LONG = Duration.ofHours(1);
  static final Duration TIMEOUT = Duration.ofSeconds(5);
  static final Handle P = Handle.of(1, 1000);

  /** What the walker's client asked the server for ahead, and the answers it holds back until told. */
  final Map<Handle, CompletableFuture<ReaddirResp>> asked = new LinkedHashMap<>();
  final AtomicBoolean idle = new AtomicBoolean(true);
  final Counters counters = new Counters();

  ReaddirAhead ahead(Duration ttl, int window) {
    return new ReaddirAhead(ttl, window, TIMEOUT, h -> asked.computeIfAbsent(h, k -> new CompletableFuture<>()),
        idle::get, counters);
  }

  static Handle dir(int i) {
    return Handle.of(1, i);
  }

  /** A page of {@code dirs} subdirectories d0.. (handles from {@code first}) with a file between each two. */
  static List<Dirent> page(int first, int dirs) {
    List<Dirent> l = new ArrayList<>();
    for (int i = 0; i < dirs; i++) {
      l.add(new Dirent("d" + i, dir(first + i), FileType.DIRECTORY, null, true));
      l.add(new Dirent("f" + i, Handle.of(1, 500_000 + first + i), FileType.REGULAR, null, true));
    }
    return l;
  }

  static ReaddirResp answer(int first, int dirs) {
    return new ReaddirResp(page(first, dirs), true);
  }

  @Test
  void openingASubdirectoryOfAListing_asksForTheNextOnes_andEachUsedOneWidensTheWindow() {
    ReaddirAhead a = ahead(LONG, 16);
    a.listed(P, true, page(10, 40)); // d0..d39 = handles 10..49
    a.opened(dir(10));
    assertEquals(List.of(dir(11), dir(12)), List.copyOf(asked.keySet()), "the first window: 2 after the opened one");
    asked.get(dir(11)).complete(answer(100, 0));
    asked.get(dir(12)).complete(answer(200, 0));

    a.opened(dir(11));
    ReaddirResp got = a.take(dir(11));
    assertSame(asked.get(dir(11)).getNow(null), got);
    a.listed(dir(11), true, got.entries());
    assertEquals(List.of(dir(11), dir(12), dir(13)), List.copyOf(asked.keySet()), "2 after d1: d3 new");

    a.opened(dir(12));
    assertSame(asked.get(dir(12)).getNow(null), a.take(dir(12)));
    a.opened(dir(13));
    // the window 2 -> 4 -> 8 after two used: d4..d6 at d2's open, d7..d11 (d3 + 8) at d3's
    List<Handle> expected = new ArrayList<>();
    for (int i = 11; i <= 21; i++) {
      expected.add(dir(i));
    }
    assertEquals(expected, List.copyOf(asked.keySet()));
    assertEquals(2, counters.get("readdir-ahead.used"));
    assertNull(a.take(dir(30)), "never asked for");
  }

  @Test
  void aPageTakenFromAhead_asksForTheFirstSubdirectoriesItLists() {
    ReaddirAhead a = ahead(LONG, 16);
    a.listed(P, true, page(10, 5));
    a.opened(dir(10));
    asked.get(dir(11)).complete(answer(100, 6)); // d1 holds six subdirectories, 100..105
    ReaddirResp got = a.take(dir(11)); // window now 4
    a.listed(dir(11), true, got.entries());
    assertEquals(List.of(dir(11), dir(12), dir(100), dir(101), dir(102), dir(103)), List.copyOf(asked.keySet()));
  }

  @Test
  void filesAreNeverAskedFor_andAListingNobodyWalks_asksForNothing() {
    ReaddirAhead a = ahead(LONG, 16);
    a.listed(P, true, page(10, 3));
    a.opened(Handle.of(1, 500_010)); // a file of the listing (a path open, not a directory's)
    a.opened(dir(99)); // a directory no listing here showed
    assertTrue(asked.isEmpty());
  }

  @Test
  void aChangeAnsweredAfterTheAsk_dropsThePage_oneAnsweredBefore_keepsIt() {
    ReaddirAhead a = ahead(LONG, 16);
    a.changed(); // answered before anything was asked for: in every page
    a.listed(P, true, page(10, 5));
    a.opened(dir(10));
    asked.get(dir(11)).complete(answer(100, 0));
    asked.get(dir(12)).complete(answer(200, 0));
    assertSame(asked.get(dir(11)).getNow(null), a.take(dir(11)));
    a.changed(); // e.g. this client made a file in d2: d2's page may lack it
    assertNull(a.take(dir(12)));
    assertEquals(1, counters.get("readdir-ahead.dropped"));
  }

  @Test
  void aChangeAnsweredWhileThePageIsOnItsWay_dropsIt() {
    ReaddirAhead a = ahead(LONG, 16);
    a.listed(P, true, page(10, 5));
    a.opened(dir(10));
    a.changed();
    asked.get(dir(11)).complete(answer(100, 0));
    assertNull(a.take(dir(11)));
  }

  @Test
  void withALeaseHeld_nothingIsAskedFor_andNoPageIsTaken() {
    ReaddirAhead a = ahead(LONG, 16);
    a.listed(P, true, page(10, 8));
    idle.set(false);
    a.opened(dir(10));
    assertTrue(asked.isEmpty(), "a lease held: its files may not be on the server yet");
    idle.set(true);
    a.opened(dir(11));
    assertEquals(List.of(dir(12), dir(13)), List.copyOf(asked.keySet()));
    asked.get(dir(12)).complete(answer(100, 0));
    idle.set(false);
    assertNull(a.take(dir(12)));
  }

  @Test
  void aPageOlderThanTheEntryTimeout_isDropped() throws Exception {
    ReaddirAhead a = ahead(Duration.ofMillis(30), 16);
    a.listed(P, true, page(10, 4));
    a.opened(dir(10));
    asked.get(dir(11)).complete(answer(100, 0));
    Thread.sleep(60);
    assertNull(a.take(dir(11)));
  }

  @Test
  void aFailedAsk_isDropped_soTheReaderAsksItself() {
    ReaddirAhead a = ahead(LONG, 16);
    a.listed(P, true, page(10, 4));
    a.opened(dir(10));
    asked.get(dir(11)).completeExceptionally(new FsException(Errno.ENOENT, "removed meanwhile"));
    assertNull(a.take(dir(11)));
  }

  @Test
  void anAnswerOnItsWay_isWaitedFor() throws Exception {
    ReaddirAhead a = ahead(LONG, 16);
    a.listed(P, true, page(10, 4));
    a.opened(dir(10));
    ReaddirResp r = answer(100, 0);
    CompletableFuture.runAsync(() -> {
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      asked.get(dir(11)).complete(r);
    });
    assertSame(r, a.take(dir(11)));
    assertEquals(1, counters.get("readdir-ahead.waited"));
  }

  @Test
  void offWithAWindowOf0_orAnEntryTimeoutOf0() {
    for (ReaddirAhead a : List.of(ahead(LONG, 0), ahead(Duration.ZERO, 16))) {
      a.listed(P, true, page(10, 8));
      a.opened(dir(10));
      a.opened(dir(11));
    }
    assertTrue(asked.isEmpty());
  }
}
