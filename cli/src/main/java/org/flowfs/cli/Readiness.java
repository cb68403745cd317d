package org.flowfs.cli;

import java.io.IOException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Tells the service manager that this process is ready to serve (systemd's sd_notify). */
final class Readiness {
  private static final Logger LOG = LoggerFactory.getLogger(Readiness.class);

  private Readiness() {}

  static void ready(String what) {
    LOG.info("{} ready", what);
    String socket = System.getenv("NOTIFY_SOCKET");
    if (socket == null || socket.isEmpty()) {
      return;
    }
    try {
      Process p = new ProcessBuilder("systemd-notify", "--ready", "--status=" + what + " ready")
          .redirectErrorStream(true).start();
      if (!p.waitFor(5, TimeUnit.SECONDS) || p.exitValue() != 0) {
        LOG.warn("systemd-notify failed: {}", new String(p.getInputStream().readAllBytes()).strip());
      }
    } catch (IOException e) {
      LOG.warn("cannot notify systemd: {}", e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
