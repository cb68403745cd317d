package org.flowfs.fuse;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Reads {@code /proc/self/mountinfo}: is a directory a mount point, and of what type. */
public final class MountTable {
  private MountTable() {}

  /** The file-system type mounted exactly at {@code dir}, or null if nothing is. */
  public static String typeAt(Path dir) {
    String want = dir.toAbsolutePath().normalize().toString();
    List<String> lines;
    try {
      lines = Files.readAllLines(Path.of("/proc/self/mountinfo"));
    } catch (IOException e) {
      return null;
    }
    String found = null;
    for (String line : lines) {
      String[] f = line.split(" ");
      if (f.length < 10) {
        continue;
      }
      String mp = unescape(f[4]);
      if (mp.equals(want)) {
        int dash = line.indexOf(" - ");
        found = dash < 0 ? "unknown" : line.substring(dash + 3).split(" ")[0];
      }
    }
    return found;
  }

  private static String unescape(String s) {
    return s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\");
  }
}
