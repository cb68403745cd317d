package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.abort;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The real boot: tests/systemd/boot-test.sh installs the distribution into a cached Debian rootfs
 * and boots it with systemd-nspawn, where the units start a metadata server, four I/O servers and
 * the mount (see the script). It runs here only when the rootfs cache exists, since building it
 * takes minutes and Debian's mirror; otherwise it is skipped with the command that builds it.
 */
class SystemdBootTest {
  @Test
  void distribution_bootsUnderSystemd() throws IOException {
    assumeTrue("root".equals(System.getProperty("user.name")), "the boot test needs root (systemd-nspawn)");
    assumeTrue(Files.exists(Path.of("/dev/fuse")), "the boot test needs /dev/fuse");
    Path tarball = DistributionTest.findTarball();
    assumeTrue(tarball != null, "no dist/target/flowfs-*.tar.gz: build it with mvn package");
    Path script = Path.of("systemd", "boot-test.sh").toAbsolutePath();
    Sh.Result r = Sh.run(script.getParent(), "'" + script + "' --if-cached --dist '" + tarball + "' 2>&1", 900);
    System.out.println(r.out());
    if (r.exit() == 77) {
      abort(r.out().strip() + " (then this test runs it on every build)");
    }
    assertEquals(0, r.exit(), () -> "the boot test failed:\n" + r.out());
  }
}
