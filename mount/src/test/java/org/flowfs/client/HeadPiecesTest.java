package org.flowfs.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.flowfs.common.request.Request;
import org.junit.jupiter.api.Test;

class HeadPiecesTest {
  private static final long HEAD = 64 * 1024;

  @Test
  void contiguousRequest_straddlingTheHead_givesItsHeadPart() {
    List<HeadPieces.Piece> p = HeadPieces.of(Request.bytes(100_000), 60_000, 100_000, null, HEAD, Long.MAX_VALUE, true);
    assertEquals(List.of(new HeadPieces.Piece(60_000, 0, (int) (HEAD - 60_000))), p);
  }

  @Test
  void requestAboveTheHead_hasNoPieces() {
    assertEquals(List.of(), HeadPieces.of(Request.vector(1000, 8, 64, Request.BYTE), HEAD, 8000, null, HEAD,
        Long.MAX_VALUE, true));
  }

  @Test
  void read_stopsAtTheFileSize() {
    List<HeadPieces.Piece> p = HeadPieces.of(Request.bytes(10_000), 0, 10_000, null, HEAD, 4000, false);
    assertEquals(List.of(new HeadPieces.Piece(0, 0, 4000)), p);
  }

  /** Strided file and memory requests: every head byte of the stream, where brute force puts it. */
  @Test
  void stridedFileAndMemory_matchByteByByte() {
    Random r = new Random(7);
    long headBytesSeen = 0;
    for (int round = 0; round < 50; round++) {
      long block = 1 + r.nextInt(300);
      long stride = block + r.nextInt(500);
      long count = 1 + r.nextInt(400);
      Request file = Request.hvector(count, block, stride, Request.BYTE);
      long aggregate = count * block;
      long memBlock = 1 + r.nextInt(200);
      long memStride = memBlock + r.nextInt(50);
      Request mem = Request.hvector((aggregate + memBlock - 1) / memBlock, memBlock, memStride, Request.BYTE);
      long displacement = r.nextInt(70_000);
      List<HeadPieces.Piece> got = HeadPieces.of(file, displacement, aggregate, mem, HEAD, Long.MAX_VALUE, true);
      List<long[]> want = bruteForce(count, block, stride, displacement, memBlock, memStride);
      List<long[]> have = new ArrayList<>();
      for (HeadPieces.Piece p : got) {
        assertTrue(p.length() > 0);
        for (int i = 0; i < p.length(); i++) {
          have.add(new long[] {p.file() + i, p.mem() + i});
        }
      }
      assertEquals(want.size(), have.size(), "round " + round);
      headBytesSeen += have.size();
      for (int i = 0; i < want.size(); i++) {
        assertEquals(want.get(i)[0], have.get(i)[0], "file offset of head byte " + i + ", round " + round);
        assertEquals(want.get(i)[1], have.get(i)[1], "memory offset of head byte " + i + ", round " + round);
      }
    }
    assertTrue(headBytesSeen > 10_000, "the rounds reach into the head: " + headBytesSeen);
  }

  /** (file offset, memory offset) of every stream byte whose file offset is in the head. */
  private static List<long[]> bruteForce(long count, long block, long stride, long displacement, long memBlock,
      long memStride) {
    List<long[]> out = new ArrayList<>();
    long pos = 0;
    for (long b = 0; b < count; b++) {
      for (long i = 0; i < block; i++, pos++) {
        long fileOffset = displacement + b * stride + i;
        if (fileOffset < HEAD) {
          out.add(new long[] {fileOffset, pos / memBlock * memStride + pos % memBlock});
        }
      }
    }
    return out;
  }
}
