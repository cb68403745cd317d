package org.flowfs.common.config;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parsers for the value syntaxes of the config file: sizes, durations, addresses. */
public final class Values {
  private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*([kmgt]?)(i?b?)", Pattern.CASE_INSENSITIVE);
  private static final Pattern DURATION = Pattern.compile("(\\d+)\\s*(ms|s|m|h)?", Pattern.CASE_INSENSITIVE);

  private Values() {}

  /** {@code 65536}, {@code 64k}, {@code 64KiB}, {@code 1M}, {@code 2GiB}: powers of 1024. */
  public static long size(String s) {
    Matcher m = SIZE.matcher(s.trim());
    if (!m.matches()) {
      throw new IllegalArgumentException("'" + s + "' is not a size (e.g. 65536, 64KiB, 1MiB)");
    }
    long n = Long.parseLong(m.group(1));
    int shift = switch (m.group(2).toLowerCase(Locale.ROOT)) {
      case "k" -> 10;
      case "m" -> 20;
      case "g" -> 30;
      case "t" -> 40;
      default -> 0;
    };
    if (shift > 0 && n > (Long.MAX_VALUE >> shift)) {
      throw new IllegalArgumentException("'" + s + "' is too large");
    }
    return n << shift;
  }

  /** {@code 30s}, {@code 500ms}, {@code 2m}, {@code 1h}; a bare number is seconds. */
  public static Duration duration(String s) {
    Matcher m = DURATION.matcher(s.trim());
    if (!m.matches()) {
      throw new IllegalArgumentException("'" + s + "' is not a duration (e.g. 30s, 500ms)");
    }
    long n = Long.parseLong(m.group(1));
    String unit = m.group(2) == null ? "s" : m.group(2).toLowerCase(Locale.ROOT);
    try {
      return switch (unit) {
        case "ms" -> Duration.ofMillis(n);
        case "m" -> Duration.ofMinutes(n);
        case "h" -> Duration.ofHours(n);
        default -> Duration.ofSeconds(n);
      };
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("'" + s + "' is too long");
    }
  }

  /** {@code host:port}; port 0 picks a free port. */
  public static InetSocketAddress address(String s) {
    String t = s.trim();
    int colon = t.lastIndexOf(':');
    if (colon <= 0 || colon == t.length() - 1) {
      throw new IllegalArgumentException("'" + s + "' is not host:port");
    }
    String host = t.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    int port;
    try {
      port = Integer.parseInt(t.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("'" + s + "' has no numeric port");
    }
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("port " + port + " is out of range");
    }
    return InetSocketAddress.createUnresolved(host, port);
  }

  public static String formatSize(long bytes) {
    if (bytes % (1L << 30) == 0 && bytes > 0) {
      return (bytes >> 30) + "GiB";
    }
    if (bytes % (1L << 20) == 0 && bytes > 0) {
      return (bytes >> 20) + "MiB";
    }
    if (bytes % (1L << 10) == 0 && bytes > 0) {
      return (bytes >> 10) + "KiB";
    }
    return Long.toString(bytes);
  }

  public static String formatDuration(Duration d) {
    long ms = d.toMillis();
    return ms % 1000 == 0 ? (ms / 1000) + "s" : ms + "ms";
  }

  public static String formatAddress(InetSocketAddress a) {
    String h = a.getHostString();
    return (h.contains(":") ? "[" + h + "]" : h) + ":" + a.getPort();
  }
}
