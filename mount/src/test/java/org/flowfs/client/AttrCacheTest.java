package org.flowfs.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.flowfs.common.Attr;
import org.flowfs.common.FileType;
import org.flowfs.common.Handle;
import org.junit.jupiter.api.Test;

class AttrCacheTest {
  static final Handle D = Handle.of(Handle.META_SERVER, 7);
  static final Handle E = Handle.of(Handle.META_SERVER, 8);

  private static Attr dir(Handle h, int nlink, long timeNs) {
    return new Attr(h, FileType.DIRECTORY, 0755, 0, 0, nlink, Attr.DIR_SIZE, timeNs, timeNs, timeNs, 0, null);
  }

  @Test
  void heldAttributes_outliveTheTimeout_followThisClientsChanges_andGoWhenTheLeaseEnds() throws Exception {
    AttrCache c = new AttrCache(Duration.ofMillis(30), 100);
    CompletableFuture<Void> lease = new CompletableFuture<>();
    c.hold(dir(D, 2, 1), lease);
    c.put(dir(E, 2, 1));
    Thread.sleep(100);
    assertNull(c.get(E), "past the timeout");
    assertEquals(dir(D, 2, 1), c.get(D), "held while the lease lives");
    c.entriesChanged(D, 5, 1);
    Thread.sleep(100);
    assertEquals(dir(D, 2, 1).withEntriesChanged(5, 1), c.get(D), "a subdirectory made here: the held attributes follow");
    assertEquals(3, c.get(D).nlink());
    c.put(dir(D, 3, 9));
    Thread.sleep(100);
    assertEquals(dir(D, 3, 9), c.get(D), "replaced by this client's answer, held still");
    lease.complete(null);
    Thread.sleep(100);
    assertNull(c.get(D), "the lease ended: others may change it now");
    CompletableFuture<Void> again = new CompletableFuture<>();
    c.hold(dir(D, 2, 1), again);
    c.invalidate(D);
    assertNull(c.get(D), "dropped (a change whose outcome is not known) is dropped for good");
    c.put(dir(D, 2, 1));
    Thread.sleep(100);
    assertNull(c.get(D), "not held again by a put");
    c.hold(dir(E, 2, 1), CompletableFuture.completedFuture(null));
    Thread.sleep(100);
    assertNull(c.get(E), "a lease over already holds nothing");
  }

  @Test
  void putIfAbsent_fillsOnlyWhatNothingIsCachedFor() {
    AttrCache c = new AttrCache(Duration.ofHours(1), 100);
    c.put(dir(D, 3, 9)); // e.g. a getattr answered after the listing was asked for
    assertFalse(c.putIfAbsent(dir(D, 2, 1)));
    assertEquals(dir(D, 3, 9), c.get(D), "the newer answer stays");
    assertTrue(c.putIfAbsent(dir(E, 2, 1)));
    assertEquals(dir(E, 2, 1), c.get(E));
    CompletableFuture<Void> lease = new CompletableFuture<>();
    c.hold(dir(D, 4, 10), lease);
    c.invalidate(E);
    c.hold(dir(E, 4, 10), lease);
    assertFalse(c.putIfAbsent(dir(E, 2, 1)), "held: only this client's changes replace it");
    assertEquals(dir(E, 4, 10), c.get(E));
  }
}
