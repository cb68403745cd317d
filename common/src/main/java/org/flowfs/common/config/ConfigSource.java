package org.flowfs.common.config;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.flowfs.common.CpuSet;

/**
 * The raw key/value pairs of one config file, read key by key by the config records. Each read
 * states the key's default and bounds; a bad or missing value is recorded as a problem naming the
 * key, and {@link #finish()} reports all problems at once, along with keys nobody read (typos).
 * Effective values are remembered so a process can log them once at start.
 */
public final class ConfigSource {
  private final String origin;
  private final Map<String, String> raw;
  private final Set<String> used = new TreeSet<>();
  private final List<String> problems = new ArrayList<>();
  private final Map<String, String> effective = new TreeMap<>();

  public ConfigSource(String origin, Map<String, String> raw) {
    this.origin = origin;
    this.raw = new TreeMap<>(raw);
  }

  public String origin() {
    return origin;
  }

  private <T> T read(String key, T def, Function<String, T> parse, Function<T, String> show) {
    used.add(key);
    String v = raw.get(key);
    if (v == null || v.isBlank()) {
      if (def == null) {
        problems.add("key '" + key + "' is required but missing");
      } else {
        effective.put(key, show.apply(def));
      }
      return def;
    }
    try {
      T t = parse.apply(v.trim());
      effective.put(key, show.apply(t));
      return t;
    } catch (IllegalArgumentException e) {
      problems.add("key '" + key + "': " + e.getMessage());
      return def;
    }
  }

  /** A list of CPUs ({@link CpuSet#parse}); empty when not set. */
  public CpuSet cpus(String key) {
    return read(key, CpuSet.EMPTY, CpuSet::parse, CpuSet::toString);
  }

  /** A string; {@code def == null} makes the key required. */
  public String string(String key, String def) {
    return read(key, def, s -> s, s -> s);
  }

  /** A string matching {@code pattern}, described as {@code what} in errors. */
  public String string(String key, String def, Pattern pattern, String what) {
    return read(key, def, s -> {
      if (!pattern.matcher(s).matches()) {
        throw new IllegalArgumentException("'" + s + "' is not " + what);
      }
      return s;
    }, s -> s);
  }

  public String secret(String key, String def, int minLength) {
    return read(key, def, s -> {
      if (s.length() < minLength) {
        throw new IllegalArgumentException("must be at least " + minLength + " characters");
      }
      return s;
    }, s -> "(" + s.length() + " characters)");
  }

  public int integer(String key, int def, int min, int max) {
    return read(key, def, s -> {
      int n;
      try {
        n = Integer.parseInt(s);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("'" + s + "' is not an integer");
      }
      return bounded(n, min, max);
    }, String::valueOf);
  }

  /** What {@link #sizeOrAuto} returns for {@code auto}: the reader picks the size for the machine it runs on. */
  public static final long AUTO = -1;

  /** A size as {@link #size} reads it, or {@code auto} ({@link #AUTO}); {@code def} may be {@link #AUTO}. */
  public long sizeOrAuto(String key, long def, long min, long max) {
    return read(key, def, s -> "auto".equalsIgnoreCase(s) ? AUTO : sizeIn(s, min, max),
        n -> n == AUTO ? "auto" : Values.formatSize(n));
  }

  public long size(String key, long def, long min, long max) {
    return read(key, def, s -> sizeIn(s, min, max), Values::formatSize);
  }

  private static long sizeIn(String s, long min, long max) {
    long n = Values.size(s);
    if (n < min || n > max) {
      throw new IllegalArgumentException(
          Values.formatSize(n) + " is outside " + Values.formatSize(min) + ".." + Values.formatSize(max));
    }
    return n;
  }

  public Duration duration(String key, Duration def, Duration min, Duration max) {
    return read(key, def, s -> {
      Duration d = Values.duration(s);
      if (d.compareTo(min) < 0 || d.compareTo(max) > 0) {
        throw new IllegalArgumentException(
            Values.formatDuration(d) + " is outside " + Values.formatDuration(min) + ".." + Values.formatDuration(max));
      }
      return d;
    }, Values::formatDuration);
  }

  public boolean bool(String key, boolean def) {
    return read(key, def, s -> switch (s.toLowerCase()) {
      case "true", "yes", "on", "1" -> true;
      case "false", "no", "off", "0" -> false;
      default -> throw new IllegalArgumentException("'" + s + "' is not true or false");
    }, String::valueOf);
  }

  public String choice(String key, String def, Set<String> allowed) {
    return read(key, def, s -> {
      if (!allowed.contains(s)) {
        throw new IllegalArgumentException("'" + s + "' is not one of " + new TreeSet<>(allowed));
      }
      return s;
    }, s -> s);
  }

  /** A path; {@code def == null} and {@code required == false} returns null when absent. */
  public Path path(String key, Path def, boolean required) {
    if (!required && def == null && !has(key)) {
      used.add(key);
      return null;
    }
    return read(key, def, s -> Path.of(s), Path::toString);
  }

  public InetSocketAddress address(String key, InetSocketAddress def) {
    return read(key, def, Values::address, Values::formatAddress);
  }

  public boolean has(String key) {
    String v = raw.get(key);
    return v != null && !v.isBlank();
  }

  /** The indices {@code n} of keys {@code prefix.n.*}, in order. */
  public List<Integer> indices(String prefix) {
    Pattern p = Pattern.compile(Pattern.quote(prefix) + "\\.(\\d+)\\..+");
    TreeSet<Integer> ids = new TreeSet<>();
    for (String k : raw.keySet()) {
      Matcher m = p.matcher(k);
      if (m.matches()) {
        try {
          ids.add(Integer.parseInt(m.group(1)));
        } catch (NumberFormatException e) {
          problems.add("key '" + k + "': index out of range");
        }
      }
    }
    return new ArrayList<>(ids);
  }

  public void problem(String message) {
    problems.add(message);
  }

  private static int bounded(int n, int min, int max) {
    if (n < min || n > max) {
      throw new IllegalArgumentException(n + " is outside " + min + ".." + max);
    }
    return n;
  }

  /** Throws a {@link ConfigException} with every problem and every unknown key, if any. */
  public void finish() {
    List<String> all = new ArrayList<>(problems);
    for (String k : raw.keySet()) {
      if (!used.contains(k)) {
        all.add("key '" + k + "' is not a known setting");
      }
    }
    if (!all.isEmpty()) {
      List<String> withOrigin = new ArrayList<>();
      for (String p : all) {
        withOrigin.add(origin + ": " + p);
      }
      throw new ConfigException(withOrigin);
    }
  }

  /** Every key read and its effective value (secrets masked), for a log line at start. */
  public Map<String, String> effective() {
    return Collections.unmodifiableMap(effective);
  }
}
