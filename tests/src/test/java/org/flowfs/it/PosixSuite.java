package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the POSIX conformance suites ({@code Posix*Test}) share: a FlowFS mounted by root with
 * {@code allow_other}, a directory on the local disk beside it (the reference: the same script run
 * there shows what Linux does), and a shell prelude for the scripts.
 *
 * <p>The prelude gives every script:
 * <ul>
 *   <li>{@code probe}: {@code probe.c}, compiled here with {@code cc}, which makes one system call
 *       and prints {@code OK} or the errno's name ({@code EACCES}), where shell tools hide errnos
 *       or check things themselves;
 *   <li>{@code alice} and {@code bob}: run a command as an unprivileged user, through {@code
 *       setpriv}. alice is uid/gid {@value #ALICE} with the supplementary group {@value #STAFF};
 *       bob is uid/gid {@value #BOB} in no other group. They are numeric ids: the suite adds no
 *       users or groups to the machine, and needs none to exist;
 *   <li>{@code t CMD...}: runs a command and prints {@code CMD...: OUTPUT} on one line, so a
 *       script's output reads as a list of outcomes;
 *   <li>{@code moved F G CMD...}: runs a command and prints whether it moved the mtime and the
 *       ctime of F (read as G afterwards, for renames): {@code CMD...: mtime kept ctime moved};
 *   <li>{@code await FILE WORD}: waits (10 s at most) until a command in the background wrote
 *       WORD to FILE;
 *   <li>{@code set -e} (a failing set-up command fails the test), {@code umask 022} and the C
 *       locale.
 * </ul>
 *
 * <p>Tests that run commands as other users need root (as mounting with {@code allow_other}
 * does); elsewhere they are skipped. Each test works in directories of its own.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class PosixSuite {
  static final int ALICE = 12001;
  static final int STAFF = 12002;
  static final int BOB = 12003;

  Path tmp;
  EmbeddedDeployment fs;
  Path mnt;
  Path local;
  private Path bin;
  private String prelude;

  /** Lines appended to the file system's config (e.g. other cache timeouts). */
  String extraConfig() {
    return "";
  }

  @BeforeAll
  void up(@TempDir Path dir) throws Exception {
    tmp = dir;
    // other users reach the mount, the local reference and the probe through here
    Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxr-xr-x"));
    bin = Files.createDirectories(tmp.resolve("bin"));
    local = Files.createDirectories(tmp.resolve("local"));
    compileProbe();
    fs = new EmbeddedDeployment(tmp.resolve("fs"), 2, extraConfig());
    mnt = fs.mountPoint();
    prelude = String.join("\n",
        "set -e",
        "umask 022",
        "export LC_ALL=C",
        "export PATH='" + bin + "':$PATH",
        "alice() { setpriv --reuid=" + ALICE + " --regid=" + ALICE + " --groups=" + STAFF + " \"$@\"; }",
        "bob() { setpriv --reuid=" + BOB + " --regid=" + BOB + " --clear-groups \"$@\"; }",
        "t() { local out; out=$(\"$@\" 2>&1 | tr '\\n' ' ') || true; echo \"$*: ${out% }\"; }",
        // await FILE WORD: waits (10 s at most) until a background command wrote WORD to FILE
        "await() { for i in $(seq 1000); do grep -q \"$2\" \"$1\" && return 0; sleep 0.01; done; "
            + "echo \"no $2 in $1\" >&2; return 1; }",
        // moved F G CMD...: runs CMD; prints whether it moved F's mtime and ctime (read as G after)
        "when() { if [[ $2 > $1 ]]; then echo moved; elif [[ $2 == $1 ]]; then echo kept; else echo back; fi; }",
        "moved() { local f=$1 g=$2 b a; shift 2; b=($(probe times $f)); sleep 0.02; \"$@\" >/dev/null; "
            + "a=($(probe times $g)); echo \"$*: mtime $(when ${b[1]} ${a[1]}) ctime $(when ${b[2]} ${a[2]})\"; }",
        "");
  }

  @AfterAll
  void down() {
    if (fs != null) {
      fs.close();
    }
  }

  private void compileProbe() throws IOException {
    Path src = bin.resolve("probe.c");
    try (InputStream in = PosixSuite.class.getResourceAsStream("posix/probe.c")) {
      Files.copy(in, src);
    }
    Sh.Result r = Sh.run(bin, "command -v cc >/dev/null || { echo 'no C compiler: install gcc'; exit 1; }; "
        + "cc -O1 -Wall -o probe probe.c && chmod 755 probe", 120);
    assertEquals(0, r.exit(), () -> "cannot compile the probe (bin/test installs gcc):\n" + r.out() + r.err());
  }

  static boolean isRoot() {
    return "root".equals(System.getProperty("user.name"));
  }

  /** For tests that run commands as other users. */
  static void assumeRoot() {
    assumeTrue(isRoot(), "runs commands as other users: needs root");
  }

  /** A fresh directory on the mount, open to everyone (mode 0777). */
  Path onMount(String name) throws IOException {
    return fresh(mnt.resolve(name));
  }

  /** A fresh directory on the local disk, open to everyone (mode 0777). */
  Path onLocal(String name) throws IOException {
    return fresh(local.resolve(name));
  }

  private static Path fresh(Path d) throws IOException {
    Files.createDirectory(d);
    Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwxrwxrwx"));
    return d;
  }

  /**
   * Runs a script (with the prelude) in {@code dir}; it must succeed within two minutes (then it
   * and its children are killed); returns its output.
   */
  String sh(Path dir, String script) {
    Sh.Result r = Sh.run(dir, prelude + script, 120);
    assertEquals(0, r.exit(), () -> "the script failed with " + r.exit() + " in " + dir + ":\n" + script
        + "\n--- its output:\n" + r.out() + r.err());
    return r.out();
  }

  /**
   * Runs {@code script} in a fresh directory on the local disk and in one on the mount: both must
   * print {@code expected}. The local run checks the expectation against Linux itself.
   */
  void posix(String name, String script, String expected) throws IOException {
    assertEquals(expected, sh(onLocal(name), script), "the local file system (the reference) disagrees");
    assertEquals(expected, sh(onMount(name), script), "FlowFS differs from POSIX (and the local file system)");
  }
}
