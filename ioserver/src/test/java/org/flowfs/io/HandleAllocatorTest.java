package org.flowfs.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HandleAllocatorTest {
  private static final int SERVER = Handle.serverOfIo(0);

  @TempDir
  Path dir;

  @Test
  void allocate_neverTheSameHandleTwice_concurrently() throws Exception {
    Set<Handle> seen = java.util.concurrent.ConcurrentHashMap.newKeySet();
    try (HandleAllocator a = new HandleAllocator(dir.resolve("handles"), SERVER)) {
      ExecutorService pool = Executors.newFixedThreadPool(4);
      try {
        List<Future<Integer>> done = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
          int me = t;
          done.add(pool.submit((Callable<Integer>) () -> {
            int n = 0;
            for (int i = 0; i < 50; i++) {
              List<Handle> got = a.allocate(1 + (i * 7 + me) % 13);
              for (int j = 1; j < got.size(); j++) {
                assertEquals(got.get(j - 1).local() + 1, got.get(j).local(), "a batch is consecutive");
              }
              for (Handle h : got) {
                assertEquals(SERVER, h.server());
                assertTrue(seen.add(h), h + " handed out twice");
                assertTrue(a.issued(h));
              }
              n += got.size();
            }
            return n;
          }));
        }
        int total = 0;
        for (Future<Integer> f : done) {
          total += f.get(30, TimeUnit.SECONDS);
        }
        assertEquals(total, seen.size());
      } finally {
        pool.shutdownNow();
      }
    }
  }

  @Test
  void allocate_acrossReopen_continuesAfterTheLastHandle() throws IOException {
    Path state = dir.resolve("handles");
    Set<Handle> seen = new HashSet<>();
    long last = 0;
    for (int open = 0; open < 4; open++) {
      try (HandleAllocator a = new HandleAllocator(state, SERVER)) {
        for (Handle h : seen) {
          assertTrue(a.issued(h), "still issued after reopen: " + h);
        }
        for (int i = 0; i < 3; i++) {
          for (Handle h : a.allocate(5)) {
            assertTrue(seen.add(h), h + " handed out again after reopen");
            assertTrue(h.local() > last);
            last = h.local();
          }
        }
      }
    }
    assertEquals(60, seen.size());
  }

  @Test
  void allocate_firstHandleIsOne() throws IOException {
    try (HandleAllocator a = new HandleAllocator(dir.resolve("handles"), SERVER)) {
      assertEquals(List.of(Handle.of(SERVER, 1), Handle.of(SERVER, 2)), a.allocate(2));
    }
  }

  @Test
  void issued_onlyForHandlesOfThisServerHandedOut() throws IOException {
    try (HandleAllocator a = new HandleAllocator(dir.resolve("handles"), SERVER)) {
      List<Handle> got = a.allocate(3);
      assertTrue(a.issued(got.get(2)));
      assertFalse(a.issued(Handle.of(SERVER, 4)), "the next one is not issued yet");
      assertFalse(a.issued(Handle.of(SERVER, 1L << 40)));
      assertFalse(a.issued(Handle.of(SERVER + 1, 1)), "another server's handle");
      assertFalse(a.issued(Handle.of(Handle.META_SERVER, 1)), "a metadata handle");
      assertFalse(a.issued(new Handle((long) SERVER << Handle.LOCAL_BITS)), "local 0 is never handed out");
    }
  }

  @Test
  void allocate_rangeExhausted_isEnospc() throws IOException {
    Path state = dir.resolve("handles");
    Files.write(state, ByteBuffer.allocate(8).putLong(0, Handle.LOCAL_MASK - 10).array());
    try (HandleAllocator a = new HandleAllocator(state, SERVER)) {
      assertEquals(5, a.allocate(5).size());
      FsException e = assertThrows(FsException.class, () -> a.allocate(100));
      assertEquals(Errno.ENOSPC, e.errno());
      assertEquals(1, a.allocate(1).size(), "a refused batch reserves nothing");
    }
  }

  @Test
  void open_corruptOrImpossibleState_isRefused() throws IOException {
    Path state = dir.resolve("handles");
    Files.write(state, new byte[] {1, 2, 3});
    IOException e = assertThrows(IOException.class, () -> new HandleAllocator(state, SERVER));
    assertTrue(e.getMessage().contains(state.toString()), e.getMessage());
    for (long impossible : new long[] {0, -1, Handle.LOCAL_MASK + 1}) {
      Files.write(state, ByteBuffer.allocate(8).putLong(0, impossible).array());
      assertThrows(IOException.class, () -> new HandleAllocator(state, SERVER), "counter " + impossible);
    }
    assertEquals(0, openFilesNamed(state), "a refused state file is not left open");
  }

  /** File descriptors of this process open on {@code file} (Linux). */
  private static long openFilesNamed(Path file) throws IOException {
    Path real = file.toRealPath();
    long n = 0;
    try (java.util.stream.Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
      for (Path fd : (Iterable<Path>) fds::iterator) {
        try {
          n += Files.readSymbolicLink(fd).equals(real) ? 1 : 0;
        } catch (IOException e) {
          // closed meanwhile
        }
      }
    }
    return n;
  }
}
