package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The mount answers the kernel's READDIRPLUS: a listing of a directory the kernel knows nothing of
 * ({@code drop_caches} made it forget every entry) carries each entry's attributes, so {@code ls
 * -l} sends no LOOKUP per entry, and what it shows is what is there. Listings that span many pages,
 * with names of every length, list each name once, and the nodes they hand the kernel stay
 * usable after the kernel forgot them and was told them again, several times over.
 */
class ReaddirPlusTest {
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

  /** The kernel forgets every name and node it holds that nobody uses. */
  private static void forgetAll() {
    Sh.ok(m, "sync; echo 2 > /proc/sys/vm/drop_caches");
  }

  @Test
  void lsDashL_ofADirectoryTheKernelForgot_sendsNoLookupPerEntry() throws Exception {
    Sh.ok(m, "mkdir plus && cd plus && for i in $(seq 0 299); do head -c $i /dev/zero > f$i; done"
        + " && chmod 600 f7 && mkdir sub && ln -s f1 link");
    forgetAll();
    long lookups = fs.counter("fuse.lookup");
    long pages = fs.counter("fuse.readdirplus");
    String out = Sh.ok(m.resolve("plus"), "ls -ln --time-style=+%s | tail -n +2 | awk '{print $1, $5, $7}'");
    long lookedUp = fs.counter("fuse.lookup") - lookups;

    String[] lines = out.strip().split("\n");
    assertEquals(302, lines.length, out);
    List<String> files = new ArrayList<>();
    for (String line : lines) {
      String[] f = line.split(" ");
      if (f[2].startsWith("f")) {
        int i = Integer.parseInt(f[2].substring(1));
        assertEquals(String.valueOf(i), f[1], "size of " + f[2]);
        assertEquals(i == 7 ? "-rw-------" : "-rw-r--r--", f[0], "mode of " + f[2]);
        files.add(f[2]);
      } else if (f[2].equals("sub")) {
        assertTrue(f[0].startsWith("d"), line);
      } else {
        assertEquals("link", f[2], line);
        assertTrue(f[0].startsWith("l"), line);
      }
    }
    assertEquals(300, files.size(), out);
    assertTrue(fs.counter("fuse.readdirplus") > pages, "no READDIRPLUS answered");
    // without READDIRPLUS the kernel looks up each of the 302 names it forgot
    assertTrue(lookedUp < 10, lookedUp + " lookups for ls -l of 302 entries");
    // and the attributes the listing gave are the kernel's now: a stat of each asks nothing
    lookups = fs.counter("fuse.lookup");
    long getattrs = fs.counter("fuse.getattr");
    Sh.ok(m.resolve("plus"), "stat -c %s f0 f100 f299 > /dev/null");
    assertEquals(lookups, fs.counter("fuse.lookup"), "stat after the listing looked names up");
    assertTrue(fs.counter("fuse.getattr") - getattrs < 3, "stat after the listing asked for attributes");
  }

  @Test
  void listingsOfManyPages_everyNameOnce_nodesUsableAfterTheKernelForgets() throws Exception {
    int n = 1200;
    String[] names = new String[n];
    Path dir = Files.createDirectory(m.resolve("long"));
    for (int i = 0; i < n; i++) {
      String base = "n" + i;
      names[i] = base + "x".repeat(Math.max(0, 1 + i % 255 - base.length())); // every length up to 255
      Files.write(dir.resolve(names[i]), "x".repeat(i % 50).getBytes(StandardCharsets.US_ASCII));
    }
    String[] expected = names.clone();
    Arrays.sort(expected);
    long bytes = 0;
    for (int i = 0; i < n; i++) {
      bytes += i % 50;
    }
    for (int round = 0; round < 3; round++) {
      forgetAll();
      String listed = Sh.ok(m.resolve("long"), "LC_ALL=C ls -f | grep -v '^\\.\\.\\?$' | LC_ALL=C sort");
      assertEquals(Arrays.asList(expected), Arrays.asList(listed.strip().split("\n")), "round " + round);
      String sum = Sh.ok(m.resolve("long"), "ls -l | awk 'NR > 1 { n++; s += $5 } END { print n, s }'");
      assertEquals(n + " " + bytes, sum.strip(), "round " + round);
      // every node the listings handed the kernel still names its file
      String head = Sh.ok(m.resolve("long"), "cat " + names[49] + " " + names[n - 1] + " | wc -c");
      assertEquals(String.valueOf(49 + (n - 1) % 50), head.strip(), "round " + round);
    }
    Sh.ok(m, "rm -rf long");
    assertEquals("", Sh.ok(m, "ls -A | grep '^long$' || true").strip());
  }

  @Test
  void switchedOff_theKernelLooksUpEachEntry(@TempDir Path tmp) throws Exception {
    try (EmbeddedDeployment off = new EmbeddedDeployment(tmp, 1, "client.readdir-plus = false\n")) {
      Path mp = off.mountPoint();
      Sh.ok(mp, "mkdir d && cd d && for i in $(seq 1 50); do : > f$i; done");
      Sh.ok(mp, "sync; echo 2 > /proc/sys/vm/drop_caches");
      long lookups = off.counter("fuse.lookup");
      assertEquals("51", Sh.ok(mp.resolve("d"), "ls -l | wc -l").strip());
      assertTrue(off.counter("fuse.lookup") - lookups >= 50, "the kernel did not look up each entry");
      assertEquals(0, off.counter("fuse.readdirplus"));
    }
  }
}
