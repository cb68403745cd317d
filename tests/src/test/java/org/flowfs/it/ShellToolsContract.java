package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.flowfs.common.Handle;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Ordinary shell tools on a mounted FlowFS round-trip data byte for byte. Run against every shape
 * of deployment (subclasses); each test works in a directory of its own on the shared mount.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class ShellToolsContract {
  static final long GIB = 1L << 30;

  Path tmp;
  Deployment fs;
  Path mnt;

  abstract Deployment deploy(Path root) throws Exception;

  /** The tree under /usr that the tar test copies, diffs, walks and removes: all of include. */
  String tree() {
    return "include";
  }

  @BeforeAll
  void up(@TempDir Path dir) throws Exception {
    tmp = dir;
    fs = deploy(tmp.resolve("fs"));
    mnt = fs.mountPoint();
  }

  @AfterAll
  void down() {
    if (fs != null) {
      fs.close();
    }
  }

  /** A fresh directory on the mount for one test. */
  Path dir(String name) throws Exception {
    Path d = mnt.resolve(name);
    Files.createDirectories(d);
    return d;
  }

  @Test
  void mkdirP_createsEveryLevel() throws Exception {
    Path d = dir("mkdir");
    Sh.ok(d, "mkdir -p a/b/c && test -d a/b/c");
    assertEquals("c\n", Sh.ok(d, "ls a/b"));
    Sh.ok(d, "mkdir -p a/b/c"); // -p of existing levels is fine
  }

  @Test
  void cpAndCat_smallAndLargeFiles_roundTrip() throws Exception {
    Path d = dir("cp");
    Sh.ok(d, "printf 'hello, flowfs\\n' > small && test \"$(cat small)\" = 'hello, flowfs'");
    Sh.ok(d, "cp /etc/services services && cmp /etc/services services");
    Path src = tmp.resolve("large.bin");
    Sh.ok(tmp, "head -c 50000123 /dev/urandom > large.bin");
    Sh.ok(d, "cp '" + src + "' large && cmp '" + src + "' large");
    Sh.ok(d, "cat large > large.copy && cmp large large.copy");
    String sums = Sh.ok(d, "sha256sum large large.copy '" + src + "' | awk '{print $1}' | uniq | wc -l");
    assertEquals("1", sums.strip(), "sha256sum of the copies differ");
  }

  @Test
  void dd_oneGibibyte_roundTrips_andIsStripedOverEveryServer() throws Exception {
    Path d = dir("dd");
    Path src = tmp.resolve("src.bin");
    Sh.ok(tmp, "head -c 1G /dev/urandom > src.bin");
    Sh.ok(d, "dd if='" + src + "' of=big bs=1M count=1024 conv=fsync status=none");
    assertEquals(String.valueOf(GIB), Sh.ok(d, "stat -c %s big").strip());
    Sh.ok(d, "dd if=big of=back bs=1M status=none && cmp big '" + src + "' && cmp back '" + src + "'");
    Sh.ok(d, "rm back");
    // 64 KiB strips over every server: the datafile of big on each holds a quarter (or 1/N) of it.
    // Its own datafiles, from its layout: the storage directories as a whole also hold what the
    // reaper has not removed yet of files unlinked a moment ago (back), which it does later.
    List<Handle> datafiles = FsckTest.datafilesOf(d, "big");
    assertEquals(fs.ioServers(), datafiles.stream().mapToInt(Handle::ioServer).distinct().count(),
        "big's datafiles " + datafiles + " are not on every one of " + fs.ioServers() + " I/O servers");
    long share = GIB / fs.ioServers();
    for (Handle h : datafiles) {
      long holds = Files.size(FsckTest.datafilePath(fs, h));
      assertTrue(Math.abs(holds - share) < share / 20,
          "I/O server " + h.ioServer() + " holds " + holds + " bytes of a 1 GiB file, expected about " + share);
    }
    Files.delete(src);
  }

  @Test
  void lsAndStat_showWhatWasWritten() throws Exception {
    Path d = dir("ls");
    Sh.ok(d, "head -c 12345 /dev/urandom > f && mkdir sub");
    String ls = Sh.ok(d, "ls -l");
    assertTrue(ls.contains("12345") && ls.contains(" f\n") && ls.startsWith("total"), ls);
    assertEquals("12345 regular file 1", Sh.ok(d, "stat -c '%s %F %h' f").strip());
    assertEquals("directory 2", Sh.ok(d, "stat -c '%F %h' sub").strip());
    assertEquals("3", Sh.ok(d, "stat -c %h .").strip()); // ., .. in sub, and its own entry
  }

  @Test
  void mv_withinAcrossAndOverAnExistingFile() throws Exception {
    Path d = dir("mv");
    Sh.ok(d, "mkdir x y && echo one > x/a && echo two > x/b");
    Sh.ok(d, "mv x/a x/a2 && test ! -e x/a && test \"$(cat x/a2)\" = one");
    Sh.ok(d, "mv x/a2 y/ && test \"$(cat y/a2)\" = one");
    Sh.ok(d, "mv x/b y/a2 && test \"$(cat y/a2)\" = two && test ! -e x/b");
    Sh.ok(d, "mv y z && test \"$(cat z/a2)\" = two && test ! -e y");
    assertEquals("a2\n", Sh.ok(d, "ls z"));
  }

  @Test
  void rmAndRmRf_ofADeepTree() throws Exception {
    Path d = dir("rm");
    Sh.ok(d, "echo x > f && rm f && test ! -e f");
    Sh.ok(d, "p=deep; for i in $(seq 1 40); do p=$p/d$i; done; mkdir -p $p; "
        + "q=deep; for i in $(seq 1 40); do q=$q/d$i; echo $i > $q/file; ln -s file $q/link; done");
    assertEquals("121", Sh.ok(d, "find deep | wc -l").strip()); // deep, 40 dirs, 40 files, 40 links
    Sh.ok(d, "rm -rf deep && test ! -e deep");
    assertEquals("", Sh.ok(d, "ls -A"));
  }

  @Test
  void symlink_readlink() throws Exception {
    Path d = dir("ln");
    Sh.ok(d, "echo target > t && ln -s t l && ln -s /nowhere/at/all dangling");
    assertEquals("t\n", Sh.ok(d, "readlink l"));
    assertEquals("target\n", Sh.ok(d, "cat l"));
    assertEquals("/nowhere/at/all\n", Sh.ok(d, "readlink dangling"));
    Sh.ok(d, "test -L l && test -L dangling && test ! -e dangling");
  }

  @Test
  void chmod_and_touchD_setModeAndTimes() throws Exception {
    Path d = dir("attrs");
    Sh.ok(d, "echo x > f && chmod 640 f");
    assertEquals("640", Sh.ok(d, "stat -c %a f").strip());
    Sh.ok(d, "chmod u+x,o+r f");
    assertEquals("744", Sh.ok(d, "stat -c %a f").strip());
    Sh.ok(d, "touch -d '2001-02-03 04:05:06.123456789 UTC' f");
    assertEquals("981173106.123456789", Sh.ok(d, "stat -c %.9Y f").strip());
    Sh.ok(d, "touch -a -d '1999-12-31 23:59:59 UTC' f");
    assertEquals("946684799 981173106", Sh.ok(d, "stat -c '%X %Y' f").strip());
  }

  @Test
  void truncate_growsWithZerosAndShrinks() throws Exception {
    Path d = dir("trunc");
    Sh.ok(d, "printf 'abcdef' > f && truncate -s 200000 f");
    assertEquals("200000", Sh.ok(d, "stat -c %s f").strip());
    assertEquals("abcdef", Sh.ok(d, "head -c 6 f"));
    assertEquals("199994", Sh.ok(d, "tail -c +7 f | tr -d '\\0' | wc -c | xargs expr 199994 -").strip());
    Sh.ok(d, "truncate -s 3 f");
    assertEquals("abc", Sh.ok(d, "cat f"));
    Sh.ok(d, "truncate -s 0 f && test ! -s f");
  }

  @Test
  void fallocate_reservesGrowsAndPunches() throws Exception {
    Path d = dir("fallocate");
    Sh.ok(d, "head -c 300000 /dev/urandom > f && cp f orig && fallocate -l 8M f && fallocate -x -l 9M g");
    assertEquals("8388608 9437184", Sh.ok(d, "stat -c %s f g | xargs").strip());
    Sh.ok(d, "cmp -n 300000 f orig && tail -c +300001 f | cmp -s - <(head -c 8088608 /dev/zero) && cmp g /dev/zero 2>&1 | grep -q EOF");
    Sh.ok(d, "fallocate -p -o 70000 -l 100000 f");
    assertEquals("8388608", Sh.ok(d, "stat -c %s f").strip());
    Sh.ok(d, "cmp -n 70000 f orig && cmp -i 170000 -n 130000 f orig && head -c 170000 f | tail -c 100000 | cmp -s - <(head -c 100000 /dev/zero)");
  }

  @Test
  void acls_letAnotherUserIn_andANewFileTakesItsDirectorysDefault() throws Exception {
    assumeTrue("root".equals(System.getProperty("user.name")), "runs commands as another user: needs root");
    for (Path p = mnt; p.startsWith(tmp); p = p.getParent()) {
      Files.setPosixFilePermissions(p, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
    }
    Path d = dir("acl");
    String bob = "setpriv --reuid=12003 --regid=12003 --clear-groups ";
    String eve = "setpriv --reuid=12004 --regid=12004 --clear-groups ";
    Sh.ok(d, "echo secret > f && chmod 600 f && setfacl -m u:12003:r f");
    assertEquals("-rw-r-----+", Sh.ok(d, "ls -l f | cut -c1-11").strip());
    assertEquals("secret", Sh.ok(d, bob + "cat f").strip());
    assertEquals("denied", Sh.ok(d, eve + "cat f 2>/dev/null || echo denied").strip());
    Sh.ok(d, "mkdir s && setfacl -d -m u:12003:rwx s && (umask 077; echo x > s/new; mkdir s/sub)");
    assertEquals("user:12003:rwx #effective:rw-", Sh.ok(d, "getfacl -cp s/new | grep '^user:12003' | tr '\\t' ' '").strip());
    assertEquals("-rw-rw-r--+ drwxrwxr-x+", Sh.ok(d, "ls -ld s/new s/sub | cut -c1-11 | xargs").strip()); // not the umask
    Sh.ok(d, bob + "sh -c 'echo y >> s/new'");
  }

  @Test
  void append_withShellRedirection() throws Exception {
    Path d = dir("append");
    Sh.ok(d, "for i in $(seq 1 200); do echo line $i >> log; done");
    assertEquals("200", Sh.ok(d, "wc -l < log").strip());
    assertEquals("line 200", Sh.ok(d, "tail -1 log").strip());
    Sh.ok(d, "head -c 300000 /dev/urandom > blob && cp blob ref && cat ref >> blob && cat ref ref | cmp - blob");
  }

  @Test
  void tar_ofUsrInclude_thenDiffFindDu() throws Exception {
    Path d = dir("tar");
    Path usr = Path.of("/usr");
    String t = tree();
    Sh.ok(d, "tar -C /usr -cf - " + t + " | tar -xf -");
    Sh.ok(d, "diff -r /usr/" + t + " " + t);
    assertEquals(Sh.ok(usr, "find " + t + " | sort"), Sh.ok(d, "find " + t + " | sort"));
    assertEquals(Sh.ok(usr, "find " + t + " -type l | wc -l"), Sh.ok(d, "find " + t + " -type l | wc -l"));
    long du = Long.parseLong(Sh.ok(d, "du -s --apparent-size --block-size=1 " + t + " | cut -f1").strip());
    long ref = Long.parseLong(Sh.ok(usr, "du -s --apparent-size --block-size=1 " + t + " | cut -f1").strip());
    assertTrue(Math.abs(du - ref) < ref / 10, "du " + du + " vs " + ref);
    Sh.ok(d, "rm -rf include && test ! -e include");
  }

  @Test
  void df_reportsTheDiskUnderTheServersOnce() throws Exception {
    long total = Long.parseLong(Sh.ok(mnt, "df -B1 --output=size . | tail -1").strip());
    long disk = Long.parseLong(Sh.ok(fs.ioDir(0), "df -B1 --output=size . | tail -1").strip());
    // every server of this deployment sits on the same disk: the total is that disk, not N times it
    assertEquals(disk, total, "df shows " + total + " for " + fs.ioServers() + " I/O servers on one disk of " + disk);
    assertTrue(Sh.ok(mnt, "df -T . | tail -1").contains("fuse.flowfs"));
  }
}
