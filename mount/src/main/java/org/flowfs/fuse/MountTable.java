package org.flowfs.fuse;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/** Reads {@code /proc/self/mountinfo}: is a directory a mount point, of what type, on what device. */
public final class MountTable {
  private MountTable() {}

  /** The file-system type mounted exactly at {@code dir}, or null if nothing is. */
  public static String typeAt(Path dir) {
    String line = lineAt(dir);
    if (line == null) {
      return null;
    }
    int dash = line.indexOf(" - ");
    return dash < 0 ? "unknown" : line.substring(dash + 3).split(" ")[0];
  }

  /** The device ("major:minor") of what is mounted exactly at {@code dir}, or null if nothing is. */
  static String deviceAt(Path dir) {
    String line = lineAt(dir);
    return line == null ? null : line.split(" ")[2];
  }

  /**
   * Every mount point at or beneath {@code dir}, deepest first (the order to unmount them in):
   * e.g. the mounts a killed run left behind in its work directory.
   */
  public static List<Path> mountsUnder(Path dir) {
    Path top = dir.toAbsolutePath().normalize();
    List<Path> found = new ArrayList<>();
    for (String line : mountinfo()) {
      String[] f = line.split(" ");
      if (f.length >= 10) {
        Path mp = Path.of(unescape(f[4]));
        if (mp.startsWith(top) && !found.contains(mp)) {
          found.add(mp);
        }
      }
    }
    found.sort(Comparator.comparingInt(Path::getNameCount).reversed());
    return found;
  }

  /** The last line of mountinfo for a mount exactly at {@code dir} (the one on top), or null. */
  private static String lineAt(Path dir) {
    String want = dir.toAbsolutePath().normalize().toString();
    String found = null;
    for (String line : mountinfo()) {
      String[] f = line.split(" ");
      if (f.length >= 10 && unescape(f[4]).equals(want)) {
        found = line;
      }
    }
    return found;
  }

  private static List<String> mountinfo() {
    try {
      return Files.readAllLines(Path.of("/proc/self/mountinfo"));
    } catch (IOException e) {
      return List.of();
    }
  }

  private static String unescape(String s) {
    return s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\");
  }
}
