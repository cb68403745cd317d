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
 * A directory walked name by name through the mount (here: {@code stat} of 300 files by name,
 * after every cache expired) is listed whole once it turned hot, so the walk costs a few pages
 * rather than a lookup per name; creating files, whose lookups find nothing, lists nothing. A walk
 * of a tree ({@code find}, {@code ls -R}) reads the listings of the directories it opens next from
 * answers the client asked for ahead, and what it lists is what is there: this client's own
 * changes since show at once, another client's within the entry timeout.
 */
class StatAheadTest {
  static EmbeddedDeployment fs;
  static Path m;

  @BeforeAll
  static void up(@TempDir Path tmp) throws Exception {
    fs = new EmbeddedDeployment(tmp, 2);
    m = fs.mountPoint();
  }

  @AfterAll
  static void down() {
    if (fs != null) {
      fs.close();
    }
  }

  @Test
  void statOfManyNames_listsTheDirectoryInsteadOfLookingEachUp() throws Exception {
    long listingsBefore = fs.counter("meta.statahead");
    Sh.ok(m, "mkdir walk && cd walk && for i in $(seq 0 299); do head -c $i /dev/zero > f$i; done");
    assertEquals(listingsBefore, fs.counter("meta.statahead"), "creating files listed their directory");

    Thread.sleep(1500); // past the entry and attribute timeouts: kernel and client must ask again
    long lookups = fs.counter("meta.lookup");
    long listings = fs.counter("meta.statahead");
    String sizes = Sh.ok(m.resolve("walk"), "seq -f 'f%g' 0 299 | xargs stat -c '%n %s'");
    long lookedUp = fs.counter("meta.lookup") - lookups;
    long listed = fs.counter("meta.statahead") - listings;

    String[] lines = sizes.strip().split("\n");
    assertEquals(300, lines.length, sizes);
    for (int i = 0; i < 300; i++) {
      assertEquals("f" + i + " " + i, lines[i], "size of f" + i);
    }
    assertTrue(listed >= 1, "the directory was never listed");
    assertTrue(lookedUp < 60, lookedUp + " lookups for 300 names: the listing did not serve them");
  }

  @Test
  void lsDashL_asksTheServerForNoExtendedAttributes() throws Exception {
    Sh.ok(m, "mkdir plain && cd plain && for i in $(seq 1 200); do : > f$i; done && setfattr -n user.k -v 1 f7");
    Thread.sleep(1500); // past the timeouts
    long getxattrs = fs.cluster().meta().counters().get("op.GetxattrReq");
    String out = Sh.ok(m.resolve("plain"), "ls -l | wc -l; getfattr --only-values -n user.k f7");
    long asked = fs.cluster().meta().counters().get("op.GetxattrReq") - getxattrs;
    assertEquals("201\n1", out.strip());
    // ls -l asks two attributes of every file; the listing said which files have none
    assertTrue(asked < 20, asked + " getxattr calls for ls -l of 200 files");
  }

  /**
   * The kernel's questions for attributes a file is known not to have are answered on the loop's
   * threads, without libfuse (AbsentXattrs), once a request on the node named its file; what this
   * client changes shows at once, and the virtual attributes still answer.
   */
  @Test
  void lsDashL_absentAttributesAnsweredFromTheNode_changesShowAtOnce() throws Exception {
    Sh.ok(m, "mkdir known && cd known && for i in $(seq 1 200); do : > f$i; done && setfattr -n user.k -v 1 f7");
    long known = fs.counter("fuse.getxattr.absent-known");
    String out = Sh.ok(m.resolve("known"), "ls -l > /dev/null; ls -l | wc -l; getfattr --only-values -n user.k f7");
    assertEquals("201\n1", out.strip());
    // two attributes asked of every file by each listing; all but the first of a node answered so
    long answered = fs.counter("fuse.getxattr.absent-known") - known;
    assertTrue(answered >= 400, answered + " of 800 getxattrs answered from known nodes");

    // f8 was known to have none: this client's set and remove show at once, through the same node
    assertEquals("2", Sh.ok(m.resolve("known"), "setfattr -n user.k -v 2 f8 && getfattr --only-values -n user.k f8").strip());
    Sh.ok(m.resolve("known"), "setfattr -x user.k f8");
    assertTrue(Sh.fails(m.resolve("known"), "getfattr -n user.k f8").contains("No such attribute"));
    assertTrue(Sh.ok(m.resolve("known"), "getfattr --only-values -n flowfs.layout f9").contains("\"handle\""),
        "the virtual attribute of a known node");
  }

  @Test
  void listingOfMoreEntriesThanAPage_namesEveryEntryOnceWithItsSize() throws Exception {
    // 1,500 entries: two of the client's pages, each read by the server in a part on its event
    // loop and the rest on its reader pool
    Sh.ok(m, "mkdir big && cd big && for i in $(seq 1000 2499); do head -c $((i % 7)) /dev/zero > f$i; done");
    Thread.sleep(1500); // past the timeouts: the listing and the sizes come from the server
    String out = Sh.ok(m.resolve("big"), "find . -mindepth 1 -maxdepth 1 -printf '%f %s\\n'");
    String[] lines = out.strip().split("\n");
    assertEquals(1500, lines.length, "entries listed");
    for (int k = 0; k < 1500; k++) {
      int i = 1000 + k; // names of equal length: byte order is number order
      assertEquals("f" + i + " " + (i % 7), lines[k], "entry " + k + " of the listing");
    }
  }

  @Test
  void findOfATree_listsWhatALocalCopyLists_fromListingsAskedForAhead(@TempDir Path local) throws Exception {
    Sh.ok(local, "mkdir src && cd src && for a in $(seq 1 12); do for b in $(seq 1 6); do mkdir -p d$a/e$b/f;"
        + " echo $a$b > d$a/e$b/x; : > d$a/e$b/f/y; done; ln -s e1 d$a/link; done");
    Sh.ok(m, "cp -a " + local.resolve("src") + " t1");
    Thread.sleep(1500); // past the entry and attribute timeouts: every listing comes from the server
    long used = fs.counter("readdir-ahead.used");
    String walked = Sh.ok(m.resolve("t1"), "find . -printf '%p %y %s\\n' | LC_ALL=C sort");
    assertEquals(Sh.ok(local.resolve("src"), "find . -printf '%p %y %s\\n' | LC_ALL=C sort"), walked);
    // 157 directories: all but the first few of the walk read from answers asked for ahead
    long fromAhead = fs.counter("readdir-ahead.used") - used;
    assertTrue(fromAhead >= 100, fromAhead + " of 157 listings asked for ahead");
  }

  @Test
  void thisClientsOwnChangesAfterTheAsk_showInTheListing() throws Exception {
    try (OtherClient other = new OtherClient(fs)) {
      other.mkdir("/t2"); // made by another client: no lease of this mount's on them
      for (String d : new String[] {"a", "b", "c", "d"}) {
        other.mkdir("/t2/" + d);
        other.create("/t2/" + d + "/old", "x".getBytes(StandardCharsets.UTF_8));
      }
    }
    Thread.sleep(1500);
    long dropped = fs.counter("readdir-ahead.dropped");
    long sent = fs.counter("readdir-ahead.sent");
    // ls of a opens a, a walk's step: b and c are asked for ahead; then this client changes both
    String out = Sh.ok(m.resolve("t2"), "ls > /dev/null; ls a > /dev/null; rm b/old; touch c/new; echo $(ls b) / $(ls c)");
    assertTrue(fs.counter("readdir-ahead.sent") - sent >= 2, "b and c were not asked for ahead");
    assertEquals("/ new old", out.strip());
    assertTrue(fs.counter("readdir-ahead.dropped") - dropped >= 2, "the pages asked for before the changes were read");
  }

  @Test
  void anotherClientsChange_showsWithinTheEntryTimeout() throws Exception {
    Sh.ok(m, "mkdir -p t3/a t3/b t3/c");
    Thread.sleep(1500);
    long sent = fs.counter("readdir-ahead.sent");
    Sh.ok(m.resolve("t3"), "ls > /dev/null; ls a > /dev/null");
    assertTrue(fs.counter("readdir-ahead.sent") - sent >= 2, "b and c were not asked for ahead");
    try (OtherClient other = new OtherClient(fs)) {
      other.create("/t3/b/new", new byte[] {1});
    }
    Thread.sleep(1100); // the entry timeout (1 s) since the ask
    assertEquals("new", Sh.ok(m.resolve("t3"), "ls b").strip());
  }
}
