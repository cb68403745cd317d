package org.flowfs.common.flow;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.wire.LeakCheck;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(LeakCheck.class)
class MemViewsTest {
  private static ByteBuf frame(String s) {
    ByteBuf b = PooledByteBufAllocator.DEFAULT.directBuffer();
    b.writeCharSequence(s, StandardCharsets.US_ASCII);
    return b;
  }

  @Test
  void assemble_slicesAddedOutOfOrder_inPositionOrder_andTheFramesStayUntilReleased() {
    ByteBuf a = frame("xxhello");
    ByteBuf b = frame(" world");
    MemViews v = new MemViews(11);
    v.add(5, b.retainedSlice(0, 6));
    v.add(0, a.retainedSlice(2, 5));
    a.release();
    b.release();
    assertEquals(1, a.refCnt(), "the views hold the frame");
    ByteBuf all = v.assemble(PooledByteBufAllocator.DEFAULT);
    assertEquals("hello world", all.toString(StandardCharsets.US_ASCII));
    all.release();
    assertEquals(0, a.refCnt());
    assertEquals(0, b.refCnt());
  }

  @Test
  void assemble_gap_isEioAndReleasesEverything() {
    ByteBuf a = frame("abcd");
    MemViews v = new MemViews(10);
    v.add(0, a.retainedSlice(0, 2));
    v.add(4, a.retainedSlice(2, 2));
    a.release();
    FsException e = assertThrows(FsException.class, () -> v.assemble(PooledByteBufAllocator.DEFAULT));
    assertEquals(Errno.EIO, e.errno());
    assertEquals(0, a.refCnt(), e.getMessage());
  }

  @Test
  void assemble_shortOfCapacity_isEio() {
    ByteBuf a = frame("abcd");
    MemViews v = new MemViews(5);
    v.add(0, a.retainedSlice(0, 4));
    a.release();
    FsException e = assertThrows(FsException.class, () -> v.assemble(PooledByteBufAllocator.DEFAULT));
    assertEquals(Errno.EIO, e.errno());
    assertEquals(0, a.refCnt());
  }

  @Test
  void add_outsideOrTwice_isEinvalAndKeepsNothingOfIt() {
    ByteBuf a = frame("abcdef");
    MemViews v = new MemViews(4);
    assertEquals(Errno.EINVAL, assertThrows(FsException.class, () -> v.add(2, a.retainedSlice(0, 3))).errno());
    v.add(0, a.retainedSlice(0, 2));
    assertEquals(Errno.EINVAL, assertThrows(FsException.class, () -> v.add(0, a.retainedSlice(2, 2))).errno());
    v.add(2, a.retainedSlice(4, 2));
    assertArrayEquals("abef".getBytes(StandardCharsets.US_ASCII), ByteBufUtil.getBytes(release(v)));
    a.release();
    assertEquals(0, a.refCnt());
  }

  @Test
  void add_afterRelease_dropsTheSlice() {
    ByteBuf a = frame("abcd");
    MemViews v = new MemViews(4);
    v.release();
    v.add(0, a.retainedSlice(0, 4));
    a.release();
    assertEquals(0, a.refCnt(), "a flow that ends after another failed leaves nothing behind");
  }

  /** The assembled bytes copied out, the views' buffer released. */
  private static ByteBuf release(MemViews v) {
    ByteBuf all = v.assemble(PooledByteBufAllocator.DEFAULT);
    ByteBuf copy = Unpooled.copiedBuffer(all);
    all.release();
    return copy;
  }
}
