package org.flowfs.client;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.flowfs.common.Handle;
import org.junit.jupiter.api.Test;

class DirContentsTest {
  static final Handle D = Handle.of(1, 42);
  static final Duration LONG = Duration.ofHours(1);

  @Test
  void aDirectoryThisClientMade_isEmpty_andKeepsItsOwnChanges() {
    DirContents c = new DirContents(LONG);
    assertFalse(c.absent(D, "a"), "unknown directory: ask the server");
    c.made(D, 100, System.nanoTime());
    assertTrue(c.absent(D, "a"));
    c.changed(D, "a", true, 100, 200, System.nanoTime());
    assertFalse(c.absent(D, "a"));
    assertTrue(c.absent(D, "b"));
    c.changed(D, "a", false, 200, 300, System.nanoTime());
    assertTrue(c.absent(D, "a"));
  }

  @Test
  void aChangeThatDidNotFollowTheLastSeen_forgetsTheDirectory() {
    DirContents c = new DirContents(LONG);
    c.made(D, 100, System.nanoTime());
    c.changed(D, "a", true, 150, 200, System.nanoTime()); // another change came between
    assertFalse(c.known(D));
    assertFalse(c.absent(D, "b"));
    c.changed(D, "b", true, 200, 300, System.nanoTime()); // stays forgotten
    assertFalse(c.known(D));
  }

  @Test
  void anAnswerWithoutTheParentsCtime_forgetsTheDirectory() {
    DirContents c = new DirContents(LONG);
    c.made(D, 100, System.nanoTime());
    c.changed(D, "a", true, 0, 200, System.nanoTime());
    assertFalse(c.known(D));
  }

  @Test
  void namesAreTrustedForTheEntryTimeoutAfterTheLastConfirmedChange() {
    long second = Duration.ofSeconds(1).toNanos();
    DirContents c = new DirContents(Duration.ofSeconds(10));
    c.made(D, 100, System.nanoTime() - 20 * second); // asked for 20 s ago
    assertFalse(c.absent(D, "b"), "past the timeout: ask the server");
    assertTrue(c.known(D), "kept, untrusted");
    c.changed(D, "a", true, 100, 200, System.nanoTime() - second); // a change that follows them, 1 s ago
    assertTrue(c.absent(D, "b"));
    assertFalse(c.absent(D, "a"));
  }

  @Test
  void namesPastTheTimeout_areTrustedAgain_byAGrantAtTheirCtime_andForgottenByOneAtAnother() {
    long second = Duration.ofSeconds(1).toNanos();
    DirContents c = new DirContents(Duration.ofSeconds(10));
    c.made(D, 100, System.nanoTime() - 20 * second);
    c.changed(D, "a", true, 100, 200, System.nanoTime() - 20 * second);
    assertFalse(c.absent(D, "b"), "past the timeout");
    assertTrue(c.confirm(D, 200, System.nanoTime()), "nothing changed the directory since: its ctime says so");
    assertTrue(c.absent(D, "b"));
    assertFalse(c.absent(D, "a"));
    assertFalse(c.confirm(D, 250, System.nanoTime()), "another client changed it");
    assertFalse(c.known(D));
    assertFalse(c.absent(D, "b"));
    assertFalse(c.confirm(D, 250, System.nanoTime()), "not known");
  }

  @Test
  void aZeroTimeout_knowsNothing() {
    DirContents c = new DirContents(Duration.ZERO);
    c.made(D, 100, System.nanoTime());
    assertFalse(c.absent(D, "a"));
  }

  @Test
  void aDirectoryPastItsNameBound_isForgotten() {
    DirContents c = new DirContents(LONG);
    c.made(D, 1, System.nanoTime());
    long t = 1;
    for (int i = 0; i < DirContents.MAX_DIR_NAMES; i++, t++) {
      c.changed(D, "f" + i, true, t, t + 1, System.nanoTime());
    }
    assertTrue(c.absent(D, "g"));
    c.changed(D, "g", true, t, t + 1, System.nanoTime());
    assertFalse(c.known(D));
  }
}
