package org.flowfs.meta;

import java.io.File;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicReference;
import org.mapdb.DataIO;
import org.mapdb.DataInput2;
import org.mapdb.volume.Volume;

/**
 * The memory that MapDB's write-ahead log lives in between two commits, reused from one commit to
 * the next.
 *
 * <p>MapDB starts a new log file for every commit and sizes it in whole megabytes; with its own
 * {@code ByteArrayVol} that is a new, zeroed megabyte array per commit, most of the metadata
 * server's allocation (and a good part of its CPU) under a stream of small mutations. This volume
 * is one contiguous array, megabytes long like MapDB's, that goes back to its {@link Spare} when
 * MapDB closes the log, zeroed over the part that was written, and is handed to the next log:
 * the log sees exactly the zeroed memory a new array would give it.
 *
 * <p>Thread safety: MapDB's write-ahead log is written by the committing thread (the group
 * commit's writer) and read by readers of uncommitted records under MapDB's segment locks; the
 * array is published through a volatile field when it grows.
 */
final class WalVolume extends Volume {
  /** MapDB aligns its log to megabytes: the unit of growth, as in its own volume. */
  static final int UNIT = 1 << 20;
  /** Arrays larger than this (a very large commit) are left to the garbage collector. */
  static final int KEEP_MAX = 4 * UNIT;

  /** The one array kept between two logs. */
  static final class Spare {
    private final AtomicReference<byte[]> spare = new AtomicReference<>();

    WalVolume newVolume() {
      byte[] b = spare.getAndSet(null);
      return new WalVolume(b == null ? new byte[0] : b, this);
    }

    void giveBack(byte[] b) {
      if (b.length > 0 && b.length <= KEEP_MAX) {
        spare.set(b);
      }
    }
  }

  private final Spare owner;
  private volatile byte[] buf;
  /** The length MapDB sees, whole units, at most the array's. */
  private volatile long length;
  /** The end of what was written: the array is zero from here on. */
  private long written;

  private WalVolume(byte[] buf, Spare owner) {
    this.buf = buf;
    this.owner = owner;
  }

  private void wrote(long end) {
    if (end > written) {
      written = end;
    }
  }

  @Override
  public synchronized void ensureAvailable(long offset) {
    if (offset <= length) {
      return;
    }
    long size = (offset + UNIT - 1) / UNIT * UNIT;
    if (size > buf.length) {
      if (size > Integer.MAX_VALUE - UNIT) {
        throw new IllegalStateException("write-ahead log over 2 GiB: " + offset);
      }
      buf = Arrays.copyOf(buf, (int) size);
    }
    length = size;
  }

  @Override
  public synchronized void truncate(long size) {
    if (size < written) {
      Arrays.fill(buf, (int) size, (int) written, (byte) 0);
      written = size;
    }
    if (size < length) {
      length = (size + UNIT - 1) / UNIT * UNIT; // the array stays, for the next log
    }
  }

  @Override
  public void putLong(long offset, long value) {
    DataIO.putLong(buf, (int) offset, value);
    wrote(offset + 8);
  }

  @Override
  public void putInt(long offset, int value) {
    DataIO.putInt(buf, (int) offset, value);
    wrote(offset + 4);
  }

  @Override
  public void putByte(long offset, byte value) {
    buf[(int) offset] = value;
    wrote(offset + 1);
  }

  @Override
  public void putData(long offset, byte[] src, int srcPos, int srcSize) {
    System.arraycopy(src, srcPos, buf, (int) offset, srcSize);
    wrote(offset + srcSize);
  }

  @Override
  public void putData(long offset, ByteBuffer src) {
    int n = src.remaining();
    src.get(buf, (int) offset, n);
    wrote(offset + n);
  }

  @Override
  public void clear(long startOffset, long endOffset) {
    Arrays.fill(buf, (int) startOffset, (int) endOffset, (byte) 0);
  }

  @Override
  public long getLong(long offset) {
    return DataIO.getLong(buf, (int) offset);
  }

  @Override
  public int getInt(long offset) {
    return DataIO.getInt(buf, (int) offset);
  }

  @Override
  public byte getByte(long offset) {
    return buf[(int) offset];
  }

  @Override
  public DataInput2 getDataInput(long offset, int size) {
    return new DataInput2.ByteArray(buf, (int) offset);
  }

  @Override
  public void getData(long offset, byte[] bytes, int bytesPos, int size) {
    System.arraycopy(buf, (int) offset, bytes, bytesPos, size);
  }

  @Override
  public synchronized void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    byte[] b = buf;
    buf = new byte[0];
    length = 0;
    Arrays.fill(b, 0, (int) Math.min(written, b.length), (byte) 0);
    written = 0;
    owner.giveBack(b);
  }

  @Override
  public void sync() {}

  /**
   * No checksum: MapDB checksums each commit's log so that a replay after a crash can tell a
   * whole log from a torn one, and this log is never replayed (it lives in memory for one commit;
   * the {@link RedoVolume} under the store makes commits atomic on disk, with its own CRC). MapDB
   * calls this only to write that checksum into the log; hashing the log (which holds a 32 KiB
   * copy of the store header at every commit) took 8% of the samples of a loop of small commits.
   */
  @Override
  public long hash(long off, long len, long seed) {
    return 0;
  }

  @Override
  public int sliceSize() {
    return -1;
  }

  @Override
  public boolean isSliced() {
    return false;
  }

  @Override
  public long length() {
    return length;
  }

  @Override
  public boolean isReadOnly() {
    return false;
  }

  @Override
  public File getFile() {
    return null;
  }

  @Override
  public boolean getFileLocked() {
    return false;
  }
}
