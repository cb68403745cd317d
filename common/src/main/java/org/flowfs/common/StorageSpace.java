package org.flowfs.common;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.HashSet;
import java.util.Set;
import java.util.UUID;

/**
 * The capacity of the local file system a server keeps its data on, in bytes, and which file
 * system that is ({@code device}: the same number for every directory on one file system of one
 * machine, 0 for a server that keeps nothing on disk).
 *
 * <p>Servers often share a disk: on one machine, the metadata server and four I/O servers of the
 * default set-up all keep their data in directories of the same file system, and the I/O servers
 * of a site's storage node may share its array. {@link #sum} counts each file system once, so
 * {@code df} on a mount shows the disks FlowFS stores on, not their size times the servers on them.
 * The metadata server's file system counts too: the heads of files (their first bytes) and all
 * metadata live there.
 */
public record StorageSpace(long total, long free, long available, long device) {
  /** What a server that stores nothing on disk reports. */
  public static final StorageSpace NONE = new StorageSpace(0, 0, 0, 0);

  /**
   * The capacity of the file system holding {@code dir}.
   *
   * @throws FsException EIO naming {@code dir} if the file system cannot be asked
   */
  public static StorageSpace of(Path dir) {
    try {
      FileStore store = Files.getFileStore(dir);
      return new StorageSpace(store.getTotalSpace(), store.getUnallocatedSpace(), store.getUsableSpace(), device(dir));
    } catch (IOException | RuntimeException e) {
      throw new FsException(Errno.EIO, "statfs of " + dir + " failed: " + e.getMessage(), e);
    }
  }

  /**
   * The file system {@code dir} is on, as a number unique across machines: the machine's identity
   * ({@code /etc/machine-id}, else this boot's id, else the host name) and the file system's
   * device number ({@code st_dev}), hashed; never 0.
   */
  static long device(Path dir) throws IOException {
    Object dev = Files.getAttribute(dir, "unix:dev");
    String id = MachineId.VALUE + "/" + dev;
    long d = UUID.nameUUIDFromBytes(id.getBytes(StandardCharsets.UTF_8)).getMostSignificantBits();
    return d != 0 ? d : 1;
  }

  /**
   * The capacity of all of {@code spaces} together, each file system (device) once; {@link
   * #NONE}s add nothing. Its device is 0.
   */
  public static StorageSpace sum(Collection<StorageSpace> spaces) {
    Set<Long> seen = new HashSet<>();
    long total = 0;
    long free = 0;
    long available = 0;
    for (StorageSpace s : spaces) {
      if (s.device() != 0 && seen.add(s.device())) {
        total += s.total();
        free += s.free();
        available += s.available();
      }
    }
    return new StorageSpace(total, free, available, 0);
  }

  /** This machine's identity, read once. */
  private static final class MachineId {
    static final String VALUE = read();

    private static String read() {
      for (String f : new String[] {"/etc/machine-id", "/proc/sys/kernel/random/boot_id"}) {
        try {
          String s = Files.readString(Path.of(f)).strip();
          if (!s.isEmpty()) {
            return s;
          }
        } catch (IOException | RuntimeException e) {
          // try the next
        }
      }
      try {
        return java.net.InetAddress.getLocalHost().getHostName();
      } catch (IOException e) {
        return "unknown";
      }
    }
  }
}
