package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.flowfs.common.Attr;
import org.junit.jupiter.api.Test;

/**
 * The mode, owner and times of a file this client made, set while it is open and before anything
 * of it was recorded, go to the metadata server with its size and bytes, in one call at its close:
 * {@code tar -x} sets all three on every file it writes. This client shows them at once; another
 * client sees them, with the bytes, after the close. Files made elsewhere change at once.
 */
class DeferredAttrsTest extends PosixSuite {
  @Test
  void tarX_recordsEachFilesModeOwnerAndTimes_withItsBytes_inOneCallAtClose() throws Exception {
    assumeRoot(); // tar keeps owners as root
    Path src = onLocal("tarx-src");
    sh(src, "mkdir t; for i in 1 2 3; do head -c $((i * 1000)) /dev/urandom > t/f$i; done; : > t/empty;"
        + " chmod 0640 t/f1; chmod 0755 t/f2; chmod 0600 t/empty; chown " + ALICE + ":" + STAFF + " t/f3 t/empty;"
        + " touch -d '2001-02-03 04:05:06' t/f1 t/f3 t/empty; touch -d '2002-03-04 05:06:07' t/f2; tar -cf ../t.tar t");
    Path d = onMount("tarx");
    long deferred = fs.counter("setattr.deferred");
    long flushes = fs.counter("path.head.flushes") + fs.counter("path.head.leased");
    sh(d, "tar -xf " + src.resolveSibling("t.tar"));
    String format = "stat -c '%n %a %u %g %s %.9Y' t/f1 t/f2 t/f3 t/empty";
    String expected = sh(src, format);
    assertEquals(expected, sh(d, format), "as this client shows them");
    long waited = fs.counter("setattr.deferred") - deferred;
    // the times and owner of 4 files, and the mode of the 3 not made with their mode already
    assertTrue(waited >= 11, "changes that waited for the close: " + waited);
    // a call of its own, or a create in a batch (tar made the directory: this client holds a lease)
    assertEquals(3, fs.counter("path.head.flushes") + fs.counter("path.head.leased") - flushes,
        "the bytes of each file with bytes go once, with all of it");
    sh(d, "cmp t/f2 " + src.resolve("t/f2"));
    try (OtherClient other = new OtherClient(fs)) {
      for (String name : new String[] {"f1", "f2", "f3", "empty"}) {
        Attr a = other.stat("/tarx/t/" + name);
        String line = String.format("t/%s %o %d %d %d %d.%09d", name, a.mode(), a.uid(), a.gid(), a.size(),
            a.mtimeNs() / 1_000_000_000L, a.mtimeNs() % 1_000_000_000L);
        assertTrue(expected.contains(line + "\n"), "another client sees " + line + " in\n" + expected);
      }
    }
  }

  @Test
  void anOpenOfAnExistingFile_changesAtOnce_aNewFilesWaitsAndShowsHere() throws Exception {
    Path d = onMount("existing");
    sh(d, "printf abc > f");
    long setattrs = fs.counter("meta.setattr");
    long deferred = fs.counter("setattr.deferred");
    sh(d, "exec 3>>f; chmod 0600 f; printf def >&3");
    assertEquals(deferred, fs.counter("setattr.deferred"), "not made by this open: not deferred");
    assertTrue(fs.counter("meta.setattr") > setattrs, "the chmod went at once");
    assertEquals("600 6\n", sh(d, "stat -c '%a %s' f"));
    String shown = sh(d, "python3 -c \"import os; fd = os.open('g', os.O_CREAT | os.O_WRONLY, 0o644); os.write(fd, b'x');"
        + " os.fchmod(fd, 0o600); print(oct(os.stat('g').st_mode & 0o7777), os.stat('g').st_size); os.close(fd)\"");
    assertEquals("0o600 1\n", shown, "a new file's deferred mode shows here while it is open");
    assertEquals(deferred + 1, fs.counter("setattr.deferred"));
    try (OtherClient other = new OtherClient(fs)) {
      assertEquals(0600, other.stat("/existing/g").mode(), "and everywhere after its close");
      assertEquals(1, other.stat("/existing/g").size());
    }
  }

  /**
   * A change that cannot wait (a set-ID mode) comes after the deferred ones, as it came after
   * them: a chown that waited must not clear the set-user-ID bit of a later chmod.
   */
  @Test
  void aChangeThatCannotWait_followsTheDeferredOnes() throws Exception {
    assumeRoot();
    Path d = onMount("order");
    sh(d, "python3 -c \"import os; fd = os.open('f', os.O_CREAT | os.O_WRONLY, 0o644); os.write(fd, b'x');"
        + " os.fchown(fd, " + ALICE + ", " + STAFF + "); os.fchmod(fd, 0o4755); os.close(fd)\"");
    assertEquals("4755 " + ALICE + " " + STAFF + " 1\n", sh(d, "stat -c '%a %u %g %s' f"));
    try (OtherClient other = new OtherClient(fs)) {
      Attr a = other.stat("/order/f");
      assertEquals(04755, a.mode(), "the chown went first, then the chmod");
      assertEquals(ALICE, a.uid());
    }
  }
}
