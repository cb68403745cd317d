package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every unit file in {@code systemd/} passes {@code systemd-analyze verify} without a single line
 * of output (unknown keys and bad values are only warnings there, so any output fails), checked
 * in a staged root that holds the standard units and targets, the units and a stand-in
 * {@code /usr/bin/flowfs}. A template is checked as its instance {@code @0}. (PID 1 need not be
 * systemd: see shared/notes/systemd-testing.md.) The installed layout is checked too, by
 * {@link DistributionTest}.
 */
class SystemdUnitsTest {
  static final Path UNITS = Path.of("..", "systemd").toAbsolutePath().normalize();
  static final Path HOST_UNITS = Path.of("/usr/lib/systemd/system");

  /** The unit names to verify for the unit files in {@code dir} (templates as their instance 0). */
  static List<String> unitNames(Path dir) throws IOException {
    List<String> names = new ArrayList<>();
    try (Stream<Path> s = Files.list(dir)) {
      s.map(p -> p.getFileName().toString())
          .filter(n -> n.matches(".*\\.(service|mount|target|socket|timer|path)"))
          .sorted()
          .forEach(n -> names.add(n.contains("@.") ? n.replace("@.", "@0.") : n));
    }
    return names;
  }

  /** Copies the host's standard units (targets and all) into {@code root}, keeping files already there. */
  static void stageStandardUnits(Path root) throws IOException {
    if (!Files.isDirectory(HOST_UNITS) || !Files.exists(HOST_UNITS.resolve("multi-user.target"))) {
      fail("systemd is not installed: install the Debian package 'systemd' (bin/test does)");
    }
    Path dest = root.resolve("usr/lib/systemd/system");
    Files.createDirectories(dest);
    Sh.ok(root, "cp -Rn " + HOST_UNITS + "/. '" + dest + "'/");
    // what the units run besides flowfs
    for (String bin : List.of("/bin/mkdir", "/bin/fusermount", "/bin/sh")) {
      Path target = root.resolve(bin.substring(1));
      if (!Files.exists(target)) {
        Files.createDirectories(target.getParent());
        stub(target);
      }
    }
  }

  static void stub(Path p) throws IOException {
    Files.createDirectories(p.getParent());
    Files.writeString(p, "#!/bin/sh\nexit 0\n");
    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
  }

  /** Runs systemd-analyze verify on {@code units} inside {@code root}; fails on any output or exit code. */
  static void verify(Path root, List<String> units) {
    Sh.Result which = Sh.run(root, "command -v systemd-analyze");
    if (which.exit() != 0) {
      fail("systemd-analyze is missing: install the Debian package 'systemd' (bin/test does)");
    }
    String cmd = "systemd-analyze verify --man=no --root='" + root + "' " + String.join(" ", units) + " 2>&1";
    Sh.Result r = Sh.run(root, cmd, 120);
    String out = (r.out() + r.err()).strip();
    assertTrue(r.exit() == 0 && out.isEmpty(),
        () -> "systemd-analyze verify reported (exit " + r.exit() + "):\n" + out + "\n(" + cmd + ")");
  }

  @Test
  void unitFiles_passVerifyWithoutWarnings(@TempDir Path root) throws IOException {
    List<String> names = unitNames(UNITS);
    assertFalse(names.isEmpty(), "no unit files in " + UNITS);
    assertTrue(names.containsAll(List.of("flowfs-metaserver.service", "flowfs-ioserver@0.service", "flowfs-mount.service")),
        names.toString());
    stageStandardUnits(root);
    Path dest = root.resolve("usr/lib/systemd/system");
    try (Stream<Path> s = Files.list(UNITS)) {
      for (Path p : s.filter(p -> !p.getFileName().toString().endsWith(".md")).toList()) {
        Files.copy(p, dest.resolve(p.getFileName()), StandardCopyOption.REPLACE_EXISTING);
      }
    }
    stub(root.resolve("usr/bin/flowfs"));
    verify(root, names);
  }

  @Test
  void verify_catchesWhatWouldBreakABoot(@TempDir Path root) throws IOException {
    // the check itself: a bad value (only a warning for systemd) and a missing binary both fail
    stageStandardUnits(root);
    Path dest = root.resolve("usr/lib/systemd/system");
    String unit = Files.readString(UNITS.resolve("flowfs-metaserver.service"));
    Files.writeString(dest.resolve("flowfs-metaserver.service"), unit.replace("Restart=on-failure", "Restart=sometimes"));
    stub(root.resolve("usr/bin/flowfs"));
    AssertionError warned = org.junit.jupiter.api.Assertions.assertThrows(AssertionError.class,
        () -> verify(root, List.of("flowfs-metaserver.service")));
    assertTrue(warned.getMessage().contains("sometimes"), warned.getMessage());
    Files.writeString(dest.resolve("flowfs-metaserver.service"), unit);
    Files.delete(root.resolve("usr/bin/flowfs"));
    AssertionError missing = org.junit.jupiter.api.Assertions.assertThrows(AssertionError.class,
        () -> verify(root, List.of("flowfs-metaserver.service")));
    assertTrue(missing.getMessage().contains("/usr/bin/flowfs"), missing.getMessage());
  }

  @Test
  void units_passOnlyTheConfig() throws IOException {
    for (String name : List.of("flowfs-metaserver.service", "flowfs-ioserver@.service", "flowfs-mount.service")) {
      String text = Files.readString(UNITS.resolve(name));
      String exec = text.lines().filter(l -> l.startsWith("ExecStart=")).findFirst().orElseThrow();
      assertTrue(exec.contains(" --config /etc/flowfs/flowfs.conf"), exec);
      assertFalse(exec.replace("--config /etc/flowfs/flowfs.conf", "").replace("--id %i", "").contains("-"),
          "the units pass only --config (and the I/O server's id): " + exec);
      assertTrue(text.contains("Restart=on-failure"), name);
      assertTrue(text.contains("Type=notify"), name);
    }
  }
}
