package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Times and extended attributes through the mount: utimensat with nanoseconds, UTIME_NOW and
 * UTIME_OMIT; the times each operation moves (mtime and ctime on write, ctime on chmod, chown,
 * truncate, xattr changes; a directory's on changes of its entries); and user.* extended
 * attributes (set, get, list, remove, their flags and errors).
 *
 * <p>Not covered: atime. FlowFS does not move it on reads (as {@code noatime}); Linux's default
 * ({@code relatime}) does, sometimes.
 */
class PosixAttributesTest extends PosixSuite {
  @Test
  void utimensat_setsNanoseconds_nowAndOmit() throws Exception {
    posix("utimens", """
        echo x > f
        probe utimens f 1000.123456789 2000.987654321 >/dev/null; stat -c '%.9X %.9Y' f
        probe utimens f omit 3000.000000005 >/dev/null; stat -c '%.9X %.9Y' f
        probe utimens f 4000.5 omit >/dev/null; stat -c '%.9X %.9Y' f
        probe utimens f omit omit >/dev/null; stat -c '%.9X %.9Y' f
        probe futimens f 5000.000000001 6000.999999999 >/dev/null; stat -c '%.9X %.9Y' f
        # "now" of a file time is the kernel's coarse clock, which may still show the second before date's
        before=$(( $(date +%s) - 1 )); probe utimens f now omit >/dev/null; after=$(date +%s)
        a=$(stat -c %X f); [ $a -ge $before ] && [ $a -le $after ] && echo "atime now, $(stat -c %.9Y f)"
        probe utimens f omit now >/dev/null; after=$(date +%s)
        m=$(stat -c %Y f); [ $m -ge $before ] && [ $m -le $after ] && echo "mtime now"
        probe utimens f -86400.25 -1.75 >/dev/null; stat -c '%.9X %.9Y' f; stat -c '%x' f
        ln -s f link
        probe utimens link 7.0 8.0 nofollow >/dev/null; stat -c '%X %Y' link f
        t probe utimens f 1.1000000000 omit
        """, """
        1000.123456789 2000.987654321
        1000.123456789 3000.000000005
        4000.000000005 3000.000000005
        4000.000000005 3000.000000005
        5000.000000001 6000.999999999
        atime now, 6000.999999999
        mtime now
        -86399.999999975 -0.999999925
        1969-12-31 00:00:00.000000025 +0000
        7 8
        -86400 -1
        probe utimens f 1.1000000000 omit: EINVAL
        """);
  }

  /** Times are nanoseconds in a signed 64-bit number: past 2262 they are clamped, not wrapped. */
  @Test
  void utimensat_beyondTheRange_isClamped() throws Exception {
    Path d = onMount("far");
    assertEquals("9223372036\n", sh(d, "touch f; touch -d '2300-01-01 UTC' f; stat -c %Y f"));
  }

  @Test
  void write_movesMtimeAndCtime_readMovesNeither() throws Exception {
    posix("write", """
        echo x > f
        moved f f probe write f wronly,append y
        moved f f probe pwrite f 0 z
        moved f f cat f
        moved f f probe open f rdwr
        exec 3>> f
        echo more >&3
        open=$(stat -c %.9Y f)
        exec 3>&-
        [ "$open" = "$(stat -c %.9Y f)" ] && echo "mtime while open = mtime after close"
        sleep 0.02; b=$(stat -c %.9Y f); exec 3>> f; echo w >&3; sleep 0.02; exec 3>&-
        [[ $(stat -c %.9Y f) > $b ]] && echo "mtime of the write, not of the close"
        """, """
        probe write f wronly,append y: mtime moved ctime moved
        probe pwrite f 0 z: mtime moved ctime moved
        cat f: mtime kept ctime kept
        probe open f rdwr: mtime kept ctime kept
        mtime while open = mtime after close
        mtime of the write, not of the close
        """);
  }

  /**
   * Setting the times of a file whose writes this client still buffers (as tar does before it
   * closes each file) records the writes and the times together: the size of the writes, the
   * times given, and for a time not given the time of the writes. In-process: a forked shell
   * closes the descriptors it inherits, and each close flushes the writes before.
   */
  @Test
  void utimens_onAFileWithBufferedWrites_keepsTheWritesAndSetsTheTimes() throws Exception {
    Path d = onMount("timesbuffered");
    Path f = d.resolve("f");
    Path g = d.resolve("g");
    long merged = fs.client().counters().get("utimens.with-writes");
    Files.createFile(f); // made and closed: the opens below do not make them (see DeferredAttrsTest for those)
    Files.createFile(g);
    try (FileChannel a = FileChannel.open(f, StandardOpenOption.WRITE);
        FileChannel b = FileChannel.open(g, StandardOpenOption.WRITE)) {
      a.write(ByteBuffer.wrap(new byte[5000]));
      b.write(ByteBuffer.wrap(new byte[7000]));
      long written = System.currentTimeMillis();
      Files.getFileAttributeView(f, BasicFileAttributeView.class)
          .setTimes(FileTime.from(2_000_250, TimeUnit.MILLISECONDS), FileTime.from(1_000_500, TimeUnit.MILLISECONDS), null);
      Files.getFileAttributeView(g, BasicFileAttributeView.class)
          .setTimes(null, FileTime.from(3000, TimeUnit.SECONDS), null); // the mtime stays the writes'
      assertEquals(merged + 2, fs.client().counters().get("utimens.with-writes"), "writes and times in one change");
      BasicFileAttributes fa = Files.readAttributes(f, BasicFileAttributes.class);
      assertEquals(5000, fa.size());
      assertEquals(2_000_250, fa.lastModifiedTime().toMillis());
      assertEquals(1_000_500, fa.lastAccessTime().toMillis());
      BasicFileAttributes ga = Files.readAttributes(g, BasicFileAttributes.class);
      assertEquals(7000, ga.size());
      assertTrue(Math.abs(ga.lastModifiedTime().toMillis() - written) < 60_000, "g's mtime is its writes'");
      assertEquals(3000, ga.lastAccessTime().to(TimeUnit.SECONDS));
    }
    assertEquals("5000 1000.500000000 2000.250000000\n", sh(d, "stat -c '%s %.9X %.9Y' f"), "after close");
    assertEquals("7000 3000\n", sh(d, "stat -c '%s %X' g"));
    try (OtherClient other = new OtherClient(fs)) {
      assertEquals(5000, other.size("/timesbuffered/f"), "the size reached the metadata server");
      assertEquals(7000, other.size("/timesbuffered/g"));
    }
  }

  /**
   * A chown of a set-ID file clears the bits in its own setattr (one round trip): the kernel's
   * request to clear them, which comes with every chown of a file, is not acted on a second time
   * by the getattr libfuse answers the chown with. tar does a chown of every file it extracts.
   */
  @Test
  void chown_clearsSetIdBits_inOneSetattr() throws Exception {
    assumeRoot(); // chown
    Path d = onMount("chownonce");
    sh(d, "echo x > f; chmod 6755 f");
    long before = fs.counter("meta.setattr");
    assertEquals("755 12001\n", sh(d, "chown 12001 f; stat -c '%a %u' f"));
    assertEquals(1, fs.counter("meta.setattr") - before, "setattrs sent for one chown");
  }

  /** A chown to -1 -1 changes nothing: Linux moves the ctime, FlowFS not (POSIX: "need not"). */
  @Test
  void attributeChanges_moveTheCtimeOnly() throws Exception {
    assumeRoot(); // chown
    posix("ctime", """
        echo data > f
        moved f f probe chmod f 600
        moved f f probe chown f 12001 -1
        moved f f probe setx f user.a 1
        moved f f probe setx f user.a 2 replace
        moved f f probe rmx f user.a
        moved f f probe utimens f 5.0 omit
        moved f f probe truncate f 2
        moved f f probe truncate f 2
        moved f f probe ftruncate f 1
        moved f f probe open f wronly,trunc
        moved f f probe getx f user.none
        moved f f probe access f rw
        """, """
        probe chmod f 600: mtime kept ctime moved
        probe chown f 12001 -1: mtime kept ctime moved
        probe setx f user.a 1: mtime kept ctime moved
        probe setx f user.a 2 replace: mtime kept ctime moved
        probe rmx f user.a: mtime kept ctime moved
        probe utimens f 5.0 omit: mtime kept ctime moved
        probe truncate f 2: mtime moved ctime moved
        probe truncate f 2: mtime moved ctime moved
        probe ftruncate f 1: mtime moved ctime moved
        probe open f wronly,trunc: mtime moved ctime moved
        probe getx f user.none: mtime kept ctime kept
        probe access f rw: mtime kept ctime kept
        """);
  }

  @Test
  void hardLinks_everyNameShowsTheFileAsItIsNow() throws Exception {
    // each name is a node of its own to the kernel, with attributes of its own (libfuse 2's
    // high-level API): a change through one name must show through the others at once, not
    // after the attribute timeout (every stat below is within it)
    posix("hardlinks", """
        echo x > a; stat -c %h a >/dev/null
        ln a b; stat -c '%n %h' a
        truncate -s 100 b; stat -c '%n %s' a
        chmod 600 b; stat -c '%n %a' a
        echo more >> a; stat -c '%n %s' b
        ln b c; stat -c '%n %h' a b
        rm c; stat -c '%n %h' a b
        touch d; stat d >/dev/null; ln d e; stat -c '%n %h' d; mv a e; stat -c '%n %h' d b
        """, """
        a 2
        a 100
        a 600
        b 105
        a 3
        b 3
        a 2
        b 2
        d 2
        d 1
        b 2
        """);
  }

  @Test
  void directoryTimes_moveWithItsEntries() throws Exception {
    posix("dirtimes", """
        mkdir d e
        moved d d probe open d/f wronly,creat
        moved d d probe mkdir d/sub 755
        moved d d probe symlink f d/l
        moved d d probe mknod d/p 644
        moved d d probe link d/f d/g
        moved d d probe rename d/g d/h
        moved d d probe rename d/h e/h
        moved e e probe rename e/h d/h
        moved d d probe unlink d/h
        moved d d probe rmdir d/sub
        moved d d probe setx d user.x 1
        moved d d probe chmod d 700
        moved d d probe write d/f wronly data
        moved d d ls d
        """, """
        probe open d/f wronly,creat: mtime moved ctime moved
        probe mkdir d/sub 755: mtime moved ctime moved
        probe symlink f d/l: mtime moved ctime moved
        probe mknod d/p 644: mtime moved ctime moved
        probe link d/f d/g: mtime moved ctime moved
        probe rename d/g d/h: mtime moved ctime moved
        probe rename d/h e/h: mtime moved ctime moved
        probe rename e/h d/h: mtime moved ctime moved
        probe unlink d/h: mtime moved ctime moved
        probe rmdir d/sub: mtime moved ctime moved
        probe setx d user.x 1: mtime kept ctime moved
        probe chmod d 700: mtime kept ctime moved
        probe write d/f wronly data: mtime kept ctime kept
        ls d: mtime kept ctime kept
        """);
  }

  @Test
  void userXattrs_setGetListRemove() throws Exception {
    posix("xattrs", """
        echo x > f
        t probe listx f
        t probe setx f user.a hello
        t probe setx f user.empty ''
        t probe setx f user.a again create
        t probe setx f user.b x replace
        t probe setx f user.a world replace
        t probe getx f user.a
        t probe getx f user.empty
        t probe sizex f user.a
        t probe getx f user.a 2
        t probe getx f user.missing
        probe listx f | sort | tr '\\n' ' '; echo
        t probe rmx f user.a
        t probe rmx f user.a
        t probe getx f user.a
        t probe listx f
        mkdir d; ln -s f link
        t probe setx d user.dir value
        t probe getx d user.dir
        t probe setx link user.via-link 1
        t probe getx f user.via-link
        ln f hard; mv f moved
        t probe getx hard user.via-link
        t probe getx moved user.empty
        rm moved hard; echo new > moved
        t probe listx moved
        """, """
        probe listx f: END
        probe setx f user.a hello: OK
        probe setx f user.empty : OK
        probe setx f user.a again create: EEXIST
        probe setx f user.b x replace: ENODATA
        probe setx f user.a world replace: OK
        probe getx f user.a: world
        probe getx f user.empty:\s
        probe sizex f user.a: 5
        probe getx f user.a 2: ERANGE
        probe getx f user.missing: ENODATA
        END user.a user.empty\s
        probe rmx f user.a: OK
        probe rmx f user.a: ENODATA
        probe getx f user.a: ENODATA
        probe listx f: user.empty END
        probe setx d user.dir value: OK
        probe getx d user.dir: value
        probe setx link user.via-link 1: OK
        probe getx f user.via-link: 1
        probe getx hard user.via-link: 1
        probe getx moved user.empty:\s
        probe listx moved: END
        """);
  }

  /** Linux's limits: 255-byte names, 64 KiB values (ext4 allows less, so this is FlowFS alone). */
  @Test
  void userXattrs_limits() throws Exception {
    Path d = onMount("xattrlimits");
    assertEquals("""
        probe setx f user.big <65536 bytes>: OK
        probe sizex f user.big: 65536
        probe setx f user.bigger <65537 bytes>: E2BIG
        probe setx f <256-byte name> x: ERANGE
        """, sh(d, """
        echo x > f
        v=$(head -c 65536 /dev/zero | tr '\\0' v)
        echo "probe setx f user.big <65536 bytes>: $(probe setx f user.big $v)"
        t probe sizex f user.big
        echo "probe setx f user.bigger <65537 bytes>: $(probe setx f user.bigger ${v}v)"
        n=user.$(head -c 251 /dev/zero | tr '\\0' n)
        echo "probe setx f <256-byte name> x: $(probe setx f $n x)"
        """));
  }
}
