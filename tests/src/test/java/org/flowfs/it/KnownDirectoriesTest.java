package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Names in a directory this client made and keeps changing: the lookup of a new name (which the
 * kernel makes before every create and mkdir) is answered without the metadata server, and what
 * another client does there still shows: at this client's next change there, or within the entry
 * timeout, and a create without O_EXCL opens the other client's file as the kernel would. The
 * entry timeout is long here (30 s) so that every step below runs within it, however slow the
 * machine: what shows must show through this client's own change, not the timeout.
 */
class KnownDirectoriesTest {
  static EmbeddedDeployment fs;
  static Path m;

  @BeforeAll
  static void up(@TempDir Path tmp) throws Exception {
    fs = new EmbeddedDeployment(tmp, 2, "client.entry-timeout = 30s\n");
    m = fs.mountPoint();
  }

  @AfterAll
  static void down() {
    if (fs != null) {
      fs.close();
    }
  }

  @Test
  void newNames_inADirectoryThisClientMade_needNoLookups() {
    Sh.ok(m, "mkdir k1");
    long lookups = fs.counter("meta.lookup");
    long known = fs.counter("meta.lookup.known-absent");
    Sh.ok(m, "for i in $(seq 40); do echo $i > k1/f$i; mkdir k1/d$i; ln -s f$i k1/s$i; done; rm k1/f1; rmdir k1/d1; echo again > k1/f1");
    assertTrue(fs.counter("meta.lookup.known-absent") - known >= 121, "lookups of new names answered here");
    assertEquals(0, fs.counter("meta.lookup") - lookups, "lookups sent to the metadata server");
    assertEquals("119", Sh.ok(m, "ls k1 | wc -l").strip());
    assertEquals("again", Sh.ok(m, "cat k1/f1").strip());
    assertEquals("f7", Sh.ok(m, "readlink k1/s7").strip());
    Sh.ok(m, "test ! -e k1/d1 && test -d k1/d2");
  }

  @Test
  void anotherClientsName_showsAtThisClientsNextChangeThere() throws Exception {
    Sh.ok(m, "mkdir k2 && touch k2/a && sync");
    Thread.sleep(200); // this client's lease on k2 ended, idle: the other's create recalls nothing
    try (OtherClient other = new OtherClient(fs)) {
      other.create("/k2/x", "theirs\n".getBytes(StandardCharsets.UTF_8));
      long relisted = fs.counter("lease.relisted");
      // the lease this create asks for, at the ctime the names are known at here, is granted at
      // the later one the other's create left: with the names, x among them
      Sh.ok(m, "touch k2/b");
      assertEquals(1, fs.counter("lease.relisted") - relisted);
      assertEquals("theirs", Sh.ok(m, "cat k2/x").strip());
      assertEquals("a b x", Sh.ok(m, "echo $(ls k2)").strip());
      // k2 is known again (no name is looked up), and so is a directory made now
      long lookups = fs.counter("meta.lookup");
      Sh.ok(m, "mkdir k2/c");
      assertEquals(0, fs.counter("meta.lookup") - lookups);
      Sh.ok(m, "touch k2/c/d");
      assertEquals(0, fs.counter("meta.lookup") - lookups);
    }
  }

  /**
   * Makes directory {@code dir} here and a name in it, then lets another client make {@code name}
   * there holding {@code data}: this client knows the directory and says {@code name} is free.
   */
  private static void madeByAnother(String dir, String name, String data) {
    Sh.ok(m, "mkdir " + dir + " && touch " + dir + "/a");
    try (OtherClient other = new OtherClient(fs)) {
      other.create("/" + dir + "/" + name, data.getBytes(StandardCharsets.UTF_8));
    }
  }

  private static String read(String path) {
    try (OtherClient other = new OtherClient(fs)) {
      return new String(other.read(path), StandardCharsets.UTF_8);
    }
  }

  @Test
  void aNameAnotherClientMade_isOpenedOrRefused_neverMadeAgain() {
    // O_CREAT without O_EXCL: the kernel asks to create (this client said the name was free);
    // FlowFS opens the file that is there, as the kernel would have
    madeByAnother("k3a", "log", "one\n");
    long existed = fs.counter("meta.create.existed");
    Sh.ok(m, "echo two >> k3a/log");
    assertEquals(1, fs.counter("meta.create.existed") - existed);
    assertEquals("one\ntwo\n", read("/k3a/log"));
    madeByAnother("k3b", "out", "old contents\n");
    Sh.ok(m, "echo new > k3b/out"); // O_TRUNC
    assertEquals(2, fs.counter("meta.create.existed") - existed);
    assertEquals("new\n", read("/k3b/out"));
    // O_EXCL and mkdir fail on a name that is there, and change nothing
    madeByAnother("k3c", "excl", "kept\n");
    assertTrue(Sh.fails(m, "python3 -c \"import os; os.open('k3c/excl', os.O_CREAT | os.O_EXCL | os.O_WRONLY)\"")
        .contains("FileExistsError"));
    assertEquals("kept\n", read("/k3c/excl"));
    madeByAnother("k3d", "dir", "");
    assertTrue(Sh.fails(m, "mkdir k3d/dir").contains("exists"));
    Sh.ok(m, "test -f k3d/dir");
    assertEquals(2, fs.counter("meta.create.existed") - existed);
  }

  @Test
  void theOpenOfAFileAnotherClientMade_checksPermissions() {
    String user = "setpriv --reuid 12001 --regid 12001 --clear-groups ";
    Sh.ok(m, "mkdir k4 && chmod 777 k4 && " + user + "mkdir k4/u && " + user + "touch k4/u/mine");
    try (OtherClient other = new OtherClient(fs)) {
      other.create("/k4/u/roots", "root's\n".getBytes(StandardCharsets.UTF_8)); // 0644, owned by root
      long existed = fs.counter("meta.create.existed");
      String err = Sh.fails(m, user + "sh -c 'echo x >> k4/u/roots'");
      assertTrue(err.contains("Permission denied"), err);
      assertEquals(1, fs.counter("meta.create.existed") - existed);
      assertEquals("root's\n", new String(other.read("/k4/u/roots"), StandardCharsets.UTF_8));
      Sh.ok(m, user + "sh -c 'cat k4/u/roots'"); // reading is allowed
    }
  }
}
