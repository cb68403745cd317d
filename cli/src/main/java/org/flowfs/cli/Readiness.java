package org.flowfs.cli;

import java.nio.charset.StandardCharsets;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells the service manager how this process is doing: systemd's {@code sd_notify} protocol, one
 * datagram of {@code KEY=value} lines to the Unix socket in {@code $NOTIFY_SOCKET} (a path, or an
 * abstract name written with a leading '@'). Without that variable (not started by systemd, or
 * not {@code Type=notify}) it only logs. Never fails the caller: a notification that cannot be
 * sent is logged.
 */
final class Readiness {
  private static final Logger LOG = LoggerFactory.getLogger(Readiness.class);
  static final String SOCKET_ENV = "NOTIFY_SOCKET";

  private Readiness() {}

  /** The service is ready: it listens (servers) or its file system answers (mounts). */
  static void ready(String what) {
    LOG.info("{} ready", what);
    notify("READY=1\nSTATUS=" + what + " ready\nMAINPID=" + ProcessHandle.current().pid());
  }

  /** The service is shutting down. */
  static void stopping(String what) {
    notify("STOPPING=1\nSTATUS=" + what + " stopping");
  }

  /** Sends {@code message} to {@code $NOTIFY_SOCKET}; false when there is none or sending failed. */
  static boolean notify(String message) {
    return notify(System.getenv(SOCKET_ENV), message);
  }

  static boolean notify(String socket, String message) {
    if (socket == null || socket.isEmpty()) {
      return false;
    }
    if (!socket.startsWith("/") && !socket.startsWith("@")) {
      LOG.warn("cannot notify the service manager: unsupported {}={}", SOCKET_ENV, socket);
      return false;
    }
    try {
      LibC.sendDatagram(socket, message.getBytes(StandardCharsets.UTF_8));
      return true;
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("cannot notify the service manager at {}: {}", socket, e.toString());
      return false;
    }
  }
}
