package org.flowfs.it;

import org.junit.jupiter.api.Test;

/**
 * Names through the mount: rename (atomic replacement, directories over empty directories, and
 * its errors) and files that stay open after their last name is gone. Hard links are {@link
 * PosixLinksTest}'s.
 *
 * <p>Where libfuse 2's high-level API (path-based, which jnr-fuse binds) sets limits:
 * <ul>
 *   <li>A file unlinked while open is renamed to {@code .fuse_hidden*} in its directory until its
 *       last close (as NFS does with {@code .nfs*}) and shows there meanwhile. The tests check
 *       what holds regardless: the data stays readable and writable through the open
 *       descriptors, the name is gone, and nothing is left after the close.
 *   <li>A rename over a file that is open on this mount first renames that file away the same
 *       way, so for a moment its name is missing to others. The atomicity test reads the name
 *       without opening it.
 *   <li>A {@code stat} whose path walk reached the replaced file's node just before the rename
 *       asks for that node's attributes when they expired, and libfuse has no path for it any
 *       more: the mount answers ESTALE and the kernel walks the path again ({@link
 *       PosixStaleNodesTest} has the race at every {@code stat}).
 * </ul>
 */
class PosixNamespaceTest extends PosixSuite {
  @Test
  void rename_replacesTheTargetAtomically() throws Exception {
    // readers that look the name up (without opening it) never find it missing
    posix("atomic", """
        echo v0 > target
        ( while [ ! -e stop ]; do stat -c %s target >/dev/null 2>&1 || echo missing; done ) > seen &
        for i in $(seq 1 150); do echo v$i > new$i; probe rename new$i target >/dev/null; done
        touch stop; wait
        cat target seen
        ls
        """, """
        v150
        seen
        stop
        target
        """);
  }

  @Test
  void rename_ofDirectories_andItsErrors() throws Exception {
    posix("renames", """
        mkdir d1 d2 d3 d3/sub; echo x > d3/f; echo f > file; ln file alias
        t probe rename d1 d2
        t probe rename d2 d3
        t probe rename d3 d3/sub
        t probe rename d3 d3/sub/deeper
        t probe rename file d3
        t probe rename d3 file
        t probe rename file file
        t probe rename file alias
        t probe rename missing x
        t probe rename file nodir/x
        t probe rename file file/x
        t probe rename d3/sub/. x
        ls
        mkdir -p p1/c/g p2
        stat -c '%n %h' p1 p2 p1/c
        probe rename p1/c p2/c >/dev/null
        stat -c '%n %h' p1 p2 p2/c
        test "$(stat -c %i p2/c/..)" = "$(stat -c %i p2)" && echo '.. is the new parent'
        test "$(stat -c %i p2/c/g/../..)" = "$(stat -c %i p2)" && echo 'and below it too'
        mkdir p3; probe rename p2/c p3 >/dev/null; stat -c '%n %h' p2 p3; ls p3
        """, """
        probe rename d1 d2: OK
        probe rename d2 d3: ENOTEMPTY
        probe rename d3 d3/sub: EINVAL
        probe rename d3 d3/sub/deeper: EINVAL
        probe rename file d3: EISDIR
        probe rename d3 file: ENOTDIR
        probe rename file file: OK
        probe rename file alias: OK
        probe rename missing x: ENOENT
        probe rename file nodir/x: ENOENT
        probe rename file file/x: ENOTDIR
        probe rename d3/sub/. x: EBUSY
        alias
        d2
        d3
        file
        p1 3
        p2 2
        p1/c 3
        p1 2
        p2 3
        p2/c 3
        .. is the new parent
        and below it too
        p2 2
        p3 3
        g
        """);
  }

  /**
   * {@code ls -A} once the last close of a file unlinked or renamed over while open has taken its
   * {@code .fuse_hidden} name away: the kernel sends FUSE's RELEASE after close() returned, without
   * waiting for it, and libfuse removes the name there, so the next command may run before that
   * (README, POSIX on the mount). Waits 5 s at most.
   */
  private static final String LS_AFTER_RELEASE =
      "for i in $(seq 50); do ls -A | grep -q '^.fuse_hidden' || break; sleep 0.1; done\nls -A\n";

  @Test
  void unlink_ofAnOpenFile_keepsItReadableAndWritableUntilTheLastClose() throws Exception {
    // one process: its descriptor outlives the name
    posix("unlinked", """
        probe unlinked f
        """ + LS_AFTER_RELEASE, """
        stat after unlink: ENOENT
        read before unlink
        after unlink
        size 27 nlink 0
        truncated before
        OK
        """);
  }

  @Test
  void unlink_whileAnotherProcessHoldsTheFile_itKeepsReadingAndWriting() throws Exception {
    posix("held", hold("""
        rm f
        t probe access f f
        ls -A | grep -v '^.fuse_hidden' || true
        """) + LS_AFTER_RELEASE, """
        probe access f f: ENOENT
        OPEN
        original
        original
        held
        OK
        """);
  }

  @Test
  void rename_overAFileAnotherProcessHolds_theHolderKeepsTheOldOne() throws Exception {
    posix("heldrename", hold("""
        echo replacement > n
        probe rename n f >/dev/null
        cat f
        ls -A | grep -v '^.fuse_hidden' || true
        """) + LS_AFTER_RELEASE, """
        replacement
        f
        OPEN
        original
        original
        held
        OK
        f
        """);
  }

  /**
   * A script that creates {@code f}, lets {@code probe hold} open it, runs {@code steps} while
   * it is open, then lets the holder read it, append to it and close it, and prints what the
   * holder printed.
   */
  private static String hold(String steps) {
    return """
        echo original > f
        c=$(mktemp -d); mkfifo $c/go
        probe hold f < $c/go > $c/out &
        exec 3> $c/go
        await $c/out OPEN
        """ + steps + """
        exec 3>&-
        wait
        cat $c/out; rm -r $c
        """;
  }
}
