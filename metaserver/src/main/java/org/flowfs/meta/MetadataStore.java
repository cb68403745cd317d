package org.flowfs.meta;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.flowfs.common.Attr;
import org.flowfs.common.Errno;
import org.flowfs.common.FileType;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.wire.MetaOp;
import org.flowfs.common.wire.MetaOp.Dirent;
import org.flowfs.common.wire.MetaOp.FsckProblem;

/**
 * The persistent namespace: objects (directories, metafiles, symlinks, special files) with their
 * attributes and layouts, directory entries, extended attributes (OrangeFS's Trove keyval and
 * dspace), and the heads of regular files: the bytes of their first {@link Layout#headBytes()},
 * kept here rather than in datafiles. Its only implementations are the MapDB store and an
 * in-memory one for tests.
 *
 * <p><b>Atomicity and durability.</b> Every mutation is atomic: after a crash the store holds the
 * state after some prefix of the acknowledged mutations, never part of one. A mutation's future
 * completes only after the commit that holds it is on disk. A mutation that fails (the future
 * completes exceptionally with an {@link org.flowfs.common.FsException}) changes nothing.
 *
 * <p><b>Threads.</b> All methods are thread safe. Reads block only briefly and see every
 * mutation whose future has completed; they never see part of a mutation. Mutations never block
 * the caller: they are queued and applied in order by one writer that commits in groups.
 *
 * <p><b>Time.</b> Mutations take the time to stamp ({@code nowNs}, nanoseconds since the epoch)
 * from the caller, so tests control it.
 */
public interface MetadataStore extends AutoCloseable {

  // ---- reads ----------------------------------------------------------------------------------

  /** @throws org.flowfs.common.FsException ENOENT */
  Attr getattr(Handle handle);

  /** @throws org.flowfs.common.FsException ENOENT, ENOTDIR when {@code parent} is no directory */
  Attr lookup(Handle parent, String name);

  /** @throws org.flowfs.common.FsException ENOENT, EINVAL when not a symlink */
  String readlink(Handle handle);

  /**
   * Up to {@code max} entries of {@code dir} whose names sort after {@code cursor} (null: from
   * the first), in byte order of their UTF-8 names; {@code eof} when no entry follows. Without
   * {@code plus} the entries' {@code attr} is null. No "." or "..".
   *
   * @throws org.flowfs.common.FsException ENOENT, ENOTDIR
   */
  DirPage readdir(Handle dir, String cursor, int max, boolean plus);

  /** @throws org.flowfs.common.FsException ENOENT, ENODATA */
  byte[] getxattr(Handle handle, String name);

  /** Names in byte order. @throws org.flowfs.common.FsException ENOENT */
  List<String> listxattr(Handle handle);

  /**
   * Up to {@code length} bytes of a regular file's head from {@code offset}: fewer, down to none,
   * past the end of what was written there (the bytes between that end and the file's size read
   * as zeros). The head never holds more than the layout's {@code headBytes}. Returns a new array.
   *
   * @throws org.flowfs.common.FsException ENOENT, EISDIR, EINVAL (not a regular file, or a
   *     negative offset or length)
   */
  byte[] headRead(Handle handle, long offset, int length);

  /**
   * An object's attributes and, for a regular file with a head, up to {@code headLength} bytes of
   * its head from the start (no more than its size; fewer past what was written there), read
   * together, so the bytes are those of the attributes' moment.
   *
   * @throws org.flowfs.common.FsException ENOENT; EINVAL for a negative {@code headLength}
   */
  Opened open(Handle handle, int headLength);

  /** How many objects, and how many of them directories, the namespace holds. */
  Counts counts();

  /** Visits every object (for fsck); not a snapshot: concurrent mutations may or may not show. */
  void forEachObject(Consumer<Attr> visitor);

  /**
   * Up to {@code max} objects with handles above {@code after}, in handle order: one page of
   * every object (fsck pages through them across calls; a page is consistent, the pages together
   * are not a snapshot).
   */
  List<Attr> objectsAfter(long after, int max);

  /**
   * Checks the namespace for what its rules never produce (dangling entries, unreachable objects,
   * wrong link counts; see {@code NamespaceCheck}), as one consistent snapshot: mutations wait
   * while it runs. With {@code repair} the fixes are one atomic mutation, durable when the future
   * completes; without, nothing changes and the future is complete on return.
   */
  CompletableFuture<FsckReport> fsck(boolean repair, long nowNs);

  // ---- mutations ------------------------------------------------------------------------------

  /**
   * Creates {@code name} in {@code parent}. The new object gets a fresh metadata handle, nlink 1
   * (2 for a directory, whose parent's nlink grows by one), all three times {@code nowNs}; the
   * parent's mtime and ctime become {@code nowNs}. Owner is {@code obj.uid()}; the group is
   * {@code obj.gid()} unless the parent has the set-group-id bit: then the parent's group, and a
   * new directory inherits the set-group-id bit.
   *
   * <p>A name taken by an object of {@code obj}'s type made with {@code obj}'s verifier (not 0)
   * is this create sent again: it is answered with that object, as it is now, and a parent's
   * former ctime of 0 (unknown); nothing changes.
   *
   * @throws org.flowfs.common.FsException EEXIST, ENOENT (parent), ENOTDIR (parent)
   */
  default CompletableFuture<Attr> create(Handle parent, String name, NewObject obj, long nowNs) {
    return createEntry(parent, name, obj, nowNs).thenApply(NewEntry::attr);
  }

  /** {@link #create}, with the parent's ctime before the change. */
  CompletableFuture<NewEntry> createEntry(Handle parent, String name, NewObject obj, long nowNs);

  /**
   * A new name for an existing non-directory: nlink grows by one, its ctime and the parent's
   * mtime/ctime become {@code nowNs}.
   *
   * @throws org.flowfs.common.FsException EEXIST, ENOENT, ENOTDIR, EPERM (target is a directory)
   */
  default CompletableFuture<Attr> link(Handle target, Handle parent, String name, long nowNs) {
    return linkEntry(target, parent, name, nowNs).thenApply(NewEntry::attr);
  }

  /** {@link #link}, with the parent's ctime before the change. */
  default CompletableFuture<NewEntry> linkEntry(Handle target, Handle parent, String name, long nowNs) {
    return linkEntry(target, parent, name, 0, nowNs);
  }

  /**
   * {@link #linkEntry(Handle, Handle, String, long)} with {@code verifier} (0: none) kept with the
   * target: when {@code name} names an object with that verifier already, this link was made
   * before (the same request sent again); answered with it as it is now and a former parent
   * ctime of 0, and nothing changes.
   */
  CompletableFuture<NewEntry> linkEntry(Handle target, Handle parent, String name, long verifier, long nowNs);

  /**
   * Removes a name: {@code directory} true is rmdir, false is unlink. The object loses a link;
   * when it has none left it is deleted ({@link Removed#gone()}), and the caller removes its
   * datafiles.
   *
   * @throws org.flowfs.common.FsException ENOENT, ENOTDIR (rmdir of a non-directory), EISDIR
   *     (unlink of a directory), ENOTEMPTY
   */
  CompletableFuture<Removed> remove(Handle parent, String name, boolean directory, long nowNs);

  /**
   * Removes each of {@code names} in {@code parent}, in order, in one mutation, as {@link #remove}
   * does; a name that fails changes nothing (its outcome is its errno) and the others still go.
   *
   * @return one outcome per name, in order
   */
  CompletableFuture<List<BatchRemoved>> removeBatch(Handle parent, List<Removal> names, long nowNs);

  /**
   * POSIX rename, atomic: renaming onto another name of the same object does nothing; an
   * existing target is replaced (a directory only by a directory and only when empty). With
   * {@link org.flowfs.common.wire.MetaOp.RenameReq#NOREPLACE} an existing target is EEXIST.
   *
   * @throws org.flowfs.common.FsException ENOENT, ENOTDIR, EISDIR, ENOTEMPTY, EEXIST, EINVAL (a
   *     directory into its own subtree)
   */
  default CompletableFuture<Renamed> rename(Handle srcParent, String srcName, Handle dstParent, String dstName, int flags,
      long nowNs) {
    return rename(srcParent, srcName, dstParent, dstName, flags, 0, nowNs);
  }

  /**
   * {@link #rename(Handle, String, Handle, String, int, long)} with {@code verifier} (0: none)
   * kept with the object moved: when {@code dstName} names an object with that verifier already,
   * this rename was made before (the same request sent again); answered with that object, nothing
   * replaced, and nothing changes.
   */
  CompletableFuture<Renamed> rename(Handle srcParent, String srcName, Handle dstParent, String dstName, int flags,
      long verifier, long nowNs);

  /**
   * Changes attributes as {@code change.mask()} selects (the {@code SetattrReq} bits), with the
   * time rules listed at {@link SetAttr}.
   *
   * @throws org.flowfs.common.FsException ENOENT, EISDIR (size of a directory), EINVAL
   */
  CompletableFuture<Attr> setattr(Handle handle, SetAttr change, long nowNs);

  /** @throws org.flowfs.common.FsException ENOENT, EEXIST (CREATE), ENODATA (REPLACE) */
  CompletableFuture<Void> setxattr(Handle handle, String name, byte[] value, int flags, long nowNs);

  /**
   * Writes {@code bytes} into a regular file's head at {@code offset}; the head grows as needed,
   * with zeros between its old end and {@code offset}. Neither the size nor any time changes: the
   * writer records those with a {@link #setattr}, as for bytes in datafiles. A truncate
   * ({@link SetAttr} SIZE) cuts the head at the new size; deleting the file deletes its head. The
   * caller may reuse {@code bytes} once this returns.
   *
   * @throws org.flowfs.common.FsException ENOENT, EISDIR, EINVAL (not a regular file, a negative
   *     offset, or bytes past the layout's {@code headBytes}, which for a file without a head is
   *     any byte)
   */
  CompletableFuture<Void> headWrite(Handle handle, long offset, byte[] bytes);

  /**
   * {@link #headWrite} and then {@link #setattr} of the same file, as one mutation: a writer's flush
   * of bytes in the head, whose size and times commit with them.
   *
   * @throws org.flowfs.common.FsException as {@link #headWrite} and {@link #setattr}
   */
  CompletableFuture<Attr> headFlush(Handle handle, long offset, byte[] bytes, SetAttr change, long nowNs);

  /**
   * Hands out {@code n} metadata handles for files {@link #createBatch} creates later, and reads
   * the ctime of directory {@code dir} in the same mutation: a mutation runs after every one
   * submitted before it, so the ctime holds every change submitted before this call. The handles
   * are consecutive; nothing else changes (a handle never used stays unused).
   *
   * @throws org.flowfs.common.FsException ENOENT, ENOTDIR ({@code dir}), EINVAL ({@code n < 1}),
   *     ENOSPC (handles exhausted)
   */
  CompletableFuture<Reservation> reserveHandles(Handle dir, int n);

  /**
   * Creates regular files and directories in {@code parent}, in order, in one mutation: each with
   * the handle a {@link #reserveHandles} handed out (EINVAL for one not handed out, or whose
   * object exists) and as {@link #create} makes them otherwise; then writes a file's head bytes as
   * {@link #headWrite} and, when it has one, makes its change as {@link #setattr} (as {@link
   * #headFlush}). A directory has neither (EINVAL), nor a layout. An entry
   * that fails changes nothing (its outcome is its errno) and the others still apply. The store
   * does not know which handles were used and removed since: the caller keeps track of them.
   * The caller may reuse the head arrays once this returns.
   *
   * @return one outcome per entry, in order
   */
  CompletableFuture<List<Created>> createBatch(Handle parent, List<BatchEntry> entries, long nowNs);

  /** @throws org.flowfs.common.FsException ENOENT, ENODATA */
  CompletableFuture<Void> removexattr(Handle handle, String name, long nowNs);

  /**
   * Files whose last name went, with their datafiles, until {@link #reaped} says the I/O servers
   * removed them (the removal queue, written in the same commit as the removal of the name).
   */
  List<Doomed> doomed(int max);

  /** The datafiles of {@code metafiles} are gone from the I/O servers: drop them from the queue. */
  CompletableFuture<Void> reaped(java.util.Collection<Handle> metafiles);

  /** A file in the removal queue and its datafiles. */
  record Doomed(Handle metafile, List<Handle> datafiles) {}

  /**
   * Makes every acknowledged mutation durable on disk (a client's fsync); blocks for the disk.
   * With a sync interval of zero every acknowledged mutation is durable already.
   */
  void sync();

  /** Commits what is pending and closes; idempotent. Pending mutations fail or complete first. */
  @Override
  void close();

  // ---- values ---------------------------------------------------------------------------------

  /**
   * What to create. {@code layout} for a regular file only (its datafiles are already reserved);
   * {@code target} for a symlink only; {@code verifier} (0: none) kept with the object, so the
   * same create sent again is recognised ({@link org.flowfs.common.wire.MetaOp.CreateReq#verifier()});
   * {@code umask} the creating process's, applied to {@code mode} unless the directory has a
   * default ACL, which replaces it ({@link org.flowfs.common.PosixAcl#inherit}).
   */
  record NewObject(FileType type, int mode, int uid, int gid, int rdev, Layout layout, String target, long verifier,
      int umask) {
    /** With no umask to apply. */
    public NewObject(FileType type, int mode, int uid, int gid, int rdev, Layout layout, String target, long verifier) {
      this(type, mode, uid, gid, rdev, layout, target, verifier, 0);
    }

    /** Without a verifier. */
    public NewObject(FileType type, int mode, int uid, int gid, int rdev, Layout layout, String target) {
      this(type, mode, uid, gid, rdev, layout, target, 0);
    }
  }

  /**
   * An attribute change: the {@code SetattrReq} mask bits and their values.
   *
   * <ul>
   *   <li>MODE, UID, GID: set; ctime = now.
   *   <li>SIZE: set the recorded size (EISDIR for a directory) and cut the head there; mtime =
   *       ctime = now.
   *   <li>SIZE_GROW: size = max(size, value); with MTIME the mtime is set too; ctime = now when
   *       anything changed.
   *   <li>ATIME/MTIME: set to the value; ATIME_NOW/MTIME_NOW: set to now; ctime = now.
   *   <li>KILL_SUID: clear S_ISUID, and S_ISGID if group-execute is set, on anything but a
   *       directory; ctime = now if changed.
   * </ul>
   */
  record SetAttr(int mask, int mode, int uid, int gid, long size, long atimeNs, long mtimeNs) {}

  /**
   * A new name's object and its directory's ctime before the change (the ctime after it is the
   * object's: the server stamps both with the same time).
   */
  record NewEntry(Attr attr, long parentWasNs) {}

  /**
   * {@code count} handles from {@code first} on (consecutive), and the directory's ctime when they
   * were handed out.
   */
  record Reservation(Handle first, int count, long dirCtimeNs) {
    /** Handle {@code i} of the reservation, {@code 0 <= i < count}. */
    public Handle handle(int i) {
      java.util.Objects.checkIndex(i, count);
      return Handle.of(first.server(), first.local() + i);
    }
  }

  /**
   * One object of a {@link #createBatch}: {@code name}, its reserved {@code handle}, the object
   * (a regular file with its layout, or a directory), {@code head} written at {@code headOffset}
   * (empty: none), and {@code change} (null: none).
   */
  record BatchEntry(String name, Handle handle, NewObject obj, long headOffset, byte[] head, SetAttr change) {
    public BatchEntry {
      java.util.Objects.requireNonNull(handle, "handle");
      java.util.Objects.requireNonNull(head, "head");
    }
  }

  /** The outcome of one {@link BatchEntry}: what it made, or ({@code entry} null) its errno. */
  record Created(NewEntry entry, org.flowfs.common.Errno errno) {}

  /**
   * The removed object's attributes (nlink already decremented), whether it is gone, and its
   * directory's ctime before the change.
   */
  record Removed(Attr attr, boolean gone, long parentWasNs, long parentNowNs) {}

  /** One name of a {@link #removeBatch}: {@code directory} true is rmdir, false is unlink. */
  record Removal(String name, boolean directory) {}

  /** The outcome of one name of a {@link #removeBatch}: what it removed, or ({@code removed} null) its errno. */
  record BatchRemoved(Removed removed, Errno errno) {}

  /** The moved object, and the replaced one (null if none) with whether it is gone. */
  record Renamed(Attr moved, Attr replaced, boolean replacedGone) {}

  record DirPage(List<Dirent> entries, boolean eof) {}

  record Counts(long objects, long directories) {}

  /** What {@link #open} read: the attributes, and the head's first bytes (empty when none). */
  record Opened(Attr attr, byte[] head) {}

  /**
   * What {@link #fsck} found: {@code found} problems, the first {@link MetaOp#MAX_FSCK_PROBLEMS}
   * listed; {@code objects} and {@code entries} it checked.
   */
  record FsckReport(long objects, long entries, long found, List<FsckProblem> problems) {}
}
