package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Bad input gets a clear error and loses nothing: errnos on the mount, messages from the launcher. */
class ErrorsTest {
  static EmbeddedDeployment fs;
  static Path m;

  @BeforeAll
  static void up(@TempDir Path tmp) throws Exception {
    fs = new EmbeddedDeployment(tmp, 2);
    m = fs.mountPoint();
  }

  @AfterAll
  static void down() {
    if (fs != null) {
      fs.close();
    }
  }

  @Test
  void namespace_errorsAreThePosixErrnos() {
    Sh.ok(m, "mkdir e && touch e/f");
    assertTrue(Sh.fails(m, "mkdir e").contains("File exists"));
    assertTrue(Sh.fails(m, "rmdir e").contains("Directory not empty"));
    assertTrue(Sh.fails(m, "cat nosuch").contains("No such file or directory"));
    assertTrue(Sh.fails(m, "cat e/f/x").contains("Not a directory"));
    assertTrue(Sh.fails(m, "mkdir e/f/x").contains("Not a directory"));
    assertTrue(Sh.fails(m, "rmdir e/f").contains("Not a directory"));
    assertTrue(Sh.fails(m, "rm e").contains("Is a directory"));
    assertTrue(Sh.fails(m, "echo x > e").contains("Is a directory"));
    assertTrue(Sh.fails(m, "touch $(printf 'n%.0s' $(seq 1 256))").contains("File name too long"));
    Sh.ok(m, "touch $(printf 'n%.0s' $(seq 1 255)) && rm n*");
    assertTrue(Sh.fails(m, "mv e e/sub").contains("subdirectory of itself"));
    assertTrue(Sh.fails(m, "mv e e2 && mkdir d && touch d/x && mv -T e2 d")
        .contains("Directory not empty"));
    Sh.ok(m, "test -d e2 && test -f e2/f && rm -rf e2 d");
  }

  /** Runs the launcher in this JVM and returns exit code, stdout+stderr. */
  private static Object[] flowfs(String... args) {
    PrintStream out = System.out;
    PrintStream err = System.err;
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    PrintStream p = new PrintStream(buf, true);
    System.setOut(p);
    System.setErr(p);
    try {
      int rc = org.flowfs.cli.Main.run(args);
      return new Object[] {rc, buf.toString()};
    } finally {
      System.setOut(out);
      System.setErr(err);
    }
  }

  @Test
  void help_listsEverySubcommand() {
    Object[] r = flowfs("--help");
    assertEquals(0, r[0]);
    for (String sub : List.of("up", "metaserver", "ioserver", "mount")) {
      assertTrue(((String) r[1]).contains("  " + sub + " "), "help lacks " + sub + ":\n" + r[1]);
    }
  }

  @Test
  void config_missingOrBadKeys_areNamed(@TempDir Path tmp) throws Exception {
    Path conf = tmp.resolve("bad.conf");
    Files.writeString(conf, "meta.address = 127.0.0.1:notaport\nio.0.address = 127.0.0.1:7001\nrpc.timeout = forever\nlayout.strip-sise = 1M\n");
    Object[] r = flowfs("metaserver", "--config", conf.toString());
    String out = (String) r[1];
    assertEquals(2, r[0], out);
    assertTrue(out.contains("key 'meta.address'"), out);
    assertTrue(out.contains("key 'rpc.timeout'"), out);
    assertTrue(out.contains("key 'layout.strip-sise' is not a known setting"), out);
    assertTrue(!out.contains("Exception"), out);

    Files.writeString(conf, "io.0.address = 127.0.0.1:7001\n");
    r = flowfs("ioserver", "--config", conf.toString(), "--id", "0");
    assertEquals(2, r[0]);
    assertTrue(((String) r[1]).contains("key 'meta.address' is required but missing"), (String) r[1]);

    r = flowfs("metaserver", "--config", tmp.resolve("nope.conf").toString());
    assertEquals(2, r[0]);
    assertTrue(((String) r[1]).contains("does not exist"), (String) r[1]);
  }

  @Test
  void mount_ofAMissingOrMountedDirectory_saysSo(@TempDir Path tmp) throws Exception {
    Path conf = fs.dataDir().resolve("flowfs.conf");
    // the test fixture's config has port 0: point a config at the running servers instead
    Path live = tmp.resolve("live.conf");
    Files.writeString(live, liveConfig());
    Object[] r = flowfs("mount", "--config", live.toString(), tmp.resolve("missing").toString());
    assertEquals(1, r[0]);
    assertTrue(((String) r[1]).contains("does not exist"), (String) r[1]);
    assertTrue(!((String) r[1]).contains("Exception"), (String) r[1]);

    // an already mounted directory: run as a separate process, as a user would
    Process p = new ProcessBuilder(ServerProcess.command(List.of("mount", "--config", live.toString(), m.toString())))
        .redirectErrorStream(true).start();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    String out = new String(p.getInputStream().readAllBytes());
    assertEquals(1, p.exitValue(), out);
    assertTrue(out.contains("already a mount point"), out);
    assertTrue(Files.exists(conf));
  }

  private static String liveConfig() throws Exception {
    var c = fs.client().config();
    StringBuilder sb = new StringBuilder("fs.secret = " + c.fs().secret() + "\n");
    sb.append("meta.address = 127.0.0.1:").append(c.meta().address().getPort()).append('\n');
    for (var io : c.ioServers()) {
      sb.append("io.").append(io.id()).append(".address = 127.0.0.1:").append(io.address().getPort()).append('\n');
    }
    return sb.toString();
  }
}
