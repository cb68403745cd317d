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

  /** The transactional DB in {@code file}, whose commits are durable within {@code syncInterval} (zero: at once). */
  static Opened open(Path file, java.time.Duration syncInterval) throws IOException {
    RedoVolume volume = RedoVolume.open(file, syncInterval);
    try {
      boolean exists = volume.length() > 0;
      String name = file.toString();
      StoreWAL store = StoreWAL.make(name, new RedoVolumes(name, volume), 0L, true, CONCURRENCY_SHIFT,
          0L, 0L, false, false, false, true, false);
      return new Opened(new DB(store, exists, true, RedoVolumes.class.getClassLoader(), 0), volume);
    } catch (RuntimeException e) {
      volume.close();
      throw e;
    }
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
