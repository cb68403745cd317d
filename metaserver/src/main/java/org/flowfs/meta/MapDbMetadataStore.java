package org.flowfs.meta;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.config.MetaConfig;
import org.mapdb.DB;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link MetadataStore} of the metadata server: one MapDB store file ({@value #FILE_NAME},
 * with its redo file {@code meta.db.redo}) in a directory, transactions on, file channel I/O,
 * never mmap. This class alone opens and closes the {@link DB}.
 *
 * <p><b>Crash safety.</b> MapDB 3.1.0's {@code fileDB(..).transactionEnable()} is not safe
 * against a process killed during a commit: its write-ahead log holds only record data, index
 * changes are written in place after it, and it is never replayed on open; the crash test of
 * this module tore such a store in about one kill of thirty. So the store file sits on a
 * {@link RedoVolume}, which makes each commit's writes to the file atomic, and MapDB's
 * transaction (commit, rollback) runs above it with its log in memory ({@link RedoVolumes}).
 *
 * <p><b>Layout.</b> See {@link MapDbTables}: objects by handle (records of {@link InodeCodec}),
 * directory entries and extended attributes keyed by handle and UTF-8 name so a directory is one
 * contiguous key range in name order, and counters for the next handle, objects and
 * directories. The root ({@link org.flowfs.common.Handle#ROOT}) is created on first open.
 *
 * <p><b>Writes.</b> MapDB 3 has one global transaction and no isolation, and a commit syncs
 * (twice: the redo record, then the store file). All mutations therefore go through one writer
 * thread, {@code meta-writer}, which commits them in groups of up to {@code commitBatch}
 * ({@link GroupCommit}); a future completes only after the commit that holds its mutation.
 *
 * <p><b>Reads</b> run on the caller's thread under the read side of a lock whose write side the
 * writer holds while it applies one mutation (not while it syncs), so a read sees whole mutations
 * only. A read may see a mutation whose commit is still under way (its future not yet complete);
 * a crash can lose such a mutation, which nobody was told had succeeded. MapDB itself blocks
 * reads that reach its files while it commits; object records are cached ({@link RecordCache}).
 *
 * <p><b>Completion threads.</b> Futures complete on the executor given to the constructor, or by
 * default on this store's own pool of daemon threads {@code meta-complete-N} (cached: a
 * continuation that blocks holds one thread, never the writer, and never keeps other futures
 * from completing). Continuations that do real work should still hop to their own executor.
 *
 * <p>Thread safe. {@link #close()} stops accepting mutations, lets the writer apply and commit
 * what is queued, completes those futures and closes the DB; it is idempotent.
 */
public final class MapDbMetadataStore extends NamespaceStore {
  public static final String FILE_NAME = "meta.db";
  private static final Logger LOG = LoggerFactory.getLogger(MapDbMetadataStore.class);
  private static final long CLOSE_WAIT_MS = 60_000;
  /** Set on the completion threads of a store's own pool: the store they complete for. */
  private static final ThreadLocal<MapDbMetadataStore> COMPLETING_FOR = new ThreadLocal<>();

  private final Path file;
  private final DB db;
  private final RedoVolume volume;
  private final Namespace namespace;
  private final GroupCommit writer;
  private final ExecutorService ownCompletions;
  private final AtomicBoolean closing = new AtomicBoolean();

  /** Opens (or creates) the store in {@code dir}; futures complete on the store's own threads. */
  public static MapDbMetadataStore open(Path dir, int commitBatch) {
    return new MapDbMetadataStore(dir, commitBatch, null);
  }

  /** Opens (or creates) the store of the metadata server {@code config} describes. */
  public MapDbMetadataStore(MetaConfig config) {
    this(config.requireDir(), config.commitBatch(), null, config.syncInterval());
  }

  /** Opens (or creates) the store in {@code dir}; futures complete on the store's own threads. */
  public MapDbMetadataStore(Path dir, int commitBatch) {
    this(dir, commitBatch, null);
  }

  /** As {@link #MapDbMetadataStore(Path, int, Executor, java.time.Duration)}, every commit durable at once. */
  public MapDbMetadataStore(Path dir, int commitBatch, Executor completions) {
    this(dir, commitBatch, completions, java.time.Duration.ZERO);
  }

  /**
   * Opens (or creates) the store in {@code dir} (created if missing).
   *
   * @param commitBatch most mutations one commit holds (1 turns group commit off)
   * @param completions where futures complete; null for the store's own pool
   * @param syncInterval zero: a mutation is acknowledged once its commit is on disk; otherwise
   *     once its commit is in the operating system (safe against a crash of this process) and on
   *     disk within the interval, or at the next {@link #sync()}
   * @throws FsException EIO naming the file if it cannot be opened
   */
  public MapDbMetadataStore(Path dir, int commitBatch, Executor completions, java.time.Duration syncInterval) {
    if (commitBatch < 1) {
      throw new IllegalArgumentException("commitBatch " + commitBatch + " < 1");
    }
    this.file = dir.resolve(FILE_NAME);
    RedoVolumes.Opened opened = open(dir, file, syncInterval);
    this.db = opened.db();
    this.volume = opened.volume();
    MapDbTables tables;
    try {
      tables = new MapDbTables(db);
      this.namespace = new Namespace(tables);
      namespace.initRoot(System.currentTimeMillis() * 1_000_000L);
      tables.flushCounters();
      db.commit();
    } catch (RuntimeException e) {
      db.close();
      throw new FsException(Errno.EIO, "cannot read metadata store " + file + ": " + e.getMessage(), e);
    }
    LOG.info("metadata store {} open: {} objects, {} directories, commit batch {}",
        file, namespace.counts().objects(), namespace.counts().directories(), commitBatch);
    this.ownCompletions = completions == null ? completionPool() : null;
    Executor done = completions == null ? ownCompletions : completions;
    this.writer = new GroupCommit("meta-writer", namespace, lock, new GroupCommit.Transaction() {
      @Override
      public void commit() {
        tables.flushCounters();
        db.commit();
      }

      @Override
      public void rollback() {
        db.rollback();
        tables.rolledBack();
      }

      @Override
      public boolean waitsForDisk() {
        return syncInterval.isZero() || volume.nearlyFull();
      }
    }, commitBatch, done);
    volume.checkpointsThrough(writer::exclusive); // no commit on an event loop waits for a checkpoint
  }

  /** MapDB's transactional store over a {@link RedoVolume} (see there why not fileDB's volume). */
  private static RedoVolumes.Opened open(Path dir, Path file, java.time.Duration syncInterval) {
    try {
      Files.createDirectories(dir);
      return RedoVolumes.open(file, syncInterval);
    } catch (IOException | RuntimeException e) {
      throw new FsException(Errno.EIO, "cannot open metadata store " + file + ": " + e, e);
    }
  }

  @Override
  public void sync() {
    volume.forceLog(); // every acknowledged mutation is in the log already
  }

  /** Cached daemon threads {@code meta-complete-N}, marked so close() knows not to wait on itself. */
  private ExecutorService completionPool() {
    AtomicInteger n = new AtomicInteger();
    return new ThreadPoolExecutor(0, Integer.MAX_VALUE, 30, TimeUnit.SECONDS, new SynchronousQueue<>(), r -> {
      Thread t = new Thread(() -> {
        COMPLETING_FOR.set(this);
        r.run();
      }, "meta-complete-" + n.getAndIncrement());
      t.setDaemon(true);
      return t;
    });
  }

  /** The DB file. */
  public Path file() {
    return file;
  }

  /** Commits so far (each one sync); with group commit far fewer than {@link #mutations()}. */
  public long commits() {
    return writer.commits();
  }

  /** Mutations applied so far, including those that failed with an errno. */
  public long mutations() {
    return writer.mutations();
  }

  /** Mutations applied on the event loop that submitted them, the writer being idle (tests). */
  long inlined() {
    return writer.inlined();
  }

  @Override
  Namespace namespace() {
    return namespace;
  }

  @Override
  <T> CompletableFuture<T> mutate(Function<Namespace, T> op) {
    return writer.submit(op);
  }

  private void awaitCompletions() {
    try {
      if (!ownCompletions.awaitTermination(CLOSE_WAIT_MS, TimeUnit.MILLISECONDS)) {
        LOG.warn("continuations of metadata mutations still running after {} ms", CLOSE_WAIT_MS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() {
    if (!closing.compareAndSet(false, true)) {
      return;
    }
    if (!writer.close(CLOSE_WAIT_MS)) {
      LOG.error("metadata writer did not finish within {} ms; closing {} anyway", CLOSE_WAIT_MS, file);
    }
    lock.writeLock().lock();
    try {
      markClosed();
      db.close();
    } catch (RuntimeException e) {
      LOG.error("closing metadata store {} failed", file, e);
    } finally {
      lock.writeLock().unlock();
    }
    if (ownCompletions != null) {
      ownCompletions.shutdown(); // completions already handed over still run
      if (COMPLETING_FOR.get() != this) { // a continuation may close the store: not wait on itself
        awaitCompletions();
      }
    }
    LOG.info("metadata store {} closed", file);
  }
}
