package org.flowfs.io;

import io.netty.buffer.ByteBuf;
import io.netty.util.internal.PlatformDependent;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Large writes to a datafile past the page cache ({@code O_DIRECT}), as OrangeFS's {@code
 * directio} storage method does: the block-aligned middle of a piece of at least {@code
 * io.direct-write} bytes goes straight to the device, from the network's own buffers where the
 * receive path placed them aligned, else from an aligned staging buffer; its unaligned head and
 * tail, and smaller pieces, go through the page cache as before.
 *
 * <p>Why: a write through the page cache costs the server a copy into the cache plus its
 * bookkeeping per page (allocating, charging, marking dirty, writing back, completing, freeing),
 * and the data then sits in the server's memory although the client that wrote it keeps its own
 * copy. Direct, the bookkeeping is gone, and so is the copy where the payload arrived aligned.
 * Four {@code dd} writers on one {@code flowfs up} (2 CPUs): 25-30% less CPU per byte
 * ({@code bench/HISTORY.md}, "Direct writes on the I/O servers").
 *
 * <p>The page cache stays coherent: the kernel writes back and drops cached pages of the range a
 * direct write covers. Small writes (the random 4 KiB writers', the eager path's) stay buffered:
 * their latency is a copy, not a device round trip.
 *
 * <p>The same alignment serves direct reads ({@code io.direct-read}, {@link #read}): a read flow's
 * aligned buffer read from the device straight into a client's slot of shared memory; the kernel
 * writes back dirty cached pages of the range first, so such a read sees buffered writes too.
 */
final class DirectWrite {
  /** The alignment used when the file system reports a smaller block (or none). */
  static final int MIN_ALIGN = 4096;
  /** The most a staging buffer holds: a larger piece is written in steps of this size. */
  static final int STAGE = 1 << 20;
  /**
   * The fewest bytes written straight from the network's memory in one go; a shorter aligned run
   * is staged with its neighbours (a copy of a few blocks costs less than a device round trip).
   */
  static final int MIN_RUN = 64 * 1024;
  private static final ThreadLocal<ByteBuffer[]> STAGING = ThreadLocal.withInitial(() -> new ByteBuffer[1]);

  private final long min;
  private final int align;

  private DirectWrite(long min, int align) {
    this.min = min;
    this.align = align;
  }

  /**
   * Direct writes of pieces of at least {@code min} bytes to files under {@code dir}, aligned to
   * its file system's block size (at least {@link #MIN_ALIGN}); null when {@code min} is 0 or the
   * block size is not a power of two up to {@link #STAGE}.
   */
  static DirectWrite of(long min, Path dir) {
    if (min <= 0) {
      return null;
    }
    long block;
    try {
      block = Files.getFileStore(dir).getBlockSize();
    } catch (IOException | UnsupportedOperationException e) {
      block = MIN_ALIGN; // the file system does not say: the common block size; a refusal turns it off
    }
    long align = Math.max(MIN_ALIGN, block);
    if (Long.bitCount(align) != 1 || align > STAGE) {
      return null;
    }
    return new DirectWrite(Math.max(min, align), (int) align);
  }

  /** The first aligned offset at or after {@code offset}. */
  long start(long offset) {
    return (offset + align - 1) & -(long) align;
  }

  /** The last aligned offset at or before {@code end}. */
  long end(long end) {
    return end & -(long) align;
  }

  /** Whether the aligned part of {@code [offset, offset + len)} is large enough to go direct. */
  boolean covers(long offset, int len) {
    return len >= min && end(offset + len) - start(offset) >= min;
  }

  /** Opens {@code path} for direct writes and reads. */
  static FileChannel open(Path path) throws IOException {
    return FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE, com.sun.nio.file.ExtendedOpenOption.DIRECT);
  }

  /** {@code len} rounded up to the alignment. */
  long roundUp(long len) {
    return start(len);
  }

  /**
   * Whether {@code [offset, offset + len)} can be read straight into memory at {@code address}
   * with room for {@code room} bytes: a read of at least the threshold, the offset and the memory
   * aligned, room for the length rounded up to the alignment.
   */
  boolean reads(long offset, long len, long address, int room) {
    return len >= min && (offset & (align - 1)) == 0 && (address & (align - 1)) == 0 && roundUp(len) <= room;
  }

  /**
   * Reads {@code [offset, offset + len)} of the datafile through {@code direct} into {@code dst}
   * (aligned memory with room for {@code len} rounded up to the alignment, see {@link #reads});
   * returns how many of those bytes the datafile has (short at its end).
   */
  int read(FileChannel direct, ByteBuffer dst, long offset, int len) throws IOException {
    ByteBuffer view = dst.duplicate();
    view.limit(view.position() + (int) roundUp(len));
    int got = 0;
    while (view.hasRemaining()) {
      int k = direct.read(view, offset + got);
      if (k <= 0) {
        break;
      }
      got += k;
      if ((k & (align - 1)) != 0) {
        break; // the end of the datafile: a read past it would not be aligned
      }
    }
    return Math.min(got, len);
  }

  /**
   * Writes {@code src}'s bytes from index {@code from} to the aligned range {@code [start, end)}
   * of the datafile through {@code direct}; returns how many of them went through the staging
   * buffer. Where {@code src}'s memory already sits as the datafile will (each byte at an address
   * congruent to its offset, modulo the alignment: the I/O server's receive path places flow
   * payloads so, see {@code PayloadPlacement}), whole blocks go straight from it, without a copy
   * ({@link #MIN_RUN} bytes or more in a row); everything else is copied into the staging buffer
   * and written from there, {@link #STAGE} bytes at a time.
   */
  long write(FileChannel direct, ByteBuf src, int from, long start, long end) throws IOException {
    Step step = new Step(direct, src, from, start);
    int len = (int) (end - start);
    ByteBuffer[] parts = src.nioBuffers(from, len);
    long pos = start;
    for (int i = 0; i < parts.length; ) {
      // a run: parts that follow each other in memory
      long addr = address(parts[i]);
      long n = parts[i].remaining();
      int k = i + 1;
      while (k < parts.length && addr >= 0 && address(parts[k]) == addr + n) {
        n += parts[k].remaining();
        k++;
      }
      long a = start(pos);
      long z = end(pos + n);
      boolean inPlace = addr >= 0 && ((addr - pos) & (align - 1)) == 0 && z - a >= MIN_RUN
          && (k - i == 1 || PlatformDependent.hasDirectBufferNoCleanerConstructor());
      if (inPlace) {
        step.copy(pos, a - pos);
        step.flush();
        ByteBuffer view;
        if (k - i == 1) {
          view = parts[i].duplicate();
          view.position(parts[i].position() + (int) (a - pos)).limit(view.position() + (int) (z - a));
        } else {
          view = PlatformDependent.directBuffer(addr + (a - pos), (int) (z - a));
        }
        step.write(view, a);
        step.copy(z, pos + n - z);
      } else {
        step.copy(pos, n);
      }
      pos += n;
      i = k;
    }
    step.flush();
    return step.copied;
  }

  /** The address of {@code b}'s first remaining byte; -1 for heap memory. */
  private static long address(ByteBuffer b) {
    return b.isDirect() ? PlatformDependent.directBufferAddress(b) + b.position() : -1;
  }

  /** One {@link #write}: the staging buffer and where its bytes go. */
  private final class Step {
    private final FileChannel direct;
    private final ByteBuf src;
    private final int from;
    private final long start;
    private final ByteBuffer stage = staging().clear();
    /** The datafile offset of the staging buffer's first byte (aligned). */
    private long stageAt;
    long copied;

    Step(FileChannel direct, ByteBuf src, int from, long start) {
      this.direct = direct;
      this.src = src;
      this.from = from;
      this.start = start;
    }

    /** Copies the bytes for {@code [pos, pos + n)} into the staging buffer, writing it out when full. */
    void copy(long pos, long n) throws IOException {
      while (n > 0) {
        if (stage.position() == 0) {
          stageAt = pos;
        }
        int take = (int) Math.min(n, stage.remaining());
        stage.limit(stage.position() + take);
        src.getBytes(from + (int) (pos - start), stage);
        stage.limit(stage.capacity());
        copied += take;
        pos += take;
        n -= take;
        if (!stage.hasRemaining()) {
          flush();
        }
      }
    }

    /** Writes out what the staging buffer holds (a whole number of blocks). */
    void flush() throws IOException {
      if (stage.position() == 0) {
        return;
      }
      stage.flip();
      write(stage, stageAt);
      stage.clear();
    }

    void write(ByteBuffer b, long at) throws IOException {
      long base = at - b.position();
      while (b.hasRemaining()) {
        direct.write(b, base + b.position());
      }
    }
  }

  /** This thread's staging buffer, aligned to {@code align}. */
  private ByteBuffer staging() {
    ByteBuffer[] slot = STAGING.get();
    ByteBuffer b = slot[0];
    if (b == null || b.alignmentOffset(0, align) != 0) {
      b = ByteBuffer.allocateDirect(STAGE + align).alignedSlice(align);
      slot[0] = b;
    }
    return b;
  }
}
