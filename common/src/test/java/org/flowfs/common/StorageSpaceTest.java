package org.flowfs.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StorageSpaceTest {
  @TempDir
  Path dir;

  @Test
  void of_reportsTheFileSystemOfTheDirectory() throws IOException {
    StorageSpace s = StorageSpace.of(dir);
    assertEquals(Files.getFileStore(dir).getTotalSpace(), s.total());
    assertTrue(s.free() <= s.total() && s.available() <= s.free(), s::toString);
    assertNotEquals(0, s.device());
  }

  @Test
  void directoriesOnOneFileSystem_haveOneDevice_andOthersAnother() throws IOException {
    Path a = Files.createDirectories(dir.resolve("io0"));
    Path b = Files.createDirectories(dir.resolve("io1/data"));
    assertEquals(StorageSpace.of(a).device(), StorageSpace.of(b).device());
    Path shm = Path.of("/dev/shm");
    assumeTrue(Files.isDirectory(shm)
        && !Files.getAttribute(shm, "unix:dev").equals(Files.getAttribute(dir, "unix:dev")), "no second file system");
    assertNotEquals(StorageSpace.of(a).device(), StorageSpace.of(shm).device());
  }

  @Test
  void sum_countsEachFileSystemOnce_andNothingForNone() {
    StorageSpace disk = new StorageSpace(1000, 600, 500, 7);
    StorageSpace sameDiskLater = new StorageSpace(1000, 590, 490, 7);
    StorageSpace other = new StorageSpace(100, 50, 40, 9);
    assertEquals(new StorageSpace(1100, 650, 540, 0),
        StorageSpace.sum(List.of(disk, StorageSpace.NONE, sameDiskLater, other, disk)));
    assertEquals(new StorageSpace(0, 0, 0, 0), StorageSpace.sum(List.of(StorageSpace.NONE)));
  }

  @Test
  void of_aMissingDirectory_failsWithEioNamingIt() {
    Path missing = dir.resolve("not-there");
    FsException e = assertThrows(FsException.class, () -> StorageSpace.of(missing));
    assertEquals(Errno.EIO, e.errno());
    assertTrue(e.getMessage().contains(missing.toString()), e.getMessage());
  }
}
