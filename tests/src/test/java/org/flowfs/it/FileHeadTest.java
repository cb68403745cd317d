package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A file's head (its first {@code layout.head-bytes}, 64 KiB by default, kept on the metadata
 * server) through the mount: a small file never reaches an I/O server, a larger one's datafiles
 * hold only what lies past the head, and writes, reads and truncates across the boundary behave
 * as on the local disk.
 */
class FileHeadTest extends PosixSuite {
  private static final int HEAD = 64 * 1024;

  @Test
  void smallFile_livesInItsHead_andNoDatafileIsCreated() throws Exception {
    Path d = onMount("small");
    sh(d, "head -c 5000 /dev/urandom > " + local.resolve("small.ref") + "; cp " + local.resolve("small.ref") + " f");
    assertTrue(sh(d, "getfattr --only-values -n flowfs.layout f").contains("\"head_bytes\":" + HEAD));
    sh(d, "cmp f " + local.resolve("small.ref"));
    for (Path p : datafiles(d, "f")) {
      assertFalse(Files.exists(p), "a 5,000-byte file has no datafile on disk: " + p);
    }
    sh(d, "sync; echo 3 > /proc/sys/vm/drop_caches; cmp f " + local.resolve("small.ref"));
  }

  @Test
  void smallFile_writeCloseAndColdRead_talkToNoIoServer() throws Exception {
    try (OtherClient other = new OtherClient(fs)) {
      other.mkdir("/paths"); // its names are not known here: a lone create is a call of its own, not a lease's
    }
    Path d = mnt.resolve("paths");
    long flushes = fs.counter("path.head.flushes");
    long writes = fs.counter("path.head.writes");
    long records = fs.counter("meta-us.SetattrReq");
    long opens = fs.counter("meta.open");
    long fromHead = fs.counter("read.first.head");
    long io = ioOps();
    sh(d, "head -c 10240 /dev/urandom > f; sync; echo 3 > /proc/sys/vm/drop_caches; cat f > /dev/null");
    assertEquals(1, fs.counter("path.head.flushes") - flushes, "the close sent the 10 KiB and the size in one call");
    assertEquals(writes, fs.counter("path.head.writes"), "no head write of its own");
    assertEquals(records, fs.counter("meta-us.SetattrReq"), "no size record of its own");
    assertEquals(1, fs.counter("meta.open") - opens, "the cold read's open: one call");
    assertEquals(1, fs.counter("read.first.head") - fromHead, "which brought the bytes with the attributes");
    assertEquals(io, ioOps(), "no I/O server moved any of its bytes");
  }

  /**
   * The read-only open of a small file is one call that brings its attributes and its bytes
   * (close-to-open: another client's write shows), with no head read of its own; a size past
   * what its head holds reads as zeros.
   */
  @Test
  void smallFile_readOnlyOpen_isOneCall_andSeesAnotherClientsWrite() throws Exception {
    Path d = onMount("open");
    sh(d, "printf abc > f; cat f > /dev/null");
    long opens = fs.counter("meta.open");
    long fromHead = fs.counter("read.first.head");
    long reads = fs.counter("path.head.reads");
    try (OtherClient other = new OtherClient(fs)) {
      other.overwrite("/open/f", "written elsewhere".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
    }
    assertEquals("written elsewhere", sh(d, "echo 3 > /proc/sys/vm/drop_caches; cat f"));
    assertEquals(1, fs.counter("meta.open") - opens, "one call to open");
    assertEquals(1, fs.counter("read.first.head") - fromHead, "the bytes came with it");
    assertEquals(reads, fs.counter("path.head.reads"), "no head read of its own");
    Path ref = local.resolve("open.ref");
    sh(d, "truncate -s 9000 f; printf 'written elsewhere' > " + ref + "; truncate -s 9000 " + ref);
    sh(d, "echo 3 > /proc/sys/vm/drop_caches; cmp f " + ref);
  }

  /** Requests the I/O servers served that move or sync file data. */
  private long ioOps() {
    long sum = 0;
    for (int i = 0; i < fs.ioServers(); i++) {
      var c = fs.cluster().io(i).counters();
      for (String op : new String[] {"path.short.ops", "path.eager-write.ops", "path.eager-read.ops", "path.flow.ops"}) {
        sum += c.get(op);
      }
    }
    return sum;
  }

  @Test
  void largerFile_keepsOnlyWhatLiesPastTheHead_inItsDatafiles() throws Exception {
    Path d = onMount("larger");
    sh(d, "head -c 200000 /dev/urandom > " + local.resolve("larger.ref") + "; cp " + local.resolve("larger.ref") + " f");
    List<Path> datafiles = datafiles(d, "f");
    long held = 0;
    for (Path p : datafiles) {
      held += Files.exists(p) ? Files.size(p) - holeBelowHead(p, datafiles.indexOf(p)) : 0;
    }
    assertEquals(200000 - HEAD, held, "the datafiles hold the bytes past the head");
    byte[] first = Files.readAllBytes(datafiles.get(0));
    for (int i = 0; i < HEAD; i++) {
      assertEquals(0, first[i], "the first strip is the head: server 0's datafile has a hole there, byte " + i);
    }
    sh(d, "echo 3 > /proc/sys/vm/drop_caches; cmp f " + local.resolve("larger.ref"));
  }

  /** Writes, truncates and reads around the boundary, run on the local disk and on the mount: same bytes. */
  @Test
  void writesAndTruncatesAcrossTheBoundary_matchTheLocalDisk() throws Exception {
    String script = """
        head -c 300000 /dev/zero | tr '\\0' a > f
        printf 'XYZ' | dd of=f bs=1 seek=65534 conv=notrunc status=none
        printf 'head' | dd of=f bs=1 seek=10 conv=notrunc status=none
        printf 'tail' | dd of=f bs=1 seek=70000 conv=notrunc status=none
        head -c 100000 /dev/zero | tr '\\0' b | dd of=f bs=4096 seek=10 conv=notrunc status=none
        cp f g; truncate -s 1000 g; truncate -s 100000 g
        cp f h; truncate -s 65536 h; printf 'end' >> h
        cp f i; truncate -s 70000 i; truncate -s 40000 i; truncate -s 80000 i
        : > j; printf 'gap' | dd of=j bs=1 seek=50000 status=none
        python3 -c "
        import os
        fd = os.open('k', os.O_CREAT | os.O_RDWR)
        for off in (65530, 1, 65536, 32768, 131072, 65535):
            os.pwrite(fd, b'%d;' % off * 3, off)
        os.close(fd)"
        echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
        md5sum f g h i j k; stat -c '%n %s' f g h i j k
        dd if=f bs=1 skip=65530 count=10 status=none | od -An -c
        """;
    Path ref = onLocal("boundary");
    Path mine = onMount("boundary");
    assertEquals(sh(ref, script), sh(mine, script), "FlowFS differs from the local disk");
  }

  @Test
  void rewritingTheHeadOfABigFile_inPlace_leavesTheRestAlone() throws Exception {
    Path d = onMount("inplace");
    Path ref = local.resolve("inplace.ref");
    sh(d, "head -c 3000000 /dev/urandom > " + ref + "; cp " + ref + " f; "
        + "head -c 100000 /dev/urandom > /tmp/flowfs-head-patch.$$; "
        + "dd if=/tmp/flowfs-head-patch.$$ of=f bs=100000 count=1 conv=notrunc status=none; "
        + "dd if=/tmp/flowfs-head-patch.$$ of=" + ref + " bs=100000 count=1 conv=notrunc status=none; "
        + "rm /tmp/flowfs-head-patch.$$; echo 3 > /proc/sys/vm/drop_caches; cmp f " + ref);
  }

  private List<Path> datafiles(Path d, String name) {
    return FsckTest.datafilesOf(d, name).stream().map(h -> FsckTest.datafilePath(fs, h)).toList();
  }

  /**
   * The bytes below the head's end a datafile's size counts as a hole: with 64 KiB strips (over the
   * suite's two servers), only server 0's first strip lies in the head.
   */
  private static long holeBelowHead(Path datafile, int server) {
    return server == 0 ? HEAD : 0;
  }
}
