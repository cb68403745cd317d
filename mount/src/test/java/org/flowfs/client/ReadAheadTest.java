package org.flowfs.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Layout;
import org.flowfs.common.wire.LeakCheck;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** {@link ReadAhead} over a {@link MemoryDataPath} holding a file of random bytes. */
@ExtendWith(LeakCheck.class)
class ReadAheadTest {
  private static final Layout LAYOUT = StripeMapTest.layout(DistSpec.of("simple_stripe", 4096), 3);
  private static final int WINDOW = 64 * 1024;
  private static final int SIZE = 10 * WINDOW + 12345;
  private static final Duration TIMEOUT = Duration.ofSeconds(5);

  private final MemoryDataPath path = new MemoryDataPath();
  private byte[] file;
  private ReadAhead ra;

  @BeforeEach
  void fillFile() {
    file = WriteBehindTest.bytes(7, SIZE);
    path.store(LAYOUT, 0, file);
  }

  @AfterEach
  void cleanUp() {
    if (ra != null) {
      ra.invalidate();
    }
    path.close();
  }

  private ReadAhead readAhead(int window, ByteBufAllocator alloc) {
    ra = new ReadAhead(path, LAYOUT, window, TIMEOUT, alloc);
    return ra;
  }

  @Test
  void read_sequential_rightBytesFromWholeWindows() {
    path.readDelay(n -> 2L);
    ReadAhead r = readAhead(WINDOW, ByteBufAllocator.DEFAULT);
    for (long at = 0; at < SIZE; at += 4096) {
      int n = (int) Math.min(4096, SIZE - at);
      assertArrayEquals(Arrays.copyOfRange(file, (int) at, (int) at + n), read(r, at, n, SIZE), "at " + at);
    }
    List<MemoryDataPath.Call> reads = path.reads();
    assertEquals(11, reads.size(), "each window fetched once: " + reads);
    for (MemoryDataPath.Call c : reads) {
      assertEquals(0, c.offset() % WINDOW, "window-aligned fetches only: " + c);
      assertEquals(Math.min(WINDOW, SIZE - c.offset()), c.length());
    }
  }

  @Test
  void read_sequential_hasTheNextWindowOnItsWay() {
    ReadAhead r = readAhead(WINDOW, ByteBufAllocator.DEFAULT);
    read(r, 0, 100, SIZE);
    assertEquals(List.of(new MemoryDataPath.Call(0, 0, WINDOW), new MemoryDataPath.Call(1, WINDOW, WINDOW)), path.reads());
  }

  @Test
  void read_acrossWindowBoundaries() {
    ReadAhead r = readAhead(WINDOW, ByteBufAllocator.DEFAULT);
    // from the middle of window 0 across all of window 1 into window 2, then on across the next edge
    long at = WINDOW / 2;
    int n = 2 * WINDOW;
    assertArrayEquals(Arrays.copyOfRange(file, (int) at, (int) at + n), read(r, at, n, SIZE));
    at += n;
    assertArrayEquals(Arrays.copyOfRange(file, (int) at, (int) at + 10), read(r, at, 10, SIZE));
    at = 3L * WINDOW - 5;
    assertArrayEquals(Arrays.copyOfRange(file, (int) at, (int) at + 10), read(r, at, 10, SIZE));
    // the last bytes of the file, in its short last window
    assertArrayEquals(Arrays.copyOfRange(file, SIZE - 100, SIZE), read(r, SIZE - 100, 100, SIZE));
  }

  @Test
  void read_random_rightBytes() {
    ReadAhead r = readAhead(WINDOW, ByteBufAllocator.DEFAULT);
    Random rnd = new Random(11);
    for (int i = 0; i < 300; i++) {
      long at = rnd.nextInt(SIZE);
      int n = 1 + rnd.nextInt((int) Math.min(3 * WINDOW, SIZE - at));
      assertArrayEquals(Arrays.copyOfRange(file, (int) at, (int) at + n), read(r, at, n, SIZE), "read " + i);
    }
  }

  @Test
  void read_backwards_rightBytes() {
    ReadAhead r = readAhead(WINDOW, ByteBufAllocator.DEFAULT);
    for (long end = SIZE; end > 0; end -= 5000) {
      long at = Math.max(0, end - 5000);
      int n = (int) (end - at);
      assertArrayEquals(Arrays.copyOfRange(file, (int) at, (int) end), read(r, at, n, SIZE), "at " + at);
    }
  }

  @Test
  void read_afterInvalidate_seesNewData() {
    ReadAhead r = readAhead(WINDOW, ByteBufAllocator.DEFAULT);
    assertArrayEquals(Arrays.copyOfRange(file, 0, 100), read(r, 0, 100, SIZE));
    byte[] changed = WriteBehindTest.fill('Z', 1000);
    path.store(LAYOUT, 50, changed); // another client wrote
    assertArrayEquals(Arrays.copyOfRange(file, 100, 200), read(r, 100, 100, SIZE), "read ahead: the old bytes");
    r.invalidate();
    byte[] expect = Arrays.copyOfRange(file, 0, 2000);
    System.arraycopy(changed, 0, expect, 50, 1000);
    assertArrayEquals(Arrays.copyOfRange(expect, 200, 2000), read(r, 200, 1800, SIZE));
    assertArrayEquals(expect, read(r, 0, 2000, SIZE));
  }

  @Test
  void read_windowFetchedWhenTheFileWasShorter_readsTheRest() {
    ReadAhead r = readAhead(WINDOW, ByteBufAllocator.DEFAULT);
    assertArrayEquals(Arrays.copyOfRange(file, 0, 100), read(r, 0, 100, 1000)); // the file had 1000 bytes
    // it grew (size known from a new getattr); the same window is asked for more
    assertArrayEquals(Arrays.copyOfRange(file, 100, 3 * WINDOW), read(r, 100, 3 * WINDOW - 100, SIZE));
  }

  @Test
  void read_failedFetch_throwsAndTheNextReadFetchesAgain() {
    path.readFailure(n -> n == 0 ? Errno.EIO : null);
    ReadAhead r = readAhead(WINDOW, ByteBufAllocator.DEFAULT);
    ByteBuf dst = ByteBufAllocator.DEFAULT.heapBuffer();
    try {
      assertEquals(Errno.EIO, assertThrows(FsException.class, () -> r.read(0, 100, SIZE, dst)).errno());
    } finally {
      dst.release();
    }
    assertArrayEquals(Arrays.copyOfRange(file, 0, 100), read(r, 0, 100, SIZE));
  }

  @Test
  void read_withoutWindow_goesStraightToTheServers() {
    ReadAhead r = readAhead(0, ByteBufAllocator.DEFAULT);
    assertArrayEquals(Arrays.copyOfRange(file, 10, 110), read(r, 10, 100, SIZE));
    assertArrayEquals(Arrays.copyOfRange(file, 110, 210), read(r, 110, 100, SIZE));
    assertEquals(List.of(new MemoryDataPath.Call(0, 10, 100), new MemoryDataPath.Call(1, 110, 100)), path.reads());
  }

  @Test
  void read_appendsToTheCallersBuffer() {
    ReadAhead r = readAhead(WINDOW, ByteBufAllocator.DEFAULT);
    ByteBuf dst = ByteBufAllocator.DEFAULT.heapBuffer().writeInt(42);
    try {
      r.read(WINDOW - 3, 6, SIZE, dst);
      assertEquals(42, dst.readInt());
      assertArrayEquals(Arrays.copyOfRange(file, WINDOW - 3, WINDOW + 3), ByteBufUtil.getBytes(dst));
    } finally {
      dst.release();
    }
  }

  @Test
  void read_jumpingBackAndForth_holdsABoundedNumberOfWindows() {
    // a reader that reads two chunks here, two chunks there, further and further back
    UnpooledByteBufAllocator counting = new UnpooledByteBufAllocator(true);
    ReadAhead r = readAhead(WINDOW, counting);
    for (int k = 9; k >= 0; k--) {
      long at = (long) k * WINDOW + 1000;
      read(r, at, 100, SIZE); // a jump: read directly
      read(r, at + 100, 100, SIZE); // sequential: windows k and k + 1 fetched
    }
    long held = counting.metric().usedDirectMemory();
    assertTrue(held <= 3L * WINDOW, held / WINDOW + " windows held by a reader now at window 0");
    r.invalidate();
    assertEquals(0, counting.metric().usedDirectMemory(), "invalidate releases every window");
  }

  /**
   * A sequential read's bytes as views of the windows (what the mount hands the kernel without a
   * copy): right across a window boundary, pieces of the windows themselves (not one new buffer), and
   * still valid once the windows are dropped.
   */
  @Test
  void views_sequential_areTheWindowsMemoryAndOutliveThem() {
    ReadAhead r = readAhead(WINDOW, ByteBufAllocator.DEFAULT);
    read(r, 0, 4096, SIZE);
    assertTrue(r.streams(4096));
    assertTrue(r.streams(WINDOW - 1000), "within a window on its way");
    long at = WINDOW - 1000;
    ByteBuf v = r.views(at, 3000, SIZE);
    try {
      assertEquals(3000, v.readableBytes());
      assertArrayEquals(Arrays.copyOfRange(file, (int) at, (int) at + 3000), ByteBufUtil.getBytes(v));
      assertEquals(2, v.nioBufferCount(), "two windows' memory, not a copy in one buffer");
      r.invalidate(); // the file changed: the windows go, the views stay readable
      assertArrayEquals(Arrays.copyOfRange(file, (int) at, (int) at + 3000), ByteBufUtil.getBytes(v));
    } finally {
      v.release();
    }
    assertTrue(!r.streams(123_456), "a jump is not served from windows");
  }

  private static byte[] read(ReadAhead r, long offset, int length, long size) {
    ByteBuf dst = ByteBufAllocator.DEFAULT.heapBuffer(length);
    try {
      r.read(offset, length, size, dst);
      assertEquals(length, dst.readableBytes());
      return ByteBufUtil.getBytes(dst);
    } finally {
      dst.release();
    }
  }
}
