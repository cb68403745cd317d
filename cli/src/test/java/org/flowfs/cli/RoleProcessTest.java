package org.flowfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The JVM flags of each daemon, as {@code bin/flowfs} gives them and as {@link RoleProcess} does: in step. */
class RoleProcessTest {
  private static final Pattern CASE = Pattern.compile("^\\s*([\\w|]+)\\) (?:heap|jit)=\"([^\"]*)\"", Pattern.MULTILINE);

  /** The JVM flags {@code bin/flowfs} gives {@code role}: its heap and JIT lines. */
  private static Set<String> launcherFlags(String role) throws IOException {
    String script = Files.readString(Path.of("..", "bin", "flowfs"));
    Matcher m = CASE.matcher(script);
    Set<String> flags = new TreeSet<>();
    while (m.find()) {
      if (Arrays.asList(m.group(1).split("\\|")).contains(role)) {
        flags.addAll(Arrays.asList(m.group(2).trim().split("\\s+")));
      }
    }
    if (flags.isEmpty()) {
      throw new AssertionError("bin/flowfs has no heap line for " + role);
    }
    return flags;
  }

  private static final Pattern EXPORT =
      Pattern.compile("^\\s*([\\w|]+)\\) export (\\w+)=\"\\$\\{\\2:-([^}]*)\\}\"", Pattern.MULTILINE);

  /** The variables {@code bin/flowfs} exports for {@code role} (when the caller has not set them). */
  private static Map<String, String> launcherEnvironment(String role) throws IOException {
    String script = Files.readString(Path.of("..", "bin", "flowfs"));
    Map<String, String> env = new TreeMap<>();
    Matcher m = EXPORT.matcher(script);
    while (m.find()) {
      if (Arrays.asList(m.group(1).split("\\|")).contains(role)) {
        env.put(m.group(2), m.group(3));
      }
    }
    return env;
  }

  private static Set<String> roleProcessFlags(String role) {
    return RoleProcess.command(List.of(role, "--config", "x.conf")).stream()
        .filter(a -> a.startsWith("-X"))
        .collect(Collectors.toCollection(TreeSet::new));
  }

  @Test
  void everyDaemon_getsTheSameFlags_fromTheLauncherAndFromRoleProcess() throws IOException {
    for (String role : List.of("metaserver", "ioserver", "mount", "up")) {
      Set<String> flags = roleProcessFlags(role);
      assertEquals(launcherFlags(role), flags, role);
      assertTrue(flags.contains("-XX:CompileThresholdScaling=0.1"), role + " compiles its per-flow code early");
    }
  }

  @Test
  void everyRole_getsTheSameEnvironment_fromTheLauncherAndFromRoleProcess() throws IOException {
    for (String role : List.of("metaserver", "ioserver", "mount", "up")) {
      assertEquals(launcherEnvironment(role), new TreeMap<>(RoleProcess.environment(role)), role);
    }
    assertEquals("2", launcherEnvironment("mount").get("MALLOC_ARENA_MAX"), "bin/flowfs limits a mount's malloc arenas");
  }

  @Test
  void flowfsJavaOpts_areSplitAtBlanks_likeTheLaunchersShellDoes() {
    assertEquals(List.of(), RoleProcess.extraFlags(null));
    assertEquals(List.of(), RoleProcess.extraFlags("  "));
    assertEquals(List.of("-XX:+UseSerialGC", "-Xlog:gc:file=/tmp/gc.log"),
        RoleProcess.extraFlags(" -XX:+UseSerialGC \t -Xlog:gc:file=/tmp/gc.log\n"));
  }
}
