package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Stopping every process cleanly and starting again keeps every file and every byte: the MapDB
 * file and the datafiles are the durable state.
 */
class RestartTest {
  private static final String CREATE = String.join(" && ",
      "mkdir -p keep/a/b keep/empty",
      "head -c 7000000 /dev/urandom > keep/a/big",
      "echo small > keep/a/b/small",
      "ln -s a/b/small keep/link",
      "truncate -s 123456 keep/sparse",
      "chmod 600 keep/a/b/small");

  /** Names, types, modes, sizes and checksums of everything under keep/, into NAME.listing. */
  private static String snapshot(String name) {
    return "(cd keep && find . -printf '%p %y %m %s %l\\n' | sort && find . -type f | sort | xargs sha256sum) > " + name + ".listing";
  }

  private static void restartKeepsEverything(Deployment fs) throws Exception {
    Path m = fs.mountPoint();
    Sh.ok(m, CREATE + " && " + snapshot("before"));
    fs.stop();
    fs.start();
    Sh.ok(m, snapshot("after") + " && diff before.listing after.listing");
    assertEquals("small\n", Sh.ok(m, "cat keep/link"));

    Sh.ok(m, "echo again >> keep/a/b/small && rm keep/a/big && " + snapshot("before"));
    fs.stop();
    fs.start();
    Sh.ok(m, snapshot("after") + " && diff before.listing after.listing");
    assertEquals("small\nagain\n", Sh.ok(m, "cat keep/link"));
  }

  @Test
  void embedded_stopAndStart_keepsFilesAndBytes(@TempDir Path tmp) throws Exception {
    try (Deployment fs = new EmbeddedDeployment(tmp, 4)) {
      restartKeepsEverything(fs);
    }
  }

  @Test
  void processes_stopAndStart_keepFilesAndBytes(@TempDir Path tmp) throws Exception {
    try (Deployment fs = new ProcessDeployment(tmp, 3)) {
      restartKeepsEverything(fs);
    }
  }
}
