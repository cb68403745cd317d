package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A directory walked name by name through the mount (here: {@code stat} of 300 files by name,
 * after every cache expired) is listed whole once it turned hot, so the walk costs a few pages
 * rather than a lookup per name; creating files, whose lookups find nothing, lists nothing.
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
}
