package org.flowfs.common.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;

/** The value syntaxes (sizes, durations, addresses) and the key-by-key reader, {@link ConfigSource}. */
class ValuesTest {

  @Test
  void size_syntax() {
    Map<String, Long> ok = Map.ofEntries(
        Map.entry("0", 0L),
        Map.entry("65536", 65536L),
        Map.entry("64k", 64L << 10),
        Map.entry("64K", 64L << 10),
        Map.entry("64KiB", 64L << 10),
        Map.entry("64kb", 64L << 10),
        Map.entry("64 KiB", 64L << 10),
        Map.entry(" 8KiB ", 8L << 10),
        Map.entry("1M", 1L << 20),
        Map.entry("1MiB", 1L << 20),
        Map.entry("2GiB", 2L << 30),
        Map.entry("2g", 2L << 30),
        Map.entry("1t", 1L << 40),
        Map.entry("512B", 512L),
        Map.entry("8388607T", 8388607L << 40));
    ok.forEach((text, bytes) -> assertEquals(bytes, Values.size(text), text));
    for (String bad : new String[] {"", "k", "1.5M", "-1", "1P", "M1", "1 M B", "0x10", "8388608T", "99999999999999999999"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Values.size(bad), bad);
      assertTrue(e.getMessage() != null && !e.getMessage().isEmpty());
    }
  }

  @Test
  void duration_syntax() {
    Map<String, Duration> ok = Map.of(
        "500ms", Duration.ofMillis(500),
        "30s", Duration.ofSeconds(30),
        "45", Duration.ofSeconds(45),
        "2m", Duration.ofMinutes(2),
        "1h", Duration.ofHours(1),
        "0", Duration.ZERO,
        " 10 s ", Duration.ofSeconds(10),
        "250MS", Duration.ofMillis(250));
    ok.forEach((text, d) -> assertEquals(d, Values.duration(text), text));
    for (String bad : new String[] {"", "s", "1.5s", "-1s", "5d", "1 h m", "9223372036854775807h", "9223372036854775807m",
        "99999999999999999999s"}) {
      assertThrows(IllegalArgumentException.class, () -> Values.duration(bad), bad);
    }
  }

  @Test
  void address_syntax() {
    assertEquals(InetSocketAddress.createUnresolved("127.0.0.1", 0), Values.address("127.0.0.1:0"));
    assertEquals(InetSocketAddress.createUnresolved("::1", 7000), Values.address("[::1]:7000"));
    assertEquals(InetSocketAddress.createUnresolved("host.example", 65535), Values.address(" host.example:65535 "));
    assertEquals("[::1]:7000", Values.formatAddress(Values.address("[::1]:7000")));
    for (String bad : new String[] {"host", "host:", ":80", "host:x", "host:65536", "host:-1"}) {
      assertThrows(IllegalArgumentException.class, () -> Values.address(bad), bad);
    }
  }

  @Property(tries = 500)
  void formatSize_thenSize_isTheIdentity(@ForAll @LongRange(min = 0, max = 1L << 50) long bytes) {
    assertEquals(bytes, Values.size(Values.formatSize(bytes)));
  }

  @Test
  void formatSize_usesTheLargestWholeUnit() {
    assertEquals("0", Values.formatSize(0));
    assertEquals("1023", Values.formatSize(1023));
    assertEquals("1KiB", Values.formatSize(1024));
    assertEquals("1536", Values.formatSize(1536));
    assertEquals("1025KiB", Values.formatSize((1 << 20) + 1024));
    assertEquals("3MiB", Values.formatSize(3 << 20));
    assertEquals("1024GiB", Values.formatSize(1L << 40));
    assertEquals("100ms", Values.formatDuration(Duration.ofMillis(100)));
    assertEquals("3600s", Values.formatDuration(Duration.ofHours(1)));
  }

  @Property(tries = 500)
  void formatDuration_thenDuration_isTheIdentity(@ForAll @LongRange(min = 0, max = 1L << 40) long millis) {
    Duration d = Duration.ofMillis(millis);
    assertEquals(d, Values.duration(Values.formatDuration(d)));
  }

  @Test
  void configSource_readsRecordEffectiveValuesAndProblems() {
    ConfigSource s = new ConfigSource("src", Map.of(
        "a.bool", "yes", "b.bool", "maybe", "c.int", "7", "d.choice", "x", "e.path", "/p", "f.str", "abc", "typo", "1"));
    assertTrue(s.bool("a.bool", false));
    assertEquals(false, s.bool("b.bool", false));
    assertEquals(7, s.integer("c.int", 1, 0, 10));
    assertEquals(3, s.integer("absent.int", 3, 0, 10));
    assertEquals("y", s.choice("d.choice", "y", Set.of("y", "z")));
    assertEquals(java.nio.file.Path.of("/p"), s.path("e.path", null, false));
    assertEquals(null, s.path("absent.path", null, false));
    assertEquals("abc", s.string("f.str", "d", Pattern.compile("[a-z]+"), "lower case"));
    assertEquals(null, s.string("required.str", null));
    assertEquals(Map.of("a.bool", "true", "c.int", "7", "absent.int", "3", "e.path", "/p", "f.str", "abc"), s.effective());
    ConfigException e = assertThrows(ConfigException.class, s::finish);
    assertEquals(List.of(
        "src: key 'b.bool': 'maybe' is not true or false",
        "src: key 'd.choice': 'x' is not one of [y, z]",
        "src: key 'required.str' is required but missing",
        "src: key 'typo' is not a known setting"), e.problems());
  }

  @Test
  void configSource_indices_listsTheNumberedGroups() {
    ConfigSource s = new ConfigSource("src", Map.of(
        "io.0.address", "a:1", "io.10.address", "b:1", "io.2.dir", "/d", "io.threads", "4", "io.x.address", "c:1"));
    assertEquals(List.of(0, 2, 10), s.indices("io"));
    ConfigSource huge = new ConfigSource("src", Map.of("io.99999999999.address", "a:1"));
    assertEquals(List.of(), huge.indices("io"));
    assertThrows(ConfigException.class, huge::finish);
  }
}
