package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Hard links through the mount: link counts, the data kept until the last name goes, and the
 * ctime that link, unlink and rename move.
 *
 * <p>This suite mounts with {@code client.attr-timeout = 0s}, the strict setting. libfuse 2's
 * high-level API gives every name of a file its own kernel inode; with the default (1 s) the mount
 * keeps the names it knows in step ({@code PosixAttributesTest} checks that), and a name only
 * looked up can show what its lookup cached for up to that long (README, "Mount options").
 */
class PosixLinksTest extends PosixSuite {
  @Override
  String extraConfig() {
    return "client.attr-timeout = 0s\n";
  }

  @Test
  void link_countsEveryName_andTheDataOutlivesAllButTheLast() throws Exception {
    posix("links", """
        echo one > a
        probe link a b >/dev/null; probe link a c >/dev/null
        stat -c '%n %h' a b c
        probe unlink a >/dev/null
        stat -c '%n %h' b c
        mkdir sub; probe link c sub/d >/dev/null
        probe unlink b >/dev/null
        stat -c '%n %h' c sub/d
        echo two >> sub/d
        cat c
        probe unlink c >/dev/null
        stat -c '%n %h' sub/d
        cat sub/d
        t probe link sub nodir
        t probe link missing x
        t probe link sub/d sub/d
        t probe link sub/d nowhere/d
        """, """
        a 3
        b 3
        c 3
        b 2
        c 2
        c 2
        sub/d 2
        one
        two
        sub/d 1
        one
        two
        probe link sub nodir: EPERM
        probe link missing x: ENOENT
        probe link sub/d sub/d: EEXIST
        probe link sub/d nowhere/d: ENOENT
        """);
  }

  @Test
  void unlink_ofTheLastName_freesTheData() throws Exception {
    Path d = onMount("free");
    sh(d, "head -c 3000000 /dev/urandom > f; ln f g; rm f");
    // the file's own datafiles, from its layout: the storage directories as a whole also change
    // as the reaper removes what earlier tests unlinked
    List<Path> datafiles = FsckTest.datafilesOf(d, "g").stream().map(h -> FsckTest.datafilePath(fs, h)).toList();
    assertEquals(3000000, storedBytes(datafiles), "the data is stored while a name is left");
    assertEquals(3000000, Files.size(d.resolve("g")));
    sh(d, "rm g");
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (datafiles.stream().anyMatch(Files::exists) && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertEquals(List.of(), datafiles.stream().filter(Files::exists).toList(),
        "the I/O servers still hold the datafiles of a file with no name");
  }

  private static long storedBytes(List<Path> datafiles) throws Exception {
    long sum = 0;
    for (Path p : datafiles) {
      sum += Files.size(p);
    }
    return sum;
  }

  /**
   * Another client renames a new file over one this mount has looked up: the mount's name cache
   * still leads to the replaced file, which is gone, and the client looks the name up again.
   */
  @Test
  void rename_byAnotherClient_theNewFileIsFoundAtOnce() throws Exception {
    Path d = onMount("otherclient");
    assertEquals("4\nold\n", sh(d, "echo old > target; stat -c %s target; cat target"));
    try (OtherClient other = new OtherClient(fs)) {
      other.create("/otherclient/new", "replacement\n".getBytes(StandardCharsets.US_ASCII));
      other.rename("/otherclient/new", "/otherclient/target");
    }
    assertEquals("12\nreplacement\n", sh(d, "stat -c %s target; cat target"));
  }

  @Test
  void times_linkUnlinkAndRenameMoveTheCtime() throws Exception {
    posix("ctime", """
        echo x > f; mkdir d
        moved f f probe link f g
        moved g g probe unlink f
        moved g h probe rename g h
        moved d d probe link h d/h
        moved d d probe rename d/h d/h2
        moved d d probe unlink d/h2
        moved h h cat h
        """, """
        probe link f g: mtime kept ctime moved
        probe unlink f: mtime kept ctime moved
        probe rename g h: mtime kept ctime moved
        probe link h d/h: mtime moved ctime moved
        probe rename d/h d/h2: mtime moved ctime moved
        probe unlink d/h2: mtime moved ctime moved
        cat h: mtime kept ctime kept
        """);
  }
}
