package org.flowfs.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PieceAllocatorTest {
  private static final int PIECE = PieceAllocator.PIECE;

  @Test
  void piece_releasedIsKeptAndItsMemoryReused() {
    PieceAllocator a = new PieceAllocator(PooledByteBufAllocator.DEFAULT, 4);
    ByteBuf p = a.directBuffer(PIECE, PIECE);
    assertEquals(PIECE, p.capacity());
    assertEquals(PIECE, p.maxCapacity());
    p.writeLong(0x1234);
    long address = p.memoryAddress();
    p.release();
    assertEquals(1, a.kept());
    ByteBuf again = a.directBuffer(PIECE, PIECE);
    assertEquals(address, again.memoryAddress(), "the kept memory, not new memory");
    assertEquals(0, again.readableBytes(), "an empty buffer, whatever the memory held");
    assertEquals(0, a.kept());
    again.release();
  }

  @Test
  void piece_keepsAtMostItsBound() {
    PieceAllocator a = new PieceAllocator(PooledByteBufAllocator.DEFAULT, 2);
    List<ByteBuf> pieces = new ArrayList<>();
    Set<Long> addresses = new HashSet<>();
    for (int i = 0; i < 5; i++) {
      ByteBuf p = a.directBuffer(PIECE, PIECE);
      pieces.add(p);
      addresses.add(p.memoryAddress());
    }
    assertEquals(5, addresses.size(), "pieces in use never share memory");
    pieces.forEach(ByteBuf::release);
    assertEquals(2, a.kept(), "the rest was freed");
  }

  @Test
  void otherBuffers_comeFromThePool() {
    PieceAllocator a = new PieceAllocator(PooledByteBufAllocator.DEFAULT, 2);
    ByteBuf small = a.directBuffer(4096);
    ByteBuf growable = a.directBuffer(PIECE / 2, PIECE);
    assertTrue(small.isDirect() && growable.isDirect());
    growable.writeZero(PIECE); // grows: not a piece
    assertEquals(PIECE, growable.capacity());
    small.release();
    growable.release();
    assertEquals(0, a.kept(), "only pieces are kept");
    ByteBuf composite = a.compositeDirectBuffer(2).addComponents(true, a.directBuffer(PIECE, PIECE).writeZero(PIECE),
        a.directBuffer(PIECE, PIECE).writeZero(PIECE));
    assertEquals(2 * PIECE, composite.readableBytes());
    composite.release();
    assertEquals(2, a.kept(), "a composite's pieces come back when it is released");
  }
}
