package org.flowfs.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * sd_notify from Java: the datagram reaches a Unix socket bound the way systemd binds its notify
 * socket (a path, or an abstract name), received here by a small python3 program.
 */
class ReadinessTest {
  /** A python3 receiver of one datagram on {@code address} ('@' abstract), printing it; null without python3. */
  private static Process receiver(String address, Path ready) throws IOException {
    String py = String.join("\n",
        "import socket, sys",
        "a = sys.argv[1]",
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)",
        "s.bind('\\0' + a[1:] if a.startswith('@') else a)",
        "open(sys.argv[2], 'w').close()",
        "s.settimeout(20)",
        "sys.stdout.write(s.recv(4096).decode())");
    try {
      return new ProcessBuilder("python3", "-c", py, address, ready.toString()).redirectErrorStream(true).start();
    } catch (IOException e) {
      return null;
    }
  }

  private static String roundTrip(String address, Path dir, String message) throws Exception {
    Path ready = dir.resolve("bound-" + System.nanoTime());
    Process p = receiver(address, ready);
    assumeTrue(p != null, "python3 is needed to receive the datagram");
    try {
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (!Files.exists(ready) && p.isAlive() && System.nanoTime() < end) {
        Thread.sleep(20);
      }
      assertTrue(Readiness.notify(address, message), "notify returned false");
      assertTrue(p.waitFor(20, TimeUnit.SECONDS));
      return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    } finally {
      p.destroyForcibly();
    }
  }

  @Test
  void notify_pathSocket(@TempDir Path dir) throws Exception {
    String address = dir.resolve("notify").toString();
    assertEquals("READY=1\nSTATUS=x ready", roundTrip(address, dir, "READY=1\nSTATUS=x ready"));
  }

  @Test
  void notify_abstractSocket(@TempDir Path dir) throws Exception {
    String address = "@flowfs-test-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
    assertEquals("STOPPING=1", roundTrip(address, dir, "STOPPING=1"));
  }

  @Test
  void notify_withoutSocket_onlyLogs() {
    assertFalse(Readiness.notify(null, "READY=1"));
    assertFalse(Readiness.notify("", "READY=1"));
    assertFalse(Readiness.notify("vsock:2:1234", "READY=1"));
  }

  @Test
  void notify_nobodyListening_doesNotThrow(@TempDir Path dir) {
    assertFalse(Readiness.notify(dir.resolve("nobody").toString(), "READY=1"));
  }

  @Test
  void sockaddrUn_abstractNameHasNoTrailingNul() {
    byte[] a = LibC.sockaddrUn("@ab");
    assertEquals(2 + 3, a.length);
    assertEquals(0, a[2]);
    assertArrayEquals(new byte[] {'a', 'b'}, new byte[] {a[3], a[4]});
    byte[] p = LibC.sockaddrUn("/run/x");
    assertEquals(2 + 6 + 1, p.length);
    assertEquals(0, p[p.length - 1]);
  }
}
