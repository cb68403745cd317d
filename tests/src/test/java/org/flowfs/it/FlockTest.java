package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code flock(2)} across clients: two mounts of one file system, each its own {@code flowfs
 * mount} process beside the servers' (as on two nodes), with the shell's {@code flock(1)}. A lock
 * taken through one holds against the other; a mount killed with its lock held loses it after
 * {@code meta.lock-term}; a restarted metadata server grants the lock to its holder again, not to
 * the other mount.
 */
class FlockTest {
  private static final String TERM = "meta.lock-term = 2s\n";

  @TempDir
  Path tmp;
  private final List<Process> holders = new ArrayList<>();
  private ProcessDeployment fs;
  private ServerProcess second;
  /** The deployment's own mount, and the second one. */
  private Path a;
  private Path b;

  @AfterEach
  void cleanUp() {
    for (Process p : holders) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
    }
    if (fs != null) { // the second mount too
      fs.close();
    }
  }

  /** The file system as separate processes, mounted twice, with the file {@code f} both lock. */
  private void up() throws Exception {
    fs = new ProcessDeployment(tmp.resolve("fs"), 2, TERM);
    a = fs.mountPoint();
    b = mountAgain();
  }

  /** A second mount of the file system, its own process. */
  private Path mountAgain() throws Exception {
    Sh.ok(fs.mountPoint(), "echo x > f");
    Path dir = tmp.resolve("mnt2");
    second = fs.mountAt(dir);
    return dir;
  }

  /**
   * Starts {@code flock -MODE f -c 'touch HELD; sleep SECONDS; echo DONE >> log'} in {@code dir}
   * (a mount) and returns once it holds the lock.
   */
  private void hold(Path dir, String mode, int seconds, String done) throws Exception {
    Path held = tmp.resolve("held-" + holders.size());
    Process p = new ProcessBuilder("flock", mode, "f", "-c",
        "touch '" + held + "'; sleep " + seconds + "; echo " + done + " >> '" + tmp.resolve("log") + "'")
        .directory(dir.toFile()).redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .redirectError(ProcessBuilder.Redirect.DISCARD).start();
    holders.add(p);
    for (int i = 0; i < 400 && !Files.exists(held); i++) {
      Thread.sleep(25);
    }
    assertTrue(Files.exists(held), "the first mount's flock never got its lock");
  }

  @Test
  void aLock_holdsAgainstTheOtherMount_whoseWaiterGetsItAtTheRelease() throws Exception {
    up();
    hold(a, "-x", 3, "a-released");
    assertEquals("busy", Sh.ok(b, "flock -n f true && echo free || echo busy").strip());
    assertEquals("busy", Sh.ok(b, "flock -s -n f true && echo free || echo busy").strip());
    // blocks until the first mount's lock goes: the log shows that release first
    Sh.ok(b, "flock f -c \"echo b-got >> '" + tmp.resolve("log") + "'\"");
    assertEquals("a-released\nb-got\n", Files.readString(tmp.resolve("log")));
    // shared with shared across the mounts; exclusive refused while either shares it
    assertEquals("shared\nrefused\n", Sh.ok(a, "flock -s f -c \"cd '" + b + "' && flock -s -n f echo shared"
        + " && { flock -x -n f true || echo refused; }\""));
    assertEquals("free", Sh.ok(b, "flock -x -n f true && echo free || echo busy").strip());
  }

  @Test
  void aMountKilledWithItsLockHeld_losesItAfterTheTerm() throws Exception {
    up();
    hold(b, "-x", 600, "never");
    second.kill(); // as a crashed node: nothing of its mount tells the servers
    // the metadata server keeps the lock for the term (2 s), then the other mount gets it
    Sh.ok(a, "timeout 60 flock -x f true");
  }

  @Test
  void aRestartedMetadataServer_grantsTheLockToItsHolderAgain_notToTheOtherMount() throws Exception {
    up();
    hold(a, "-x", 30, "a-released"); // outlasts the restart (about 10 s) and the checks after it
    fs.meta().stop(20);
    fs.startMeta();
    // for the term after the restart only claims are granted; the holder's renewal (a third of
    // the term, or its call that waited for the server) finds its locks unknown and claims them
    String stats = "getfattr --only-values -n flowfs.stats .";
    for (int i = 0; i < 300 && !Sh.ok(a, stats).contains("\"lock.reclaimed\":1"); i++) {
      Thread.sleep(100);
    }
    assertTrue(Sh.ok(a, stats).contains("\"lock.reclaimed\":1"), "the holder claimed its lock again");
    Thread.sleep(2_500); // past the term after the restart: claims are no longer all that is granted
    assertEquals("busy", Sh.ok(b, "flock -n f true && echo free || echo busy").strip());
    Sh.ok(b, "timeout 60 flock f -c \"echo b-got >> '" + tmp.resolve("log") + "'\"");
    assertEquals("a-released\nb-got\n", Files.readString(tmp.resolve("log")));
  }
}
