package org.flowfs.meta;

import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link MetadataStore} in memory, with the same rules as the MapDB store (both run
 * {@link Namespace}), for tests of the components above it. Nothing survives {@link #close()}.
 *
 * <p>Thread safe. A mutation is applied at once on the caller's thread under the write side of
 * one read-write lock (microseconds), and its future is already complete when returned, so
 * continuations run on the caller's thread. A mutation that throws something other than an
 * {@link FsException} (a bug) fails with EIO and, there being no transaction to roll back, may
 * leave part of its change behind.
 */
public final class MemoryMetadataStore extends NamespaceStore {
  private static final Logger LOG = LoggerFactory.getLogger(MemoryMetadataStore.class);

  private final Namespace namespace = new Namespace(new MemoryTables());

  /** An empty namespace: only the root directory, stamped with the current time. */
  public MemoryMetadataStore() {
    namespace.initRoot(System.currentTimeMillis() * 1_000_000L);
  }

  @Override
  Namespace namespace() {
    return namespace;
  }

  @Override
  <T> CompletableFuture<T> mutate(Function<Namespace, T> op) {
    lock.writeLock().lock();
    try {
      if (isClosed()) {
        return CompletableFuture.failedFuture(closedError());
      }
      return CompletableFuture.completedFuture(op.apply(namespace));
    } catch (FsException e) {
      return CompletableFuture.failedFuture(e);
    } catch (RuntimeException e) {
      LOG.error("metadata mutation failed unexpectedly", e);
      return CompletableFuture.failedFuture(new FsException(Errno.EIO, "metadata mutation failed", e));
    } finally {
      lock.writeLock().unlock();
    }
  }

  @Override
  public void close() {
    lock.writeLock().lock();
    try {
      markClosed();
    } finally {
      lock.writeLock().unlock();
    }
  }

  @Override
  public void sync() {
    // nothing to make durable
  }
}
