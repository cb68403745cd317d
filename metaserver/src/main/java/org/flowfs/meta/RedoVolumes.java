package org.flowfs.meta;

import java.io.IOException;
import java.nio.file.Path;
import org.mapdb.DB;
import org.mapdb.StoreWAL;
import org.mapdb.volume.Volume;
import org.mapdb.volume.VolumeFactory;

/**
 * Opens a MapDB {@link DB} with transactions on whose store file is a {@link RedoVolume}: the
 * store file through the redo volume, MapDB's own write-ahead log in memory (it only serves
 * commit and rollback; the redo volume makes commits atomic on disk), in a {@link WalVolume}
 * reused from commit to commit.
 *
 * <p>{@code DBMaker.volumeDB(volume, ..).transactionEnable()} cannot do this in MapDB 3.1.0: its
 * factory hands the one volume to the write-ahead log too, which then overwrites and closes it.
 * So this class builds the transactional store ({@link StoreWAL#make}) with the defaults
 * {@code DBMaker} uses, and the {@link DB} over it. Thread safety: the factory is used by MapDB
 * while it opens the store, from that one thread.
 */
final class RedoVolumes extends VolumeFactory {
  /** DBMaker's default: 16 segments. */
  private static final int CONCURRENCY_SHIFT = 4;
  /** Where MapDB keeps the store's feature bits in the store file; bit 0: header checksums on. */
  static final long HEADER_FEATURES = 16;
  /** Where MapDB keeps the header checksum in the store file (0 when header checksums are off). */
  static final long HEADER_CHECKSUM = 20;

  private final String storeName;
  private final RedoVolume store;
  /** MapDB starts a new log per commit: its memory is reused rather than allocated each time. */
  private final WalVolume.Spare walMemory = new WalVolume.Spare();

  private RedoVolumes(String storeName, RedoVolume store) {
    this.storeName = storeName;
    this.store = store;
  }

  /**
   * The transactional DB in {@code file}.
   *
   * @throws IOException if the file cannot be opened or is locked
   */
  static DB open(Path file) throws IOException {
    return open(file, java.time.Duration.ZERO).db();
  }

  /** A DB and the redo volume under it. */
  record Opened(DB db, RedoVolume volume) {}

  /**
   * The transactional DB in {@code file}, whose commits are durable within {@code syncInterval}
   * (zero: at once).
   *
   * <p>Without MapDB's header checksum: MapDB sums the 32 KiB store header at every commit (a
   * quarter of the samples of a loop of small commits) to catch a header torn by an unclean shutdown, which the
   * redo volume rules out (a commit reaches the store file whole or not at all). A store written
   * with header checksums (by earlier versions) has its checksum verified once, as before, then
   * cleared in a commit of its own, and is opened without from then on.
   */
  static Opened open(Path file, java.time.Duration syncInterval) throws IOException {
    return open(file, syncInterval, false);
  }

  /** As {@link #open(Path, java.time.Duration)}; {@code headerChecksums} writes a store as earlier versions did (tests). */
  static Opened open(Path file, java.time.Duration syncInterval, boolean headerChecksums) throws IOException {
    RedoVolume volume = RedoVolume.open(file, syncInterval);
    try {
      boolean exists = volume.length() > 0;
      int features = exists ? volume.getInt(HEADER_FEATURES) : 0;
      if ((features & 1) != 0 && !headerChecksums) {
        store(file, volume, true); // MapDB verifies the checksum as it opens, or throws
        volume.putInt(HEADER_FEATURES, features & ~1);
        volume.putInt(HEADER_CHECKSUM, 0);
        volume.sync();
      }
      StoreWAL store = store(file, volume, headerChecksums);
      return new Opened(new DB(store, exists, true, RedoVolumes.class.getClassLoader(), 0), volume);
    } catch (RuntimeException e) {
      volume.close();
      throw e;
    }
  }

  private static StoreWAL store(Path file, RedoVolume volume, boolean headerChecksums) {
    String name = file.toString();
    return StoreWAL.make(name, new RedoVolumes(name, volume), 0L, true, CONCURRENCY_SHIFT,
        0L, 0L, false, false, false, headerChecksums, false);
  }

  @Override
  public Volume makeVolume(String file, boolean readOnly, long fileLockWait, int sliceShift, long initSize,
      boolean fixedSize) {
    if (storeName.equals(file)) {
      return store;
    }
    return walMemory.newVolume(); // MapDB's write-ahead log: memory is enough
  }

  @Override
  public boolean exists(String file) {
    return storeName.equals(file) && store.length() > 0;
  }

  @Override
  public boolean handlesReadonly() {
    return false;
  }
}
