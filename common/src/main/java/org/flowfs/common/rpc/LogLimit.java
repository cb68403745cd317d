package org.flowfs.common.rpc;

/**
 * Rate limit for log lines a peer can cause (bad frames, failed handshakes): at most {@code
 * perMinute} lines a minute; what goes over is counted and reported with the next line allowed.
 * Thread safe.
 */
final class LogLimit {
  private static final long MINUTE = 60_000_000_000L;
  private final int perMinute;
  private long windowStart = System.nanoTime();
  private int inWindow;
  private long suppressed;

  LogLimit(int perMinute) {
    this.perMinute = perMinute;
  }

  /**
   * Whether a line may be logged now: -1 if not, else how many lines were suppressed since the
   * last one allowed.
   */
  synchronized long admit() {
    long now = System.nanoTime();
    if (now - windowStart >= MINUTE) {
      windowStart = now;
      inWindow = 0;
    }
    if (inWindow >= perMinute) {
      suppressed++;
      return -1;
    }
    inWindow++;
    long s = suppressed;
    suppressed = 0;
    return s;
  }

  /** The text to append to an allowed line: empty, or how many similar lines were left out. */
  static String note(long suppressed) {
    return suppressed <= 0 ? "" : " (" + suppressed + " similar lines suppressed)";
  }
}
