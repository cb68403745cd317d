package org.flowfs.common.wire;

import io.netty.buffer.ByteBuf;
import java.util.List;
import java.util.Objects;
import org.flowfs.common.Attr;
import org.flowfs.common.DistSpec;
import org.flowfs.common.FileType;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.Names;

/**
 * The metadata server's operations (PVFS2's {@code PVFS_sys_*} over the wire). Objects are named
 * by handle; a path is resolved one lookup at a time. Ids 100..199.
 */
public sealed interface MetaOp extends Message {
  int MAX_READDIR = 4096;

  /**
   * The objects this request names by handle (a directory it looks in or changes, an object it
   * reads or changes); none for a request that names no object. Objects a request reaches through
   * a name (the target of a remove or rename) are not among them.
   */
  default List<Handle> named() {
    return List.of();
  }

  /** The object named {@code name} in directory {@code parent}. */
  @Wire(100)
  record LookupReq(Handle parent, String name) implements MetaOp, Req<EntryResp> {
    @Override
    public List<Handle> named() {
      return List.of(parent());
    }

    public LookupReq {
      Objects.requireNonNull(parent, "parent");
      Names.check(name);
    }
  }

  /**
   * An object's attributes (after a create, lookup or link, those of the object named). An answer
   * to a change of a directory's entries (create, symlink, link) also carries {@code
   * parentWasNs}, the directory's ctime before the change: a client that saw that ctime knows no
   * other change came between (NFS's weak cache consistency data); 0 in every other answer. The
   * directory's ctime after the change is the object's ctime.
   */
  @Wire(101)
  record EntryResp(Attr attr, long parentWasNs) implements MetaOp {
    public EntryResp(Attr attr) {
      this(attr, 0);
    }
  }

  @Wire(102)
  record GetattrReq(Handle handle) implements MetaOp, Req<EntryResp> {
    @Override
    public List<Handle> named() {
      return List.of(handle());
    }

    public GetattrReq {
      Objects.requireNonNull(handle, "handle");
    }
  }

  /**
   * Changes the attributes selected by {@code mask} ({@link SetattrReq} constants).
   * {@link #SIZE} records a new size (the client has truncated the datafiles); {@link #SIZE_GROW}
   * records {@code size} only if it is larger (a writer's flush); times {@code *_NOW} use the
   * server's clock.
   */
  @Wire(103)
  record SetattrReq(Handle handle, int mask, int mode, int uid, int gid, long size, long atimeNs, long mtimeNs)
      implements MetaOp, Req<EntryResp> {
    @Override
    public List<Handle> named() {
      return List.of(handle());
    }

    public static final int MODE = 1;
    public static final int UID = 2;
    public static final int GID = 4;
    public static final int SIZE = 8;
    public static final int SIZE_GROW = 16;
    public static final int ATIME = 32;
    public static final int MTIME = 64;
    public static final int ATIME_NOW = 128;
    public static final int MTIME_NOW = 256;
    /** Clear set-user-id and set-group-id bits, as a write by a non-owner does. */
    public static final int KILL_SUID = 512;
    /** Mode, owner and explicit times (and KILL_SUID): what a change kept for later may hold. */
    public static final int ATTRIBUTES = MODE | UID | GID | ATIME | MTIME | KILL_SUID;

    /** The same change of another object. */
    public SetattrReq of(Handle other) {
      return new SetattrReq(other, mask, mode, uid, gid, size, atimeNs, mtimeNs);
    }

    public SetattrReq {
      Objects.requireNonNull(handle, "handle");
      if (size < 0) {
        throw new IllegalArgumentException("negative size");
      }
      if ((mode & ~07777) != 0) {
        throw new IllegalArgumentException("mode bits outside 07777");
      }
    }
  }

  /**
   * Creates {@code name} in {@code parent}: a regular file (with its datafiles), a directory, a
   * FIFO, socket or device node. {@code dist} and {@code servers} override the directory's and
   * the file system's defaults when non-null/non-zero.
   *
   * <p>A {@code verifier} other than 0 (the sender's random number for this create) is kept with
   * the new object: the same request sent again, after its connection dropped before the answer,
   * finds the name taken by an object of that type with that verifier and is answered with it,
   * as the first time (its parent's former ctime unknown: 0), rather than EEXIST. So a create is
   * sent again safely across a metadata server restart (as NFSv3's exclusive create does).
   *
   * <p>{@code umask} (the creating process's) applies to {@code mode} unless the directory has a
   * default ACL, which replaces it (POSIX.1e; {@link org.flowfs.common.PosixAcl#inherit}): only
   * the metadata server knows which, at the create. 0 for a mode that is final.
   */
  @Wire(104)
  record CreateReq(Handle parent, String name, FileType type, int mode, int uid, int gid, int rdev,
      DistSpec dist, int servers, long verifier, int umask) implements MetaOp, Req<EntryResp> {
    @Override
    public List<Handle> named() {
      return List.of(parent());
    }

    /** With no umask to apply. */
    public CreateReq(Handle parent, String name, FileType type, int mode, int uid, int gid, int rdev, DistSpec dist,
        int servers, long verifier) {
      this(parent, name, type, mode, uid, gid, rdev, dist, servers, verifier, 0);
    }

    /** Without a verifier: not recognised when sent again. */
    public CreateReq(Handle parent, String name, FileType type, int mode, int uid, int gid, int rdev, DistSpec dist,
        int servers) {
      this(parent, name, type, mode, uid, gid, rdev, dist, servers, 0);
    }

    /** This request with {@code verifier}. */
    public CreateReq verified(long verifier) {
      return new CreateReq(parent, name, type, mode, uid, gid, rdev, dist, servers, verifier, umask);
    }

    public CreateReq {
      Objects.requireNonNull(parent, "parent");
      Names.checkNew(name);
      if (type == null || type == FileType.SYMLINK) {
        throw new IllegalArgumentException("type");
      }
      if ((mode & ~07777) != 0 || servers < 0 || (umask & ~0777) != 0) {
        throw new IllegalArgumentException("mode, servers or umask");
      }
    }
  }

  /** A symbolic link; {@code verifier} as {@link CreateReq#verifier()}. */
  @Wire(105)
  record SymlinkReq(Handle parent, String name, String target, int uid, int gid, long verifier)
      implements MetaOp, Req<EntryResp> {
    @Override
    public List<Handle> named() {
      return List.of(parent());
    }

    /** Without a verifier: not recognised when sent again. */
    public SymlinkReq(Handle parent, String name, String target, int uid, int gid) {
      this(parent, name, target, uid, gid, 0);
    }

    public SymlinkReq {
      Objects.requireNonNull(parent, "parent");
      Names.checkNew(name);
      Names.checkTarget(target);
    }
  }

  @Wire(106)
  record ReadlinkReq(Handle handle) implements MetaOp, Req<ReadlinkResp> {
    @Override
    public List<Handle> named() {
      return List.of(handle());
    }

    public ReadlinkReq {
      Objects.requireNonNull(handle, "handle");
    }
  }

  @Wire(107)
  record ReadlinkResp(String target) implements MetaOp {}

  /**
   * A new name {@code name} in {@code parent} for the existing non-directory {@code target}; a
   * {@code verifier} other than 0 is kept with the target, and the same request sent again finds
   * {@code name} naming an object with it: answered as the first time (as {@link CreateReq#verifier()}).
   */
  @Wire(108)
  record LinkReq(Handle target, Handle parent, String name, long verifier) implements MetaOp, Req<EntryResp> {
    @Override
    public List<Handle> named() {
      return List.of(target(), parent());
    }

    /** Without a verifier: not recognised when sent again. */
    public LinkReq(Handle target, Handle parent, String name) {
      this(target, parent, name, 0);
    }

    public LinkReq {
      Objects.requireNonNull(target, "target");
      Objects.requireNonNull(parent, "parent");
      Names.checkNew(name);
    }
  }

  /**
   * Removes a name. {@code directory} says whether the caller expects a directory (rmdir) or not
   * (unlink). When the last name of a file goes, the server removes its datafiles.
   */
  @Wire(109)
  record RemoveReq(Handle parent, String name, boolean directory) implements MetaOp, Req<RemoveResp> {
    @Override
    public List<Handle> named() {
      return List.of(parent());
    }

    public RemoveReq {
      Objects.requireNonNull(parent, "parent");
      Names.checkNew(name);
    }
  }

  /**
   * The removed object, whether it is gone (its last name went), the time the server stamped the
   * parent directory's mtime and ctime with (so a client can update what it caches of it), and the
   * parent's ctime before (see {@link EntryResp}).
   */
  @Wire(110)
  record RemoveResp(Handle handle, boolean gone, long timeNs, long parentWasNs) implements MetaOp {}

  /**
   * Renames atomically, replacing an existing target as POSIX rename does. A {@code verifier}
   * other than 0 is kept with the object moved, and the same request sent again (its answer was
   * lost) finds {@code dstName} naming an object with it: answered with that object, nothing
   * replaced, and nothing moves again (as {@link CreateReq#verifier()}).
   */
  @Wire(111)
  record RenameReq(Handle srcParent, String srcName, Handle dstParent, String dstName, int flags, long verifier)
      implements MetaOp, Req<RenameResp> {
    @Override
    public List<Handle> named() {
      return List.of(srcParent(), dstParent());
    }

    /** Without a verifier: not recognised when sent again. */
    public RenameReq(Handle srcParent, String srcName, Handle dstParent, String dstName, int flags) {
      this(srcParent, srcName, dstParent, dstName, flags, 0);
    }

    /** Fail with EEXIST rather than replace. */
    public static final int NOREPLACE = 1;

    public RenameReq {
      Objects.requireNonNull(srcParent, "srcParent");
      Objects.requireNonNull(dstParent, "dstParent");
      Names.checkNew(srcName);
      Names.checkNew(dstName);
    }
  }

  /** The handle that was renamed and the handle that was replaced and lost its last name, if any. */
  @Wire(112)
  record RenameResp(Handle moved, Handle replaced) implements MetaOp {}

  /**
   * Up to {@code max} entries of a directory in name order, starting after {@code cursor} (null:
   * from the start). With {@code plus}, each entry carries its attributes.
   */
  @Wire(113)
  record ReaddirReq(Handle dir, String cursor, int max, boolean plus) implements MetaOp, Req<ReaddirResp> {
    @Override
    public List<Handle> named() {
      return List.of(dir());
    }

    public ReaddirReq {
      Objects.requireNonNull(dir, "dir");
      if (max <= 0 || max > MAX_READDIR) {
        throw new IllegalArgumentException("max " + max);
      }
    }
  }

  @Wire(114)
  record ReaddirResp(List<Dirent> entries, boolean eof) implements MetaOp {}

  /**
   * One directory entry; {@code attr} only with {@code plus}, and then {@code xattrs} says whether
   * the object has extended attributes (without {@code plus} it is true: not known to have none).
   */
  record Dirent(String name, Handle handle, FileType type, Attr attr, boolean xattrs) {}

  /** File and directory counts, for statfs. */
  @Wire(115)
  record MetaStatfsReq() implements MetaOp, Req<MetaStatfsResp> {}

  /**
   * Object counts, and the capacity of the file system holding the metadata store (metadata and
   * the heads of files), as {@link IoOp.IoStatfsResp}'s; all zero for a store kept in memory.
   */
  @Wire(116)
  record MetaStatfsResp(long objects, long directories, long ioServers, long total, long free, long available,
      long device) implements MetaOp {
    public org.flowfs.common.StorageSpace space() {
      return new org.flowfs.common.StorageSpace(total, free, available, device);
    }
  }

  @Wire(117)
  record SetxattrReq(Handle handle, String name, byte[] value, int flags) implements MetaOp, Req<CommonOp.OkResp> {
    @Override
    public List<Handle> named() {
      return List.of(handle());
    }

    public static final int CREATE = 1;
    public static final int REPLACE = 2;
    /**
     * With {@link org.flowfs.common.PosixAcl#ACCESS}: clear the set-group-ID bit too (the caller
     * is neither in the file's group nor privileged, as the kernel's {@code
     * FUSE_SETXATTR_ACL_KILL_SGID} says).
     */
    public static final int KILL_SGID = 4;

    public SetxattrReq {
      Objects.requireNonNull(handle, "handle");
      if (name == null || name.isEmpty() || name.length() > 255 || value == null || value.length > 65536) {
        throw new IllegalArgumentException("xattr name or value size");
      }
    }
  }

  @Wire(118)
  record GetxattrReq(Handle handle, String name) implements MetaOp, Req<XattrResp> {
    @Override
    public List<Handle> named() {
      return List.of(handle());
    }

    public GetxattrReq {
      Objects.requireNonNull(handle, "handle");
      Objects.requireNonNull(name, "name");
    }
  }

  @Wire(119)
  record XattrResp(byte[] value) implements MetaOp {}

  @Wire(120)
  record ListxattrReq(Handle handle) implements MetaOp, Req<XattrNamesResp> {
    @Override
    public List<Handle> named() {
      return List.of(handle());
    }

    public ListxattrReq {
      Objects.requireNonNull(handle, "handle");
    }
  }

  @Wire(121)
  record XattrNamesResp(List<String> names) implements MetaOp {}

  @Wire(122)
  record RemovexattrReq(Handle handle, String name) implements MetaOp, Req<CommonOp.OkResp> {
    @Override
    public List<Handle> named() {
      return List.of(handle());
    }

    public RemovexattrReq {
      Objects.requireNonNull(handle, "handle");
      Objects.requireNonNull(name, "name");
    }
  }

  // ---- a file's head: its first Layout.headBytes() bytes, kept with its metadata ---------------

  /**
   * Writes {@code payload} at {@code offset} of a regular file's head; the whole write lies below
   * the layout's {@code headBytes} (EINVAL otherwise; EISDIR/EINVAL for other types). Bytes
   * between the head's stored end and {@code offset} read as zeros. The file's recorded size is
   * not changed: the writer records it as it does for bytes in datafiles.
   */
  @Wire(145)
  record HeadWriteReq(Handle handle, long offset, ByteBuf payload) implements MetaOp, HasPayload, Req<CommonOp.OkResp> {
    @Override
    public List<Handle> named() {
      return List.of(handle());
    }

    public HeadWriteReq {
      Objects.requireNonNull(handle, "handle");
      if (offset < 0 || offset > org.flowfs.common.Layout.MAX_HEAD) {
        throw new IllegalArgumentException("offset " + offset);
      }
    }
  }

  /**
   * Reads up to {@code length} bytes at {@code offset} of a regular file's head: fewer (down to
   * none) past the head's stored end, which reads as zeros up to the recorded size.
   */
  @Wire(146)
  record HeadReadReq(Handle handle, long offset, int length) implements MetaOp, Req<HeadReadResp> {
    @Override
    public List<Handle> named() {
      return List.of(handle());
    }

    public HeadReadReq {
      Objects.requireNonNull(handle, "handle");
      if (offset < 0 || length < 0 || offset > org.flowfs.common.Layout.MAX_HEAD) {
        throw new IllegalArgumentException("offset or length");
      }
    }
  }

  @Wire(147)
  record HeadReadResp(ByteBuf payload) implements MetaOp, HasPayload {}

  /**
   * A writer's flush of bytes that lie in a file's head: writes {@code payload} at {@code offset}
   * as {@link HeadWriteReq} does and makes the change {@code record} (a {@link SetattrReq} of the
   * same file: the size and times the writes made) in the same mutation, so the bytes and the size
   * commit together; answers the attributes after it. A small file's close is this one call.
   */
  @Wire(148)
  record HeadFlushReq(SetattrReq record, long offset, ByteBuf payload) implements MetaOp, HasPayload, Req<EntryResp> {
    @Override
    public List<Handle> named() {
      return List.of(record().handle());
    }

    public HeadFlushReq {
      Objects.requireNonNull(record, "record");
      if (offset < 0 || offset > org.flowfs.common.Layout.MAX_HEAD) {
        throw new IllegalArgumentException("offset " + offset);
      }
    }
  }

  /**
   * What a close-to-open open of a small file needs, in one call: the object's attributes now and,
   * for a regular file with a head, the first {@code min(headLength, size)} bytes of it (fewer past
   * what was written there: the rest of the size reads as zeros, as from {@link HeadReadReq}).
   * {@code headLength} 0 asks for the attributes only; it is at most {@link
   * org.flowfs.common.Layout#MAX_HEAD}.
   */
  @Wire(149)
  record OpenReq(Handle handle, int headLength) implements MetaOp, Req<OpenResp> {
    @Override
    public List<Handle> named() {
      return List.of(handle());
    }

    public OpenReq {
      Objects.requireNonNull(handle, "handle");
      if (headLength < 0 || headLength > org.flowfs.common.Layout.MAX_HEAD) {
        throw new IllegalArgumentException("head length " + headLength);
      }
    }
  }

  /** The attributes of an {@link OpenReq}'s object and its head's first bytes (none if it has no head). */
  @Wire(150)
  record OpenResp(Attr attr, ByteBuf payload) implements MetaOp, HasPayload {}

  // ---- directory leases: a client's creates in a directory it holds, sent in batches ------------

  /** The most files one lease reserves ahead, or one batch creates. */
  int MAX_LEASE_FILES = 256;
  /** The most names a lease's grant lists ({@link DirLeaseReq#names()}). */
  int MAX_LEASE_NAMES = 16_384;

  /**
   * Asks for a lease on directory {@code dir}: while it lasts no other client's request that
   * reads or changes the directory (its entries, its attributes, the directory itself) is
   * answered, and the holder creates regular files in it locally and sends them in {@link
   * CreateBatchReq}s. The server reserves {@code files} new files ahead (handles and datafiles)
   * for it. A request of another client that touches the directory recalls the lease: it waits
   * until the holder has sent what it holds and ended the lease, or the lease expired. With
   * {@code names}, the answer lists every name in the directory at the ctime it reports (a holder
   * that did not know them); a directory of more than {@link #MAX_LEASE_NAMES} names is refused.
   * {@code knownCtimeNs} (0: none): the ctime at which the holder knows every name; the answer
   * lists the names, as with {@code names}, when the directory's ctime is another by then (it
   * changed in a way the holder did not follow: its own attributes, or another client).
   */
  @Wire(151)
  record DirLeaseReq(Handle dir, int files, boolean names, long knownCtimeNs) implements MetaOp, Req<DirLeaseResp> {
    @Override
    public List<Handle> named() {
      return List.of(dir());
    }

    /** Without the names. */
    public DirLeaseReq(Handle dir, int files) {
      this(dir, files, false, 0);
    }

    /** With the names, or without them and with no ctime known. */
    public DirLeaseReq(Handle dir, int files, boolean names) {
      this(dir, files, names, 0);
    }

    public DirLeaseReq {
      Objects.requireNonNull(dir, "dir");
      if (files < 1 || files > MAX_LEASE_FILES) {
        throw new IllegalArgumentException("files " + files);
      }
    }
  }

  /**
   * A granted lease ({@code lease} != 0; 0: not granted, another client holds one or the
   * directory's files are not made this way), the directory's ctime when it was granted (after
   * every change admitted before it), how long it lasts without a batch ({@code termNs}), and the
   * files reserved for it; and the directory's names then, when they were asked for (else null).
   */
  @Wire(152)
  record DirLeaseResp(long lease, long ctimeNs, long termNs, List<Reserved> reserved, List<String> names)
      implements MetaOp {
    /** Without the names. */
    public DirLeaseResp(long lease, long ctimeNs, long termNs, List<Reserved> reserved) {
      this(lease, ctimeNs, termNs, reserved, null);
    }
  }

  /** A file reserved for a lease: the handle and layout its create will have. */
  record Reserved(Handle handle, Layout layout) {
    public Reserved {
      Objects.requireNonNull(handle, "handle");
      Objects.requireNonNull(layout, "layout");
    }
  }

  /**
   * Creates, in one mutation, regular files the holder of {@code lease} made in {@code dir}, in
   * order, each with a reserved handle; renews the lease, or ends it ({@code end}: the holder
   * sends nothing more under it; reserved files it did not use are given back). {@code more}:
   * files to reserve on top (none once recalled or ended). The heads of the files follow in
   * {@code payload}, each {@link BatchCreate#headLength()} bytes, in order. {@code dirRecord}, when
   * not null, changes the directory's own mode, owner and times (a {@link SetattrReq} of {@code
   * dir} with no other bits; else EINVAL, nothing done) after the creates, in order: the changes
   * the holder made while it held the lease. A lease that is not known (ended, expired, the
   * server restarted) creates and changes nothing: every entry fails with ESTALE (the whole
   * request, when it carries a {@code dirRecord}).
   *
   * <p>{@code removes}: names the holder removed in {@code dir} under its lease, removed after the
   * creates and before the {@code dirRecord}, in order, as {@link RemoveReq} removes them (each in
   * {@link CreateBatchResp#removed()}, in order). The holder removes no name it made again after
   * it in the same batch.
   */
  @Wire(153)
  record CreateBatchReq(Handle dir, long lease, List<BatchCreate> creates, List<BatchRemove> removes, SetattrReq dirRecord,
      boolean end, int more, ByteBuf payload) implements MetaOp, HasPayload, Req<CreateBatchResp> {
    @Override
    public List<Handle> named() {
      return List.of(dir());
    }

    /** Without removes. */
    public CreateBatchReq(Handle dir, long lease, List<BatchCreate> creates, SetattrReq dirRecord, boolean end, int more,
        ByteBuf payload) {
      this(dir, lease, creates, List.of(), dirRecord, end, more, payload);
    }

    public CreateBatchReq {
      Objects.requireNonNull(dir, "dir");
      Objects.requireNonNull(creates, "creates");
      Objects.requireNonNull(removes, "removes");
      if (lease == 0 || creates.size() > MAX_LEASE_FILES || removes.size() > MAX_LEASE_FILES || more < 0
          || more > MAX_LEASE_FILES) {
        throw new IllegalArgumentException("lease, creates, removes or more");
      }
    }
  }

  /**
   * One object of a batch: a regular file made as {@link CreateReq} makes one (mode, owner), with
   * the reserved {@code handle} and its layout, or a directory ({@code directory}), which takes
   * the handle only. {@code record}, when not null, is the change a file's writer's close recorded
   * (a {@link SetattrReq} of {@code handle}), applied with its head bytes ({@code headLength} at
   * {@code headOffset}) in the same mutation, as {@link HeadFlushReq} does; null: the file is
   * still open, only created. A directory has neither (the server refuses one that has).
   * {@code leaseFiles} &gt; 0 (a directory only, at most {@link #MAX_LEASE_FILES}): the holder
   * wants a lease on the new directory too, with that many files reserved, granted in the answer
   * ({@link BatchResult#lease()}) rather than by a {@link DirLeaseReq} of its own after it; 0: none.
   * The server refuses other values with EINVAL for the entry.
   */
  record BatchCreate(String name, boolean directory, int leaseFiles, Handle handle, int mode, int uid, int gid,
      SetattrReq record, long headOffset, int headLength) {
    public BatchCreate {
      Names.checkNew(name);
      Objects.requireNonNull(handle, "handle");
      if ((mode & ~07777) != 0 || headOffset < 0 || headLength < 0
          || headOffset + headLength > org.flowfs.common.Layout.MAX_HEAD) {
        throw new IllegalArgumentException("mode or head");
      }
      if (record != null && !record.handle().equals(handle)) {
        throw new IllegalArgumentException("a record of another handle");
      }
    }

    /** What it makes: a directory or a regular file. */
    public FileType type() {
      return directory ? FileType.DIRECTORY : FileType.REGULAR;
    }
  }

  /**
   * What each create of a batch made (in order), whether the lease is recalled (the holder ends
   * it with its next batch), and the files reserved on top.
   */
  @Wire(154)
  record CreateBatchResp(List<BatchResult> results, List<RemoveResult> removed, boolean recalled, List<Reserved> reserved)
      implements MetaOp {
    /** With no removes. */
    public CreateBatchResp(List<BatchResult> results, boolean recalled, List<Reserved> reserved) {
      this(results, List.of(), recalled, reserved);
    }
  }

  /**
   * One name a batch removes: a regular file or symbolic link ({@code dirLease} 0, not {@code
   * made}); an empty directory the holder leases too, under lease {@code dirLease}: that lease
   * ends with the directory; or ({@code made}) an empty directory the holder made under the
   * batch's own lease, held since, and no lease of its own: nobody else can have reached it (a
   * lookup or listing of the batch's directory waits for that lease's end). A directory whose
   * lease is not the one named (ended, expired), or a {@code made} one leased now: not removed,
   * ESTALE. A directory that is not empty: ENOTEMPTY.
   *
   * <p>{@code dirBatches}: how many batches the holder sent under {@code dirLease} before this
   * remove (its last one may still be on its way, on another connection). The server removes the
   * directory once it has taken in that many batches of that lease, or after a lease term: the
   * holder need not wait for the answer to the directory's last batch before its rmdir goes.
   */
  record BatchRemove(String name, long dirLease, boolean made, int dirBatches) {
    public BatchRemove {
      Names.checkNew(name);
      if (made && dirLease != 0) {
        throw new IllegalArgumentException("a directory made under the batch's lease names no lease of its own");
      }
      if (dirBatches < 0 || dirLease == 0 && dirBatches != 0) {
        throw new IllegalArgumentException(dirBatches + " batches of lease " + dirLease);
      }
    }

    public BatchRemove(String name, long dirLease, boolean made) {
      this(name, dirLease, made, 0);
    }

    /** The removal of an empty directory under its lease {@code dirLease}. */
    public BatchRemove(String name, long dirLease) {
      this(name, dirLease, false);
    }

    /** The removal of an empty directory under its lease {@code dirLease}, after {@code dirBatches} batches sent under it. */
    public static BatchRemove afterBatches(String name, long dirLease, int dirBatches) {
      return new BatchRemove(name, dirLease, false, dirBatches);
    }

    /** An unlink of a file or symbolic link. */
    public static BatchRemove unlink(String name) {
      return new BatchRemove(name, 0);
    }

    /** The removal of an empty directory made under the batch's lease and not leased itself. */
    public static BatchRemove madeDir(String name) {
      return new BatchRemove(name, 0, true);
    }

    public boolean directory() {
      return dirLease != 0 || made;
    }
  }

  /**
   * One remove's outcome in a batch: the object that had the name, whether that was its last
   * name ({@code gone}), and the directory's ctime before and after, or the errno ({@code handle}
   * null) when it failed and changed nothing.
   */
  record RemoveResult(Handle handle, boolean gone, long parentWasNs, long parentNowNs, int errno) {}

  /**
   * One create's outcome: the object's attributes and the directory's ctime before it (as {@link
   * EntryResp}), or the errno ({@code attr} null) when it failed and changed nothing; for a
   * directory made with {@link BatchCreate#leaseFiles()}, the lease on it ({@code lease}: null
   * when none was asked for or could be granted, as when the batch's own lease is recalled).
   */
  record BatchResult(Attr attr, long parentWasNs, int errno, DirLeaseResp lease) {}

  /**
   * Makes, with a call of its own, a file or directory a lease holder made under its lease whose
   * batch was lost (the metadata server restarted, or the connection dropped before the answer):
   * {@code create} as its batch had it (no {@code leaseFiles}), with its reserved handle, which
   * the file keeps, and so keeps what was written into its reserved datafiles; its head bytes
   * follow in {@code payload}. {@code layout} is the layout the reservation came with (null for a
   * directory). The server takes the reservation back from the expired lease that left it unused
   * (its own layout counts), or, for a handle reserved before the server last started, whose
   * reservations it no longer knows, takes this layout. Answered as {@link CreateReq}; ESTALE
   * when the server knows no reservation of a handle it handed out (taken back with its
   * datafiles, or used: the lost batch may have been made after all); EINVAL for a handle from
   * before that is in use, or one never handed out. Waits for a lease on {@code dir}, as a
   * create does.
   */
  @Wire(155)
  record ReclaimReq(Handle dir, BatchCreate create, Layout layout, ByteBuf payload)
      implements MetaOp, HasPayload, Req<EntryResp> {
    @Override
    public List<Handle> named() {
      return List.of(dir());
    }

    public ReclaimReq {
      Objects.requireNonNull(dir, "dir");
      Objects.requireNonNull(create, "create");
    }
  }

  // ---- fsck (flowfs fsck): read-only unless repairing ------------------------------------------

  /** The most problems one {@link FsckNamespaceResp} lists (it counts them all). */
  int MAX_FSCK_PROBLEMS = 10_000;

  /**
   * Checks the namespace as one consistent snapshot (mutations wait meanwhile): directory entries
   * whose object or parent is missing, objects no path from the root reaches, link counts, the
   * parent links of directories, extended attributes of missing objects, the object counters.
   * With {@code repair}, fixes all of it in one atomic mutation: dangling entries are removed,
   * unreachable objects get a name in {@code /lost+found}, counts are set to what they should be.
   */
  @Wire(140)
  record FsckNamespaceReq(boolean repair) implements MetaOp, Req<FsckNamespaceResp> {}

  /**
   * What a namespace check found: {@code found} problems, the first {@link #MAX_FSCK_PROBLEMS} of
   * them listed; {@code repaired} when they were fixed. {@code objects} and {@code entries}: how
   * many it checked.
   */
  @Wire(141)
  record FsckNamespaceResp(long objects, long entries, long found, boolean repaired, List<FsckProblem> problems)
      implements MetaOp {
    public FsckNamespaceResp {
      if (problems.size() > MAX_FSCK_PROBLEMS) {
        throw new IllegalArgumentException(problems.size() + " problems listed");
      }
    }
  }

  /**
   * One problem in the namespace: the object ({@code handle}) and the entry ({@code name} in
   * {@code parent}) it concerns, either may be null, and in {@code detail} what is wrong and what
   * repairing it does.
   */
  record FsckProblem(FsckProblem.Kind kind, Handle handle, Handle parent, String name, String detail) {
    public enum Kind {
      /** An object record that cannot be read: removed (its entries then dangle). */
      BAD_OBJECT,
      /** An entry naming a missing object, or in a missing or non-directory parent: removed. */
      DANGLING_ENTRY,
      /** An entry recording another type than its object's: rewritten. */
      ENTRY_TYPE,
      /** A second name of a directory: removed. */
      EXTRA_DIRECTORY_NAME,
      /** An object no path from the root reaches: named in /lost+found. */
      UNREACHABLE,
      /** A link count that differs from the names (and subdirectories) an object has: set. */
      NLINK,
      /** A directory whose ".." is not the directory holding it: set. */
      DIRECTORY_PARENT,
      /** Extended attributes of a missing object: removed. */
      ORPHAN_XATTR,
      /** A head (a file's first bytes) of a missing object: removed. */
      ORPHAN_HEAD,
      /** The object or directory counter (statfs) is off: set. */
      COUNTER
    }
  }

  /**
   * The datafile handles the layouts of regular files reference, paged by object: those of objects
   * with handles above {@code cursor}, whole objects, until about {@code max} handles.
   */
  @Wire(142)
  record FsckDatafilesReq(long cursor, int max) implements MetaOp, Req<FsckDatafilesResp> {
    public FsckDatafilesReq {
      if (max <= 0 || max > 65536) {
        throw new IllegalArgumentException("max " + max);
      }
    }
  }

  /** A page of datafile handles; {@code next} is the cursor of the following page. */
  @Wire(143)
  record FsckDatafilesResp(List<Handle> datafiles, long next, boolean eof) implements MetaOp {}

  /**
   * The datafile handles the metadata server holds for files not created yet (its precreate
   * pools): not referenced by any layout, yet not orphans.
   */
  @Wire(144)
  record FsckReservedReq() implements MetaOp, Req<FsckDatafilesResp> {}

  /** Makes every acknowledged metadata change durable on disk (a client's fsync, fsyncdir). */
  @Wire(123)
  record MetaSyncReq() implements MetaOp, Req<CommonOp.OkResp> {}

  /**
   * A {@code flock(2)} lock on the file {@code handle}: {@link #SHARED}, {@link #EXCLUSIVE} or
   * {@link #UNLOCK}, for {@code owner} (the kernel's id of the open file description) on {@code
   * client} (a random id the client picked at its start). Granted at once or refused with EAGAIN
   * (the client waits and asks again for a blocking call); converting a lock replaces it. {@code
   * reclaim}: the client held this lock before the metadata server restarted (only these are
   * granted while a restarted server waits for its locks' holders, {@code meta.lock-term}). A
   * client's locks last while it renews them ({@link LockRenewReq}). Locks are the metadata
   * server's memory: nothing of them is stored, nor held back by directory leases. Answered with
   * the term the client renews within.
   */
  @Wire(124)
  record FlockReq(Handle handle, long client, long owner, int op, boolean reclaim) implements MetaOp, Req<LockRenewResp> {
    public static final int SHARED = 1;
    public static final int EXCLUSIVE = 2;
    public static final int UNLOCK = 3;

    public FlockReq {
      Objects.requireNonNull(handle, "handle");
      if (op < SHARED || op > UNLOCK) {
        throw new IllegalArgumentException("flock op " + op);
      }
    }
  }

  /**
   * A POSIX record lock ({@code fcntl(2)}'s {@code F_SETLK}, {@code F_SETLKW}, {@code F_GETLK}) on
   * bytes {@code [start, end]} of the file {@code handle} ({@code end} {@link
   * org.flowfs.common.RecordLocks#EOF}: to the end of the file), for {@code owner} (the kernel's
   * lock owner: a process, or an open file description's OFD lock) on {@code client}: {@code type}
   * {@link org.flowfs.common.RecordLocks#READ}, {@code WRITE} or {@code UNLOCK}, which replaces
   * what the owner held in the range ({@link org.flowfs.common.RecordLocks#apply}). Granted at once
   * (answered {@code UNLOCK}) or refused with EAGAIN, as a {@link FlockReq}; with {@code test}
   * nothing changes and the answer is the first lock of another owner that would refuse it, or
   * {@code UNLOCK}. {@code pid}: the locking process, which a test from the same client is told.
   * {@code reclaim} as for a {@link FlockReq}; the same renewals ({@link LockRenewReq}) keep them.
   * flock and record locks do not conflict with each other, as on Linux.
   */
  @Wire(127)
  record RecordLockReq(Handle handle, long client, long owner, int type, long start, long end, int pid, boolean test,
      boolean reclaim) implements MetaOp, Req<RecordLockResp> {
    public RecordLockReq {
      Objects.requireNonNull(handle, "handle");
      org.flowfs.common.RecordLocks.check(type, start, end);
    }
  }

  /**
   * The answer to a {@link RecordLockReq}: {@code type} {@code UNLOCK} when nothing conflicts (a
   * lock is granted), else the conflicting lock's type, range and process ({@code pid} 0 for one of
   * another client's). {@code termNanos}: what {@link LockRenewResp} says.
   */
  @Wire(128)
  record RecordLockResp(int type, long start, long end, int pid, long termNanos) implements MetaOp {}

  /**
   * A client that holds locks says it is alive. {@code known} false: the metadata server holds no
   * lock of this client (it restarted, or the client was silent for longer than the term), so
   * the client claims its locks again ({@link FlockReq#reclaim()}). {@code termNanos}: {@code
   * meta.lock-term}, which the client renews within.
   */
  @Wire(125)
  record LockRenewReq(long client) implements MetaOp, Req<LockRenewResp> {}

  @Wire(126)
  record LockRenewResp(boolean known, long termNanos) implements MetaOp {}
}
