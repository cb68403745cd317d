package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A small file read through the mount: its open brings the fresh attributes and the whole file
 * in one call to the metadata server, and the mount puts the bytes into the kernel's page cache
 * before it answers the OPEN, so the read itself never reaches FlowFS. Never so that a reader sees
 * bytes of before another client's change, or past the file's new end.
 */
class OpenStoreTest {
  static EmbeddedDeployment fs;
  static Path m;

  @BeforeAll
  static void up(@TempDir Path tmp) throws Exception {
    fs = new EmbeddedDeployment(tmp, 4);
    m = fs.mountPoint();
  }

  @AfterAll
  static void down() {
    if (fs != null) {
      fs.close();
    }
  }

  private static byte[] random(int size, long seed) {
    byte[] b = new byte[size];
    new Random(seed).nextBytes(b);
    return b;
  }

  private static void dropCaches() throws Exception {
    Sh.ok(m, "echo 3 > /proc/sys/vm/drop_caches");
  }

  /** {@code name}'s bytes as Python reads them in one process: open, read 1 MiB at a time to the end, close. */
  private static byte[] read(String name) throws Exception {
    String py = "import sys\nwith open('" + name + "','rb') as f: sys.stdout.write(f.read().hex())\n";
    return hex(Sh.ok(m, "/usr/bin/python3 -c \"" + py + "\""));
  }

  private static byte[] hex(String s) {
    return java.util.HexFormat.of().parseHex(s.strip());
  }

  @Test
  void smallFilesReadCold_areServedByTheKernel_withNoFuseRead() throws Exception {
    int[] sizes = {1, 100, 4095, 4096, 4097, 12_345, 65_536};
    byte[][] data = new byte[sizes.length][];
    Files.createDirectories(m.resolve("small"));
    for (int i = 0; i < sizes.length; i++) {
      data[i] = random(sizes[i], i);
      Files.write(m.resolve("small/f" + i), data[i]);
    }
    dropCaches(); // the kernel forgets the files' nodes and pages
    long reads = fs.counter("fuse.read");
    long stores = fs.counter("open-store.stores");
    for (int i = 0; i < sizes.length; i++) {
      assertArrayEquals(data[i], read("small/f" + i), "file of " + sizes[i] + " bytes");
    }
    assertEquals(sizes.length, fs.counter("open-store.stores") - stores, "every file's pages stored at its open");
    assertEquals(0, fs.counter("fuse.read") - reads, "FUSE reads");

    dropCaches();
    for (int i = 0; i < sizes.length; i++) { // and again once the kernel forgot them
      assertArrayEquals(data[i], read("small/f" + i), "file of " + sizes[i] + " bytes, read again");
    }
    assertEquals(2L * sizes.length, fs.counter("open-store.stores") - stores);
  }

  /**
   * A file the kernel cached whole, shrunk and rewritten by another client: the next open reads
   * the new bytes, and a read past the new end finds nothing of the old ones.
   */
  @Test
  void anotherClientsShrinkingRewrite_showsAtTheNextOpen_withNothingPastTheNewEnd() throws Exception {
    byte[] old = random(12_288, 20);
    Files.write(m.resolve("shrunk"), old);
    dropCaches();
    assertArrayEquals(old, read("shrunk")); // the kernel caches all three pages
    byte[] next = random(3_000, 21);
    try (OtherClient other = new OtherClient(fs)) {
      other.overwrite("/shrunk", next);
    }
    String py = "import os,sys\nfd=os.open('shrunk',os.O_RDONLY)\n"
        + "sys.stdout.write(os.pread(fd,4096,8192).hex()+'/'+os.pread(fd,4096,4096).hex()+'/'+os.pread(fd,65536,0).hex())\n";
    String[] got = Sh.ok(m, "/usr/bin/python3 -c \"" + py + "\"").strip().split("/", -1);
    assertEquals(0, got[0].length() / 2, "bytes read of the old third page");
    assertEquals(0, got[1].length() / 2, "bytes read of the old second page");
    assertArrayEquals(next, hex(got[2]));
  }

  /** The same with the kernel's node of the file forgotten before the change: its open stores the new bytes. */
  @Test
  void anotherClientsChange_afterTheKernelForgotTheFile_isWhatTheOpenStores() throws Exception {
    byte[] old = random(8_192, 30);
    Files.write(m.resolve("changed"), old);
    dropCaches();
    assertArrayEquals(old, read("changed"));
    dropCaches();
    byte[] next = random(5_000, 31);
    try (OtherClient other = new OtherClient(fs)) {
      other.overwrite("/changed", next);
    }
    long stores = fs.counter("open-store.stores");
    assertArrayEquals(next, read("changed"));
    assertEquals(1, fs.counter("open-store.stores") - stores);
  }

  /** While an open of the file may write, a reader's open stores nothing; the reader sees what was written. */
  @Test
  void aFileOpenForWriting_isReadThroughFlowFs() throws Exception {
    Files.write(m.resolve("busy"), random(4096, 40));
    dropCaches();
    long stores = fs.counter("open-store.stores");
    String py = "import os,sys\nw=os.open('busy',os.O_WRONLY); os.pwrite(w,b'written',0)\n"
        + "with open('busy','rb') as f: sys.stdout.write(f.read(7).decode())\nos.close(w)\n";
    assertEquals("written", Sh.ok(m, "/usr/bin/python3 -c \"" + py + "\"").strip());
    assertEquals(0, fs.counter("open-store.stores") - stores, "stores while a writable open exists");
  }

  /** With {@code client.open-store = false} the mount answers a small file's read itself, as any other read. */
  @Test
  void turnedOff_theReadIsAFuseRead(@TempDir Path tmp) throws Exception {
    try (EmbeddedDeployment off = new EmbeddedDeployment(tmp, 2, "client.open-store = false\n")) {
      byte[] data = random(4096, 50);
      Files.write(off.mountPoint().resolve("f"), data);
      dropCaches();
      long reads = off.counter("fuse.read");
      String py = "import sys\nwith open('f','rb') as f: sys.stdout.write(f.read().hex())\n";
      assertArrayEquals(data, hex(Sh.ok(off.mountPoint(), "/usr/bin/python3 -c \"" + py + "\"")));
      assertEquals(0, off.counter("open-store.stores"));
      assertEquals(1, off.counter("fuse.read") - reads, "FUSE reads");
    }
  }
}
