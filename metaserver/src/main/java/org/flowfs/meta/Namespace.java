package org.flowfs.meta;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import org.flowfs.common.Attr;
import org.flowfs.common.Errno;
import org.flowfs.common.FileType;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.Names;
import org.flowfs.common.PosixAcl;
import org.flowfs.common.wire.MetaOp.Dirent;
import org.flowfs.common.wire.MetaOp.RenameReq;
import org.flowfs.common.wire.MetaOp.SetattrReq;
import org.flowfs.common.wire.MetaOp.SetxattrReq;
import org.flowfs.meta.MetadataStore.Counts;
import org.flowfs.meta.MetadataStore.DirPage;
import org.flowfs.meta.MetadataStore.NewEntry;
import org.flowfs.meta.MetadataStore.NewObject;
import org.flowfs.meta.MetadataStore.Removed;
import org.flowfs.meta.MetadataStore.Renamed;
import org.flowfs.meta.MetadataStore.SetAttr;
import org.flowfs.meta.Tables.Counter;

/**
 * The POSIX rules of the namespace, written once for every store, over {@link Tables}.
 *
 * <p>Every mutation first validates everything it can fail on and throws {@link FsException}
 * before its first change, so a failed mutation changes nothing; atomicity against crashes and
 * unexpected exceptions is the store's business (a transaction, or a rollback).
 *
 * <p>Thread safety: reads may run concurrently with each other; the store runs mutations one at
 * a time and keeps reads out while one runs.
 */
final class Namespace {
  /** The most links an object (or subdirectories a directory) may have, as ext4. */
  static final int LINK_MAX = 65000;
  static final int XATTR_NAME_MAX = 255;
  static final int XATTR_SIZE_MAX = 65536;
  private static final int MAX_DEPTH = 1 << 20;

  private final Tables t;

  Namespace(Tables tables) {
    this.t = tables;
  }

  /** Creates the root directory if the tables hold none; true if it did (commit it). */
  boolean initRoot(long nowNs) {
    long root = Handle.ROOT.id();
    if (t.object(root) != null) {
      return false;
    }
    Inode r = new Inode(root, FileType.DIRECTORY);
    r.mode = 0755;
    r.nlink = 2;
    r.size = Attr.DIR_SIZE;
    r.parent = root;
    r.stampAll(nowNs);
    store(r);
    t.set(Counter.NEXT_HANDLE, Handle.ROOT.local() + 1);
    t.set(Counter.OBJECTS, 1);
    t.set(Counter.DIRECTORIES, 1);
    return true;
  }

  // ---- reads ----------------------------------------------------------------------------------

  Attr getattr(Handle h) {
    return load(h).toAttr();
  }

  /** Also resolves "." and ".." (the root's ".." is the root). */
  Attr lookup(Handle parent, String name) {
    Names.check(name);
    Inode dir = loadDir(parent);
    if (name.equals(".")) {
      return dir.toAttr();
    }
    if (name.equals("..")) {
      return loadExisting(dir.parent).toAttr();
    }
    byte[] e = t.entries().get(Keys.of(dir.handle, Keys.utf8(name)));
    if (e == null) {
      throw new FsException(Errno.ENOENT, name);
    }
    return loadExisting(Keys.entryHandle(e)).toAttr();
  }

  String readlink(Handle h) {
    Inode n = load(h);
    if (n.type != FileType.SYMLINK) {
      throw new FsException(Errno.EINVAL, h + " is no symlink");
    }
    return n.target;
  }

  DirPage readdir(Handle dir, String cursor, int max, boolean plus) {
    if (max <= 0) {
      throw new FsException(Errno.EINVAL, "readdir max " + max);
    }
    Inode d = loadDir(dir);
    byte[] from = cursor == null ? Keys.first(d.handle) : Keys.of(d.handle, Keys.utf8(cursor));
    List<Dirent> out = new ArrayList<>(Math.min(max, 1024));
    for (Map.Entry<byte[], byte[]> e : range(t.entries(), from, Keys.end(d.handle)).entrySet()) {
      if (out.size() == max) {
        return new DirPage(out, false);
      }
      long child = Keys.entryHandle(e.getValue());
      Attr attr = plus ? loadExisting(child).toAttr() : null;
      boolean xattrs = !plus || !range(t.xattrs(), Keys.first(child), Keys.end(child)).isEmpty();
      out.add(new Dirent(Keys.name(e.getKey()), new Handle(child), Keys.entryType(e.getValue()), attr, xattrs));
    }
    return new DirPage(out, true);
  }

  byte[] getxattr(Handle h, String name) {
    byte[] key = Keys.of(load(h).handle, xattrName(name));
    byte[] v = t.xattrs().get(key);
    if (v == null) {
      throw new FsException(Errno.ENODATA, name);
    }
    return v.clone();
  }

  List<String> listxattr(Handle h) {
    long id = load(h).handle;
    List<String> names = new ArrayList<>();
    for (byte[] k : range(t.xattrs(), Keys.first(id), Keys.end(id)).keySet()) {
      names.add(Keys.name(k));
    }
    return names;
  }

  /** Up to {@code length} bytes of the head at {@code offset}; fewer past its end. */
  byte[] headRead(Handle h, long offset, int length) {
    if (offset < 0 || length < 0) {
      throw new FsException(Errno.EINVAL, "head read of " + length + " bytes at " + offset);
    }
    byte[] head = t.heads().get(loadRegular(h).handle);
    if (head == null || offset >= head.length) {
      return new byte[0];
    }
    return Arrays.copyOfRange(head, (int) offset, (int) Math.min(head.length, offset + length));
  }

  /** The attributes and up to {@code headLength} bytes of the head, within the size. */
  MetadataStore.Opened open(Handle h, int headLength) {
    if (headLength < 0) {
      throw new FsException(Errno.EINVAL, "head length " + headLength);
    }
    Inode n = load(h);
    Attr a = n.toAttr();
    long head = a.isRegular() && a.layout() != null ? a.layout().headBytes() : 0;
    int want = (int) Math.min(Math.min(headLength, head), a.size());
    if (want <= 0) {
      return new MetadataStore.Opened(a, new byte[0]);
    }
    byte[] stored = t.heads().get(n.handle);
    if (stored == null) {
      return new MetadataStore.Opened(a, new byte[0]);
    }
    return new MetadataStore.Opened(a, Arrays.copyOf(stored, Math.min(stored.length, want)));
  }

  Counts counts() {
    return new Counts(t.get(Counter.OBJECTS), t.get(Counter.DIRECTORIES));
  }

  /** Up to {@code max} objects with handles above {@code after}, in handle order. */
  List<Attr> objectsAfter(long after, int max) {
    List<Attr> out = new ArrayList<>(max);
    for (Map.Entry<Long, byte[]> e : t.objects().tailMap(after, false).entrySet()) {
      if (out.size() == max) {
        break;
      }
      out.add(InodeCodec.decode(e.getKey(), e.getValue()).toAttr());
    }
    return out;
  }

  /** See {@link NamespaceCheck}; with {@code repair} this is a mutation. */
  MetadataStore.FsckReport fsck(boolean repair, long nowNs) {
    return new NamespaceCheck(t, this).run(repair, nowNs);
  }

  // ---- mutations ------------------------------------------------------------------------------

  NewEntry create(Handle parentHandle, String name, NewObject obj, long nowNs) {
    Names.checkNew(name);
    byte[] target = checkNewObject(obj);
    Inode parent = loadDir(parentHandle);
    byte[] key;
    try {
      key = freeEntry(parent, name, obj.type() == FileType.DIRECTORY);
    } catch (FsException x) {
      NewEntry again = x.errno() == Errno.EEXIST ? madeBefore(parent, name, obj) : null;
      if (again != null) {
        return again;
      }
      throw x;
    }
    long next = t.get(Counter.NEXT_HANDLE);
    if (next > Handle.LOCAL_MASK) {
      throw new FsException(Errno.ENOSPC, "metadata handles exhausted");
    }
    Acls acls = acls(parent, obj);
    // validated: changes start here
    t.set(Counter.NEXT_HANDLE, next + 1);
    Inode n = newInode(Handle.of(Handle.META_SERVER, next).id(), obj, acls.mode, parent, target, nowNs);
    acls.store(n.handle);
    return enter(parent, key, n, nowNs);
  }

  /**
   * The permission bits of a new object {@code obj} in {@code parent}, and the ACLs it takes: a
   * directory's default ACL replaces the umask, is the base of the new object's access ACL and
   * becomes a new directory's default ACL ({@code posix_acl_create}); without one the umask
   * applies. Symlinks take neither.
   */
  private Acls acls(Inode parent, NewObject obj) {
    PosixAcl dflt = obj.type() == FileType.SYMLINK ? null : defaultAcl(parent.handle);
    if (dflt == null) {
      return new Acls(obj.mode() & ~(obj.umask() & 0777), null, null);
    }
    PosixAcl.Inherited i = dflt.inherit(obj.mode());
    return new Acls(i.mode(), i.access(), obj.type() == FileType.DIRECTORY ? dflt : null);
  }

  /** A new object's mode and the ACLs to store with it (null: none). */
  private final class Acls {
    final int mode;
    final PosixAcl access;
    final PosixAcl dflt;

    Acls(int mode, PosixAcl access, PosixAcl dflt) {
      this.mode = mode;
      this.access = access;
      this.dflt = dflt;
    }

    void store(long handle) {
      if (access != null) {
        t.xattrs().put(Keys.of(handle, Keys.utf8(PosixAcl.ACCESS)), access.bytes());
      }
      if (dflt != null) {
        t.xattrs().put(Keys.of(handle, Keys.utf8(PosixAcl.DEFAULT)), dflt.bytes());
      }
    }
  }

  /** The default ACL of directory {@code dir}; null when it has none (or an unreadable one, which no setxattr stores). */
  PosixAcl defaultAcl(long dir) {
    byte[] v = t.xattrs().get(Keys.of(dir, Keys.utf8(PosixAcl.DEFAULT)));
    if (v == null) {
      return null;
    }
    try {
      return PosixAcl.parse(v);
    } catch (FsException e) {
      return null;
    }
  }

  /**
   * The object {@code name} in {@code parent} names, when {@code obj} is the create that made it
   * sent again (same type, same verifier, not 0), with a parent's former ctime of 0 (unknown);
   * else null.
   */
  private NewEntry madeBefore(Inode parent, String name, NewObject obj) {
    byte[] entry = t.entries().get(Keys.of(parent.handle, Keys.utf8(name)));
    if (entry == null || Keys.entryType(entry) != obj.type()) {
      return null;
    }
    Inode n = sentAgain(entry, obj.verifier());
    return n == null ? null : new NewEntry(n.toAttr(), 0);
  }

  /**
   * The object directory entry {@code entry} names, when it carries {@code verifier} (not 0): the
   * request with that verifier made this entry, and it is sent again; else null.
   */
  private Inode sentAgain(byte[] entry, long verifier) {
    if (verifier == 0) {
      return null;
    }
    Inode n = loadExisting(Keys.entryHandle(entry));
    return n.verifier == verifier ? n : null;
  }

  /**
   * Hands out {@code n} metadata handles at once, consecutive from the returned first one, for
   * objects created later with {@link #createReserved}; reads {@code dir}'s ctime in the same step.
   *
   * @throws FsException ENOENT, ENOTDIR ({@code dir}), EINVAL ({@code n < 1}), ENOSPC
   */
  MetadataStore.Reservation reserveHandles(Handle dir, int n) {
    Inode d = loadDir(dir);
    if (n < 1) {
      throw new FsException(Errno.EINVAL, "reserve " + n + " handles");
    }
    long next = t.get(Counter.NEXT_HANDLE);
    if (next > Handle.LOCAL_MASK - n + 1) {
      throw new FsException(Errno.ENOSPC, "metadata handles exhausted");
    }
    t.set(Counter.NEXT_HANDLE, next + n);
    return new MetadataStore.Reservation(Handle.of(Handle.META_SERVER, next), n, d.ctimeNs);
  }

  /**
   * Each of {@code entries} as {@link #createReserved}, in order; an entry that fails changes
   * nothing and leaves the others to apply. One outcome per entry, in order. The directory is read
   * and written once for all of them.
   */
  List<MetadataStore.Created> createBatch(Handle parentHandle, List<MetadataStore.BatchEntry> entries, long nowNs) {
    List<MetadataStore.Created> out = new ArrayList<>(entries.size());
    Inode parent;
    try {
      parent = loadDir(parentHandle);
    } catch (FsException x) {
      entries.forEach(e -> out.add(new MetadataStore.Created(null, x.errno())));
      return out;
    }
    int made = 0;
    int dirs = 0;
    for (MetadataStore.BatchEntry e : entries) {
      try {
        NewEntry n = createReserved(parent, e, nowNs);
        out.add(new MetadataStore.Created(n, null));
        made++;
        dirs += n.attr().isDir() ? 1 : 0;
      } catch (FsException x) { // thrown before the entry's first change: see createReserved
        out.add(new MetadataStore.Created(null, x.errno()));
      }
    }
    if (made > 0) {
      store(parent);
      count(made, dirs);
    }
    return out;
  }

  /**
   * Creates the regular file or directory {@code e} in {@code parent} (whose changes the caller
   * stores) with the handle it brings, which a {@link #reserveHandles} handed out and no object
   * has; a file with its head bytes and its change applied as {@link #headWrite} and {@link
   * #setattr} do. Checks all of it before the first change. The new object is written once, with
   * its change applied.
   *
   * @throws FsException as {@link #create}, {@link #headWrite} and {@link #setattr}; EINVAL for a
   *     handle not handed out or in use, a regular file without a layout, a directory with a
   *     layout, head bytes or a change, or another type
   */
  private NewEntry createReserved(Inode parent, MetadataStore.BatchEntry e, long nowNs) {
    Names.checkNew(e.name());
    NewObject obj = e.obj();
    byte[] target = checkNewObject(obj);
    boolean dir = obj.type() == FileType.DIRECTORY;
    if (dir ? obj.layout() != null || e.head().length != 0 || e.change() != null
        : obj.type() != FileType.REGULAR || obj.layout() == null) {
      throw new FsException(Errno.EINVAL, "a reserved handle is for a regular file with a layout or a bare directory");
    }
    byte[] key = freeEntry(parent, e.name(), dir);
    Handle h = e.handle();
    if (h.server() != Handle.META_SERVER || h.local() >= t.get(Counter.NEXT_HANDLE) || t.object(h.id()) != null) {
      throw new FsException(Errno.EINVAL, "handle " + h + " is not reserved or is in use");
    }
    // the files of one batch share the server's now, and the directory's ctime moves on by a
    // nanosecond per entry: each file is stamped with the directory's time after its entry, as a
    // create of its own is, so the holder can follow the directory's ctimes from entry to entry
    long stamp = Math.max(nowNs, parent.ctimeNs + 1);
    // no lease is granted on a directory with a default ACL (the holder applied the umask), nor is
    // one set while a lease lives: its rules hold all the same
    Acls acls = acls(parent, obj);
    Inode n = newInode(h.id(), obj, acls.mode, parent, target, stamp);
    checkHeadWrite(n, e.headOffset(), e.head());
    if (e.change() != null) {
      AttrChange.check(e.change());
      AttrChange.checkTarget(e.change(), n);
    }
    // validated: changes start here
    if (e.change() != null) {
      AttrChange.apply(e.change(), n, stamp);
    }
    store(n);
    acls.store(n.handle);
    if (e.change() != null && (e.change().mask() & SetattrReq.MODE) != 0) {
      chmodAcl(n);
    }
    t.entries().put(key, Keys.entry(n.handle, n.type));
    if (dir) {
      parent.nlink++;
    }
    long parentWas = parent.ctimeNs;
    parent.touchContents(stamp);
    long end = e.head().length == 0 ? 0 : e.headOffset() + e.head().length;
    if (e.change() != null && (e.change().mask() & SetattrReq.SIZE) != 0) {
      end = Math.min(end, n.size); // the change's size cuts the head, as a setattr after the write does
    }
    if (end > e.headOffset()) {
      // a new object has no head yet: nothing to merge with
      byte[] head = new byte[(int) end];
      System.arraycopy(e.head(), 0, head, (int) e.headOffset(), (int) (end - e.headOffset()));
      t.heads().put(n.handle, head);
    }
    return new NewEntry(n.toAttr(), parentWas);
  }

  /** The key of {@code name} in {@code parent}, checked free. @throws FsException EEXIST, EMLINK */
  private byte[] freeEntry(Inode parent, String name, boolean dir) {
    byte[] key = Keys.of(parent.handle, Keys.utf8(name));
    if (t.entries().containsKey(key)) {
      throw new FsException(Errno.EEXIST, name);
    }
    if (dir && parent.nlink >= LINK_MAX) {
      throw new FsException(Errno.EMLINK, "too many subdirectories in " + new Handle(parent.handle));
    }
    return key;
  }

  /** A new object {@code obj} with {@code handle} in {@code parent}, not stored yet. */
  private static Inode newInode(long handle, NewObject obj, int mode, Inode parent, byte[] target, long nowNs) {
    boolean dir = obj.type() == FileType.DIRECTORY;
    Inode n = new Inode(handle, obj.type());
    n.mode = mode;
    n.uid = obj.uid();
    n.gid = obj.gid();
    if ((parent.mode & Attr.S_ISGID) != 0) {
      n.gid = parent.gid;
      if (dir) {
        n.mode |= Attr.S_ISGID;
      }
    }
    n.nlink = dir ? 2 : 1;
    n.rdev = obj.rdev();
    n.verifier = obj.verifier();
    n.stampAll(nowNs);
    switch (obj.type()) {
      case DIRECTORY -> {
        n.size = Attr.DIR_SIZE;
        n.parent = parent.handle;
      }
      case SYMLINK -> {
        n.target = obj.target();
        n.size = target.length;
      }
      case REGULAR -> n.layout = obj.layout();
      default -> { }
    }
    return n;
  }

  /** Stores the new object {@code n} under {@code key} of {@code parent}, whose contents change. */
  private NewEntry enter(Inode parent, byte[] key, Inode n, long nowNs) {
    boolean dir = n.isDir();
    store(n);
    t.entries().put(key, Keys.entry(n.handle, n.type));
    if (dir) {
      parent.nlink++;
    }
    long parentWas = parent.ctimeNs;
    parent.touchContents(nowNs);
    store(parent);
    count(1, dir ? 1 : 0);
    return new NewEntry(n.toAttr(), parentWas);
  }

  NewEntry link(Handle target, Handle parentHandle, String name, long verifier, long nowNs) {
    Names.checkNew(name);
    Inode n = load(target);
    Inode parent = loadDir(parentHandle);
    byte[] key = Keys.of(parent.handle, Keys.utf8(name));
    byte[] entry = t.entries().get(key);
    if (entry != null) {
      Inode named = sentAgain(entry, verifier);
      if (named != null) {
        return new NewEntry(named.toAttr(), 0);
      }
      throw new FsException(Errno.EEXIST, name);
    }
    if (n.isDir()) {
      throw new FsException(Errno.EPERM, "hard link to a directory");
    }
    if (n.nlink >= LINK_MAX) {
      throw new FsException(Errno.EMLINK, target + " has " + n.nlink + " links");
    }
    t.entries().put(key, Keys.entry(n.handle, n.type));
    n.nlink++;
    n.ctimeNs = nowNs;
    if (verifier != 0) {
      n.verifier = verifier;
    }
    store(n);
    long parentWas = parent.ctimeNs;
    parent.touchContents(nowNs);
    store(parent);
    return new NewEntry(n.toAttr(), parentWas);
  }

  Removed remove(Handle parentHandle, String name, boolean directory, long nowNs) {
    Names.checkNew(name);
    Inode parent = loadDir(parentHandle);
    byte[] key = Keys.of(parent.handle, Keys.utf8(name));
    byte[] e = t.entries().get(key);
    if (e == null) {
      throw new FsException(Errno.ENOENT, name);
    }
    Inode n = loadExisting(Keys.entryHandle(e));
    if (directory && !n.isDir()) {
      throw new FsException(Errno.ENOTDIR, name);
    }
    if (!directory && n.isDir()) {
      throw new FsException(Errno.EISDIR, name);
    }
    if (n.isDir() && hasEntries(n.handle)) {
      throw new FsException(Errno.ENOTEMPTY, name);
    }
    t.entries().remove(key);
    if (n.isDir()) {
      parent.nlink--;
    }
    long parentWas = parent.ctimeNs;
    parent.touchContents(nowNs);
    store(parent);
    boolean gone = dropLink(n, nowNs);
    return new Removed(n.toAttr(), gone, parentWas, parent.ctimeNs);
  }

  /** Each of {@code names} as {@link #remove} removes it, in order; one that fails changes nothing and leaves the others to go. */
  List<MetadataStore.BatchRemoved> removeBatch(Handle parentHandle, List<MetadataStore.Removal> names, long nowNs) {
    List<MetadataStore.BatchRemoved> out = new ArrayList<>(names.size());
    for (MetadataStore.Removal r : names) {
      try {
        out.add(new MetadataStore.BatchRemoved(remove(parentHandle, r.name(), r.directory(), nowNs), null));
      } catch (FsException x) { // thrown before the name's first change: see remove
        out.add(new MetadataStore.BatchRemoved(null, x.errno()));
      }
    }
    return out;
  }

  Renamed rename(Handle srcParent, String srcName, Handle dstParent, String dstName, int flags, long verifier, long nowNs) {
    Names.checkNew(srcName);
    Names.checkNew(dstName);
    if ((flags & ~RenameReq.NOREPLACE) != 0) {
      throw new FsException(Errno.EINVAL, "rename flags " + flags);
    }
    Inode from = loadDir(srcParent);
    Inode to = srcParent.equals(dstParent) ? from : loadDir(dstParent);
    byte[] dstKey = Keys.of(to.handle, Keys.utf8(dstName));
    byte[] dstEntry = t.entries().get(dstKey);
    Inode moved = dstEntry == null ? null : sentAgain(dstEntry, verifier);
    if (moved != null) {
      return new Renamed(moved.toAttr(), null, false);
    }
    byte[] srcKey = Keys.of(from.handle, Keys.utf8(srcName));
    byte[] srcEntry = t.entries().get(srcKey);
    if (srcEntry == null) {
      throw new FsException(Errno.ENOENT, srcName);
    }
    Inode src = loadExisting(Keys.entryHandle(srcEntry));
    if (dstEntry != null && (flags & RenameReq.NOREPLACE) != 0) {
      throw new FsException(Errno.EEXIST, dstName);
    }
    boolean moves = from != to;
    if (src.isDir() && moves && isSelfOrAncestor(src.handle, to)) {
      throw new FsException(Errno.EINVAL, "a directory cannot move into its own subtree");
    }
    if (dstEntry != null && Keys.entryHandle(dstEntry) == src.handle) {
      return new Renamed(src.toAttr(), null, false);
    }
    Inode dst = dstEntry == null ? null : loadExisting(Keys.entryHandle(dstEntry));
    if (dst != null) {
      if (src.isDir() && !dst.isDir()) {
        throw new FsException(Errno.ENOTDIR, dstName + " is no directory");
      }
      if (!src.isDir() && dst.isDir()) {
        throw new FsException(Errno.EISDIR, dstName + " is a directory");
      }
      if (dst.isDir() && hasEntries(dst.handle)) {
        throw new FsException(Errno.ENOTEMPTY, dstName);
      }
    }
    if (src.isDir() && moves && dst == null && to.nlink >= LINK_MAX) {
      throw new FsException(Errno.EMLINK, "too many subdirectories in " + dstParent);
    }
    // validated: changes start here
    boolean replacedGone = false;
    if (dst != null) {
      if (dst.isDir()) {
        to.nlink--;
      }
      replacedGone = dropLink(dst, nowNs);
    }
    t.entries().remove(srcKey);
    t.entries().put(dstKey, Keys.entry(src.handle, src.type));
    if (src.isDir() && moves) {
      from.nlink--;
      to.nlink++;
      src.parent = to.handle;
    }
    src.ctimeNs = nowNs;
    if (verifier != 0) {
      src.verifier = verifier;
    }
    store(src);
    from.touchContents(nowNs);
    to.touchContents(nowNs);
    store(from);
    if (moves) {
      store(to);
    }
    return new Renamed(src.toAttr(), dst == null ? null : dst.toAttr(), replacedGone);
  }

  /** The checks and time rules are {@link AttrChange}'s. */
  Attr setattr(Handle h, SetAttr c, long nowNs) {
    AttrChange.check(c);
    Inode n = load(h);
    AttrChange.checkTarget(c, n);
    change(n, c, nowNs);
    return n.toAttr();
  }

  /** Applies the checked change {@code c} to {@code n} and stores it; a new size cuts the head. */
  private void change(Inode n, SetAttr c, long nowNs) {
    AttrChange.apply(c, n, nowNs);
    if ((c.mask() & SetattrReq.MODE) != 0) {
      chmodAcl(n);
    }
    store(n);
    if ((c.mask() & SetattrReq.SIZE) != 0) {
      trimHead(n.handle, n.size);
    }
  }

  void setxattr(Handle h, String name, byte[] value, int flags, long nowNs) {
    byte[] nameBytes = xattrName(name);
    if (value == null) {
      throw new FsException(Errno.EINVAL, "no xattr value");
    }
    if (value.length > XATTR_SIZE_MAX) {
      throw new FsException(Errno.E2BIG, "xattr value of " + value.length + " bytes");
    }
    int both = SetxattrReq.CREATE | SetxattrReq.REPLACE;
    if ((flags & ~(both | SetxattrReq.KILL_SGID)) != 0 || (flags & both) == both) {
      throw new FsException(Errno.EINVAL, "setxattr flags " + flags);
    }
    Inode n = load(h);
    byte[] key = Keys.of(n.handle, nameBytes);
    boolean exists = t.xattrs().containsKey(key);
    int how = flags & both;
    if (exists && how == SetxattrReq.CREATE) {
      throw new FsException(Errno.EEXIST, name);
    }
    if (!exists && how == SetxattrReq.REPLACE) {
      throw new FsException(Errno.ENODATA, name);
    }
    PosixAcl acl = PosixAcl.isAclName(name) ? PosixAcl.parse(value) : null;
    if (PosixAcl.DEFAULT.equals(name) && n.type != FileType.DIRECTORY) {
      throw new FsException(Errno.EACCES, "a default ACL on a " + n.type);
    }
    // validated: changes start here
    if (PosixAcl.ACCESS.equals(name)) {
      // the mode says what the ACL's owner, group class and other entries say (and an ACL that
      // says no more than the mode is not kept), as a local file system's set_acl does
      n.mode = (n.mode & ~0777) | acl.modeBits();
      if ((flags & SetxattrReq.KILL_SGID) != 0) {
        n.mode &= ~Attr.S_ISGID;
      }
      if (acl.equivalentToMode()) {
        t.xattrs().remove(key);
      } else {
        t.xattrs().put(key, value.clone());
      }
    } else {
      t.xattrs().put(key, value.clone());
    }
    n.ctimeNs = nowNs;
    store(n);
  }

  /** After a change of {@code n}'s mode: its access ACL, if any, says the same ({@code posix_acl_chmod}). */
  private void chmodAcl(Inode n) {
    if (n.type == FileType.SYMLINK) {
      return;
    }
    byte[] key = Keys.of(n.handle, Keys.utf8(PosixAcl.ACCESS));
    byte[] v = t.xattrs().get(key);
    if (v == null) {
      return;
    }
    try {
      t.xattrs().put(key, PosixAcl.parse(v).chmod(n.mode).bytes());
    } catch (FsException e) {
      // an unreadable ACL (stored by no setxattr) stays as it is
    }
  }

  /**
   * Writes {@code bytes} into the head at {@code offset}, which must end within the layout's
   * {@code headBytes}; a head that grows gets zeros between its old end and {@code offset}.
   */
  void headWrite(Handle h, long offset, byte[] bytes) {
    if (bytes == null || offset < 0) {
      throw new FsException(Errno.EINVAL, "head write at " + offset);
    }
    Inode n = loadRegular(h);
    checkHeadWrite(n, offset, bytes);
    putHead(n.handle, offset, bytes);
  }

  /** Whether {@code bytes} at {@code offset} lie within the head of the regular file {@code n}. */
  private static void checkHeadWrite(Inode n, long offset, byte[] bytes) {
    long headBytes = n.layout == null ? 0 : n.layout.headBytes();
    if (offset < 0 || offset > headBytes - bytes.length) {
      throw new FsException(Errno.EINVAL, bytes.length + " bytes at " + offset + " pass the head of " + headBytes + " bytes");
    }
  }

  /** Writes checked {@code bytes} into the head of {@code handle} at {@code offset}. */
  private void putHead(long handle, long offset, byte[] bytes) {
    if (bytes.length == 0) {
      return;
    }
    int end = (int) offset + bytes.length;
    byte[] old = t.heads().get(handle);
    byte[] head = old == null ? new byte[end] : Arrays.copyOf(old, Math.max(old.length, end));
    System.arraycopy(bytes, 0, head, (int) offset, bytes.length);
    t.heads().put(handle, head);
  }

  void removexattr(Handle h, String name, long nowNs) {
    byte[] nameBytes = xattrName(name);
    Inode n = load(h);
    byte[] key = Keys.of(n.handle, nameBytes);
    if (!t.xattrs().containsKey(key)) {
      throw new FsException(Errno.ENODATA, name);
    }
    t.xattrs().remove(key);
    n.ctimeNs = nowNs;
    store(n);
  }

  // ---- internals ------------------------------------------------------------------------------

  /** Checks a {@link NewObject}; returns the symlink target's bytes (empty for other types). */
  private static byte[] checkNewObject(NewObject obj) {
    if (obj == null || obj.type() == null) {
      throw new FsException(Errno.EINVAL, "no object type");
    }
    if ((obj.mode() & ~Attr.PERM_MASK) != 0) {
      throw new FsException(Errno.EINVAL, "mode " + Integer.toOctalString(obj.mode()));
    }
    if (obj.layout() != null && obj.type() != FileType.REGULAR) {
      throw new FsException(Errno.EINVAL, "a layout for a " + obj.type());
    }
    if (obj.type() == FileType.SYMLINK) {
      return Keys.utf8(Names.checkTarget(obj.target()));
    }
    if (obj.target() != null) {
      throw new FsException(Errno.EINVAL, "a symlink target for a " + obj.type());
    }
    return new byte[0];
  }

  private static byte[] xattrName(String name) {
    if (name == null || name.isEmpty()) {
      throw new FsException(Errno.ERANGE, "empty xattr name");
    }
    byte[] b = Keys.utf8(name);
    if (b.length > XATTR_NAME_MAX || name.indexOf('\0') >= 0) {
      throw new FsException(Errno.ERANGE, "xattr name of " + b.length + " bytes");
    }
    return b;
  }

  private static <V> NavigableMap<byte[], V> range(NavigableMap<byte[], V> map, byte[] after, byte[] end) {
    return map.subMap(after, false, end, false);
  }

  private boolean hasEntries(long dir) {
    return !range(t.entries(), Keys.first(dir), Keys.end(dir)).isEmpty();
  }

  /** True if {@code ancestor} is {@code dir} or one of the directories above it. */
  private boolean isSelfOrAncestor(long ancestor, Inode dir) {
    Inode d = dir;
    for (int depth = 0; depth < MAX_DEPTH; depth++) {
      if (d.handle == ancestor) {
        return true;
      }
      if (d.parent == d.handle) {
        return false;
      }
      d = loadExisting(d.parent);
    }
    throw new IllegalStateException("directory parents of " + new Handle(dir.handle) + " form a cycle");
  }

  /** A truncate to {@code size}: the head keeps no bytes at or past it. */
  private void trimHead(long handle, long size) {
    byte[] head = t.heads().get(handle);
    if (head == null || head.length <= size) {
      return;
    }
    if (size == 0) {
      t.heads().remove(handle);
    } else {
      t.heads().put(handle, Arrays.copyOf(head, (int) size));
    }
  }

  /** Takes one link from {@code n} (a directory loses both); deletes it if none is left. */
  private boolean dropLink(Inode n, long nowNs) {
    n.nlink = n.isDir() ? 0 : n.nlink - 1;
    n.ctimeNs = nowNs;
    if (n.nlink > 0) {
      store(n);
      return false;
    }
    t.removeObject(n.handle);
    range(t.xattrs(), Keys.first(n.handle), Keys.end(n.handle)).clear();
    t.heads().remove(n.handle);
    count(-1, n.isDir() ? -1 : 0);
    if (n.layout != null) {
      // in the same commit: a crash before the I/O servers removed them leaves work, not orphans
      java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(8 * n.layout.datafiles().size());
      n.layout.datafiles().forEach(h -> b.putLong(h.id()));
      t.doomed().put(n.handle, b.array());
    }
    return true;
  }

  /** Up to {@code max} files whose datafiles wait for removal, with those datafiles. */
  java.util.List<MetadataStore.Doomed> doomed(int max) {
    java.util.List<MetadataStore.Doomed> out = new java.util.ArrayList<>();
    for (var e : t.doomed().entrySet()) {
      if (out.size() >= max) {
        break;
      }
      java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(e.getValue());
      java.util.List<Handle> hs = new java.util.ArrayList<>();
      while (b.remaining() >= 8) {
        hs.add(new Handle(b.getLong()));
      }
      out.add(new MetadataStore.Doomed(new Handle(e.getKey()), hs));
    }
    return out;
  }

  /** The datafiles of {@code metafiles} are removed: they leave the removal queue. */
  Void reaped(java.util.List<Handle> metafiles) {
    for (Handle m : metafiles) {
      t.doomed().remove(m.id());
    }
    return null;
  }

  private void count(long objects, long directories) {
    t.set(Counter.OBJECTS, t.get(Counter.OBJECTS) + objects);
    if (directories != 0) {
      t.set(Counter.DIRECTORIES, t.get(Counter.DIRECTORIES) + directories);
    }
  }

  private Inode load(Handle h) {
    byte[] b = t.object(h.id());
    if (b == null) {
      throw new FsException(Errno.ENOENT, "no object " + h);
    }
    return InodeCodec.decode(h.id(), b);
  }

  /** A regular file. @throws FsException ENOENT, EISDIR, EINVAL (another type) */
  private Inode loadRegular(Handle h) {
    Inode n = load(h);
    if (n.isDir()) {
      throw new FsException(Errno.EISDIR, h + " is a directory");
    }
    if (n.type != FileType.REGULAR) {
      throw new FsException(Errno.EINVAL, h + " is no regular file");
    }
    return n;
  }

  private Inode loadDir(Handle h) {
    Inode n = load(h);
    if (!n.isDir()) {
      throw new FsException(Errno.ENOTDIR, h + " is no directory");
    }
    return n;
  }

  /** An object an entry or a parent link names: its absence is damage, not ENOENT. */
  private Inode loadExisting(long handle) {
    byte[] b = t.object(handle);
    if (b == null) {
      throw new IllegalStateException("dangling reference to " + new Handle(handle) + " in the metadata store");
    }
    return InodeCodec.decode(handle, b);
  }

  private void store(Inode n) {
    t.putObject(n.handle, InodeCodec.encode(n));
  }
}
