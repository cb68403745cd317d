package org.flowfs.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.flowfs.fuse.MountTable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A run killed with its systems up leaves their FUSE mounts behind with no process to answer them:
 * the next run must still start. Made here the way it happens: a bindfs passthrough killed with
 * SIGKILL (its mount then answers ENOTCONN), beneath it a second mount, and plain files.
 */
class ClearWorkTest {
  private final Path work = Path.of("/var/tmp/flowfs-bench-clear-test");

  @AfterEach
  void detachAnyLeft() throws Exception {
    for (Path m : MountTable.mountsUnder(work)) {
      Workloads.sh(Path.of("/"), "umount -l '" + m + "' || true");
    }
    Workloads.sh(Path.of("/"), "rm -rf '" + work + "'");
  }

  @Test
  void clearWork_detachesDeadMountsAndEmptiesTheDirectory() throws Exception {
    Files.createDirectories(work.resolve("src"));
    Files.createDirectories(work.resolve("mnt"));
    Files.createDirectories(work.resolve("tmpfs"));
    Files.writeString(work.resolve("src/file"), "data");
    Workloads.sh(work, "mount -t tmpfs none tmpfs && mkdir tmpfs/inner && mount -t tmpfs none tmpfs/inner");
    String pid = Workloads.sh(work, "bindfs -f --no-allow-other src mnt </dev/null >/dev/null 2>&1 & echo $!").strip();
    Workloads.sh(work, "for i in $(seq 100); do mountpoint -q mnt && exit 0; sleep 0.1; done; exit 1");
    Workloads.sh(work, "kill -9 " + pid + "; while kill -0 " + pid + " 2>/dev/null; do sleep 0.05; done");
    assertTrue(Workloads.sh(work, "ls mnt 2>&1 || true").contains("not connected"), "the killed bindfs left no dead mount");
    assertEquals(List.of(work.resolve("tmpfs/inner"), work.resolve("tmpfs"), work.resolve("mnt")).stream().sorted().toList(),
        MountTable.mountsUnder(work).stream().sorted().toList());
    assertEquals(3, MountTable.mountsUnder(work).get(0).getNameCount() - work.getNameCount() + 1, "deepest first");

    Bench.clearWork(work);

    assertTrue(MountTable.mountsUnder(work).isEmpty(), MountTable.mountsUnder(work).toString());
    assertTrue(Files.isDirectory(work));
    try (var entries = Files.list(work)) {
      assertFalse(entries.findAny().isPresent(), "the work directory was not emptied");
    }
  }
}
