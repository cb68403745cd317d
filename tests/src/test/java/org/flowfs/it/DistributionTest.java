package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The distribution {@code mvn package} builds (dist/target/flowfs-VERSION.tar.gz): its layout,
 * its install script (into a staged root, twice, then uninstalled), the units as installed
 * passing {@code systemd-analyze verify}, the launcher through a symlink and without Java, and
 * the mount helper's argument handling. The real boot is {@link SystemdBootTest}.
 */
class DistributionTest {
  static Path tarball;
  @TempDir
  static Path work;
  static Path dist;

  /** The newest tarball of the dist module, or null. */
  static Path findTarball() throws IOException {
    Path target = Path.of("..", "dist", "target").toAbsolutePath().normalize();
    if (!Files.isDirectory(target)) {
      return null;
    }
    try (Stream<Path> s = Files.list(target)) {
      return s.filter(p -> p.getFileName().toString().matches("flowfs-.*\\.tar\\.gz"))
          .max((a, b) -> Long.compare(a.toFile().lastModified(), b.toFile().lastModified())).orElse(null);
    }
  }

  @BeforeAll
  static void unpack() throws IOException {
    tarball = findTarball();
    assumeTrue(tarball != null, "no dist/target/flowfs-*.tar.gz: build it with mvn package (the reactor builds dist before tests)");
    Sh.ok(work, "tar -xzf '" + tarball + "'");
    try (Stream<Path> s = Files.list(work)) {
      dist = s.filter(p -> p.getFileName().toString().startsWith("flowfs-")).findFirst().orElseThrow();
    }
  }

  @Test
  void tarball_hasTheLayout() throws IOException {
    for (String f : List.of("bin/flowfs", "sbin/mount.fuse.flowfs", "install.sh", "etc/flowfs/flowfs.conf.example",
        "systemd/flowfs-metaserver.service", "systemd/flowfs-ioserver@.service", "systemd/flowfs-mount.service")) {
      assertTrue(Files.isRegularFile(dist.resolve(f)), f);
    }
    for (String f : List.of("bin/flowfs", "sbin/mount.fuse.flowfs", "install.sh")) {
      assertTrue(Files.isExecutable(dist.resolve(f)), f + " is not executable");
    }
    try (Stream<Path> s = Files.list(dist.resolve("lib"))) {
      List<String> jars = s.map(p -> p.getFileName().toString()).toList();
      for (String j : List.of("flowfs-cli-", "flowfs-common-", "flowfs-metaserver-", "flowfs-ioserver-", "flowfs-mount-",
          "picocli-", "netty-", "mapdb-", "jnr-fuse-", "jnr-ffi-", "logback-classic-")) {
        assertTrue(jars.stream().anyMatch(n -> n.startsWith(j) && n.endsWith(".jar")), j + "*.jar missing from lib/: " + jars);
      }
    }
  }

  @Test
  void exampleConfig_parses_withOneMetaserverAndFourIoServers() throws IOException {
    String text = Files.readString(dist.resolve("etc/flowfs/flowfs.conf.example"))
        .replace("fs.secret = CHANGE-ME", "fs.secret = 0123456789abcdef0123");
    var cfg = org.flowfs.common.config.FlowFsConfig.parse("example", text);
    assertEquals(4, cfg.ioServers().size());
    assertEquals(7100, cfg.meta().address().getPort());
  }

  @Test
  void installScript_intoAStagedRoot_thenVerifyAndUninstall(@TempDir Path root) throws IOException {
    Files.createDirectories(root.resolve("etc"));
    Sh.ok(work, "'" + dist + "/install.sh' --root '" + root + "'");
    assertTrue(Files.isSymbolicLink(root.resolve("usr/bin/flowfs")));
    assertEquals("/usr/lib/flowfs/bin/flowfs", Files.readSymbolicLink(root.resolve("usr/bin/flowfs")).toString());
    assertEquals("/usr/lib/flowfs/sbin/mount.fuse.flowfs", Files.readSymbolicLink(root.resolve("sbin/mount.fuse.flowfs")).toString());
    assertTrue(Files.isExecutable(root.resolve("usr/lib/flowfs/bin/flowfs")));
    assertTrue(Files.isRegularFile(root.resolve("usr/lib/systemd/system/flowfs-ioserver@.service")));
    assertTrue(Files.readString(root.resolve("etc/passwd")).lines().anyMatch(l -> l.startsWith("flowfs:")), "no user flowfs");
    String conf = Files.readString(root.resolve("etc/flowfs/flowfs.conf"));
    assertFalse(conf.contains("fs.secret = CHANGE-ME"), "the installed config kept the placeholder secret");
    assertTrue(conf.lines().anyMatch(l -> l.matches("fs\\.secret = [0-9a-f]{48}")), "no fresh secret");
    assertEquals("rw-r-----", java.nio.file.attribute.PosixFilePermissions.toString(
        Files.getPosixFilePermissions(root.resolve("etc/flowfs/flowfs.conf"))));

    // the units as installed, with the real launcher in place
    SystemdUnitsTest.stageStandardUnits(root);
    SystemdUnitsTest.verify(root, List.of("flowfs-metaserver.service", "flowfs-ioserver@0.service",
        "flowfs-ioserver@3.service", "flowfs-mount.service"));

    // again: an upgrade keeps the site's config
    Files.writeString(root.resolve("etc/flowfs/flowfs.conf"), conf + "# site edit\n");
    Sh.ok(work, "'" + dist + "/install.sh' --root '" + root + "'");
    assertTrue(Files.readString(root.resolve("etc/flowfs/flowfs.conf")).endsWith("# site edit\n"));

    Sh.ok(work, "'" + dist + "/install.sh' --root '" + root + "' --uninstall");
    assertFalse(Files.exists(root.resolve("usr/lib/flowfs")));
    assertFalse(Files.exists(root.resolve("usr/bin/flowfs"), java.nio.file.LinkOption.NOFOLLOW_LINKS));
    assertFalse(Files.exists(root.resolve("usr/lib/systemd/system/flowfs-mount.service")));
    assertTrue(Files.exists(root.resolve("etc/flowfs/flowfs.conf")), "uninstall keeps the config");
  }

  @Test
  void launcher_runsThroughASymlink(@TempDir Path bin) throws IOException {
    Files.createSymbolicLink(bin.resolve("flowfs"), dist.resolve("bin/flowfs"));
    String out = Sh.ok(bin, "./flowfs --version");
    assertTrue(out.contains("FlowFS"), out);
    String help = Sh.ok(bin, "./flowfs --help");
    for (String tool : List.of("ping", "df", "stat", "setstripe", "stats")) {
      assertTrue(help.contains("  " + tool + " "), tool + " missing from:\n" + help);
    }
  }

  @Test
  void launcher_withoutJava_saysWhatToInstall(@TempDir Path bin) throws IOException {
    // a PATH with the shell tools the launcher uses, and no java
    for (String tool : List.of("bash", "readlink", "dirname", "sed", "env")) {
      Files.createSymbolicLink(bin.resolve(tool), Path.of(Sh.ok(bin, "command -v " + tool).strip()));
    }
    Sh.Result r = Sh.run(bin, "env -i PATH='" + bin + "' '" + bin + "/bash' '" + dist + "/bin/flowfs' ping");
    assertEquals(1, r.exit(), r.out() + r.err());
    assertTrue(r.err().contains("Java 17 or newer is needed") && r.err().contains("openjdk-17-jre-headless"), r.err());
  }

  @Test
  void mountHelper_checksItsArguments(@TempDir Path dir) throws IOException {
    String helper = "'" + dist + "/sbin/mount.fuse.flowfs'";
    Sh.Result noConfig = Sh.run(dir, helper + " no-such-name '" + dir + "' -o rw,_netdev");
    assertEquals(32, noConfig.exit());
    assertTrue(noConfig.err().contains("/etc/flowfs/no-such-name.conf does not exist"), noConfig.err());
    Files.writeString(dir.resolve("c.conf"), "# empty\n");
    Sh.Result noDir = Sh.run(dir, helper + " '" + dir + "/c.conf' '" + dir + "/nowhere' -o _netdev");
    assertEquals(32, noDir.exit());
    assertTrue(noDir.err().contains("does not exist or is not a directory"), noDir.err());
    Sh.Result ro = Sh.run(dir, helper + " '" + dir + "/c.conf' '" + dir + "' -o ro,_netdev");
    assertEquals(1, ro.exit());
    // -f (fake): mount(8) asks for everything but the mount
    Sh.Result fake = Sh.run(dir, helper + " '" + dir + "/c.conf' '" + dir + "' -f -o _netdev,noauto,x-systemd.after=a");
    assertEquals(0, fake.exit(), fake.err());
  }
}
