package org.flowfs.meta;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;
import java.util.function.Function;
import org.flowfs.common.Attr;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;

/**
 * The part both stores share: every {@link MetadataStore} method as a {@link Namespace} call,
 * reads under the read lock on the caller's thread, mutations handed to {@link #mutate}, which
 * each store implements its own way.
 *
 * <p>Thread safe. The lock's write side is taken by whoever applies a mutation, for the time of
 * that one mutation, so a read never sees part of one.
 */
abstract sealed class NamespaceStore implements MetadataStore permits MapDbMetadataStore, MemoryMetadataStore {
  /** How many objects {@link #forEachObject} reads per turn of the read lock. */
  private static final int VISIT_CHUNK = 1024;

  /** Read side: reads. Write side: applying one mutation, rolling back, closing. */
  final ReadWriteLock lock = new ReentrantReadWriteLock();
  private volatile boolean closed;

  /** The namespace over this store's tables; set once by the subclass constructor. */
  abstract Namespace namespace();

  /**
   * Applies {@code op} to the namespace, in submission order with the other mutations; the future
   * completes after the change is durable, or exceptionally with an {@link FsException}.
   */
  abstract <T> CompletableFuture<T> mutate(Function<Namespace, T> op);

  /** Marks the store closed: reads from now on fail with EIO. Call with the write lock held. */
  final void markClosed() {
    closed = true;
  }

  final boolean isClosed() {
    return closed;
  }

  static FsException closedError() {
    return new FsException(Errno.EIO, "metadata store is closed");
  }

  private <T> T read(Function<Namespace, T> op) {
    lock.readLock().lock();
    try {
      if (closed) {
        throw closedError();
      }
      return op.apply(namespace());
    } finally {
      lock.readLock().unlock();
    }
  }

  // ---- reads ----------------------------------------------------------------------------------

  @Override
  public Attr getattr(Handle handle) {
    Objects.requireNonNull(handle, "handle");
    return read(ns -> ns.getattr(handle));
  }

  @Override
  public Attr lookup(Handle parent, String name) {
    Objects.requireNonNull(parent, "parent");
    return read(ns -> ns.lookup(parent, name));
  }

  @Override
  public String readlink(Handle handle) {
    Objects.requireNonNull(handle, "handle");
    return read(ns -> ns.readlink(handle));
  }

  @Override
  public DirPage readdir(Handle dir, String cursor, int max, boolean plus) {
    Objects.requireNonNull(dir, "dir");
    return read(ns -> ns.readdir(dir, cursor, max, plus));
  }

  @Override
  public byte[] getxattr(Handle handle, String name) {
    Objects.requireNonNull(handle, "handle");
    return read(ns -> ns.getxattr(handle, name));
  }

  @Override
  public List<String> listxattr(Handle handle) {
    Objects.requireNonNull(handle, "handle");
    return read(ns -> ns.listxattr(handle));
  }

  @Override
  public byte[] headRead(Handle handle, long offset, int length) {
    Objects.requireNonNull(handle, "handle");
    return read(ns -> ns.headRead(handle, offset, length));
  }

  @Override
  public Opened open(Handle handle, int headLength) {
    Objects.requireNonNull(handle, "handle");
    return read(ns -> ns.open(handle, headLength));
  }

  @Override
  public Counts counts() {
    return read(Namespace::counts);
  }

  /** Reads {@value #VISIT_CHUNK} objects per turn of the read lock; visits outside the lock. */
  @Override
  public void forEachObject(Consumer<Attr> visitor) {
    Objects.requireNonNull(visitor, "visitor");
    long after = Long.MIN_VALUE;
    while (true) {
      long from = after;
      List<Attr> chunk = read(ns -> ns.objectsAfter(from, VISIT_CHUNK));
      chunk.forEach(visitor);
      if (chunk.size() < VISIT_CHUNK) {
        return;
      }
      after = chunk.get(chunk.size() - 1).handle().id();
    }
  }

  @Override
  public List<Doomed> doomed(int max) {
    return read(ns -> ns.doomed(max));
  }

  @Override
  public CompletableFuture<Void> reaped(java.util.Collection<Handle> metafiles) {
    List<Handle> copy = List.copyOf(metafiles); // no null
    return mutate(ns -> ns.reaped(copy));
  }

  @Override
  public List<Attr> objectsAfter(long after, int max) {
    if (max <= 0) {
      throw new FsException(Errno.EINVAL, "max " + max);
    }
    return read(ns -> ns.objectsAfter(after, max));
  }

  /** A check reads under the read lock; a repair is one mutation. */
  @Override
  public CompletableFuture<FsckReport> fsck(boolean repair, long nowNs) {
    if (repair) {
      return mutate(ns -> ns.fsck(true, nowNs));
    }
    try {
      return CompletableFuture.completedFuture(read(ns -> ns.fsck(false, nowNs)));
    } catch (FsException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  // ---- mutations ------------------------------------------------------------------------------

  @Override
  public CompletableFuture<NewEntry> createEntry(Handle parent, String name, NewObject obj, long nowNs) {
    Objects.requireNonNull(parent, "parent");
    return mutate(ns -> ns.create(parent, name, obj, nowNs));
  }

  @Override
  public CompletableFuture<NewEntry> linkEntry(Handle target, Handle parent, String name, long verifier, long nowNs) {
    Objects.requireNonNull(target, "target");
    Objects.requireNonNull(parent, "parent");
    return mutate(ns -> ns.link(target, parent, name, verifier, nowNs));
  }

  @Override
  public CompletableFuture<Removed> remove(Handle parent, String name, boolean directory, long nowNs) {
    Objects.requireNonNull(parent, "parent");
    return mutate(ns -> ns.remove(parent, name, directory, nowNs));
  }

  @Override
  public CompletableFuture<List<BatchRemoved>> removeBatch(Handle parent, List<Removal> names, long nowNs) {
    Objects.requireNonNull(parent, "parent");
    List<Removal> copy = List.copyOf(names);
    return mutate(ns -> ns.removeBatch(parent, copy, nowNs));
  }

  @Override
  public CompletableFuture<Renamed> rename(
      Handle srcParent, String srcName, Handle dstParent, String dstName, int flags, long verifier, long nowNs) {
    Objects.requireNonNull(srcParent, "srcParent");
    Objects.requireNonNull(dstParent, "dstParent");
    return mutate(ns -> ns.rename(srcParent, srcName, dstParent, dstName, flags, verifier, nowNs));
  }

  @Override
  public CompletableFuture<Attr> setattr(Handle handle, SetAttr change, long nowNs) {
    Objects.requireNonNull(handle, "handle");
    Objects.requireNonNull(change, "change");
    return mutate(ns -> ns.setattr(handle, change, nowNs));
  }

  @Override
  public CompletableFuture<Void> setxattr(Handle handle, String name, byte[] value, int flags, long nowNs) {
    Objects.requireNonNull(handle, "handle");
    byte[] copy = value == null ? null : value.clone(); // the caller may reuse its array at once
    return mutate(ns -> {
      ns.setxattr(handle, name, copy, flags, nowNs);
      return null;
    });
  }

  @Override
  public CompletableFuture<Void> headWrite(Handle handle, long offset, byte[] bytes) {
    Objects.requireNonNull(handle, "handle");
    byte[] copy = bytes == null ? null : bytes.clone(); // the caller may reuse its array at once
    return mutate(ns -> {
      ns.headWrite(handle, offset, copy);
      return null;
    });
  }

  @Override
  public CompletableFuture<Attr> headFlush(Handle handle, long offset, byte[] bytes, SetAttr change, long nowNs) {
    Objects.requireNonNull(handle, "handle");
    Objects.requireNonNull(change, "change");
    byte[] copy = bytes == null ? null : bytes.clone(); // the caller may reuse its array at once
    return mutate(ns -> {
      ns.headWrite(handle, offset, copy);
      return ns.setattr(handle, change, nowNs);
    });
  }

  @Override
  public CompletableFuture<Reservation> reserveHandles(Handle dir, int n) {
    Objects.requireNonNull(dir, "dir");
    return mutate(ns -> ns.reserveHandles(dir, n));
  }

  @Override
  public CompletableFuture<List<Created>> createBatch(Handle parent, List<BatchEntry> entries, long nowNs) {
    Objects.requireNonNull(parent, "parent");
    List<BatchEntry> copy = new java.util.ArrayList<>(entries.size()); // the caller may reuse its arrays at once
    for (BatchEntry e : entries) {
      copy.add(new BatchEntry(e.name(), e.handle(), e.obj(), e.headOffset(), e.head().clone(), e.change()));
    }
    return mutate(ns -> ns.createBatch(parent, copy, nowNs));
  }

  @Override
  public CompletableFuture<Void> removexattr(Handle handle, String name, long nowNs) {
    Objects.requireNonNull(handle, "handle");
    return mutate(ns -> {
      ns.removexattr(handle, name, nowNs);
      return null;
    });
  }
}
