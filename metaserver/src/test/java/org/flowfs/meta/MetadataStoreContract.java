package org.flowfs.meta;

import static org.flowfs.common.wire.MetaOp.SetattrReq.ATIME;
import static org.flowfs.common.wire.MetaOp.SetattrReq.ATIME_NOW;
import static org.flowfs.common.wire.MetaOp.SetattrReq.GID;
import static org.flowfs.common.wire.MetaOp.SetattrReq.KILL_SUID;
import static org.flowfs.common.wire.MetaOp.SetattrReq.MODE;
import static org.flowfs.common.wire.MetaOp.SetattrReq.MTIME;
import static org.flowfs.common.wire.MetaOp.SetattrReq.MTIME_NOW;
import static org.flowfs.common.wire.MetaOp.SetattrReq.SIZE;
import static org.flowfs.common.wire.MetaOp.SetattrReq.SIZE_GROW;
import static org.flowfs.common.wire.MetaOp.SetattrReq.UID;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.flowfs.common.Attr;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Errno;
import org.flowfs.common.FileType;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.PosixAcl;
import org.flowfs.common.wire.MetaOp.Dirent;
import org.flowfs.common.wire.MetaOp.RenameReq;
import org.flowfs.common.wire.MetaOp.SetxattrReq;
import org.flowfs.meta.MetadataStore.Counts;
import org.flowfs.meta.MetadataStore.DirPage;
import org.flowfs.meta.MetadataStore.NewEntry;
import org.flowfs.meta.MetadataStore.NewObject;
import org.flowfs.meta.MetadataStore.Removed;
import org.flowfs.meta.MetadataStore.Renamed;
import org.flowfs.meta.MetadataStore.SetAttr;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The {@link MetadataStore} contract, run against every implementation by a subclass that says
 * how to open a fresh store.
 */
abstract class MetadataStoreContract {
  static final Handle ROOT = Handle.ROOT;
  static final Layout LAYOUT = new Layout(DistSpec.of("simple_stripe", 65536),
      List.of(Handle.of(2, 7), Handle.of(3, 9)));

  MetadataStore store;
  /**
   * The clock the tests stamp changes with: a day ahead of the wall clock the store stamps its
   * root with, so that the root's first change is later (a directory's ctime never goes back).
   */
  private final java.util.concurrent.atomic.AtomicLong clock =
      new java.util.concurrent.atomic.AtomicLong((System.currentTimeMillis() + 86_400_000L) * 1_000_000L);

  /** A fresh, empty store. */
  abstract MetadataStore open();

  /** How many random operations {@link #randomOperations_matchModel} runs per seed. */
  int randomOps() {
    return 3000;
  }

  @BeforeEach
  void openStore() {
    store = open();
  }

  @AfterEach
  void closeStore() {
    store.close();
  }

  // ---- helpers --------------------------------------------------------------------------------

  /** A time later than every earlier one. */
  long tick() {
    return clock.addAndGet(1_000);
  }

  static <T> T join(CompletableFuture<T> f) {
    return f.orTimeout(30, java.util.concurrent.TimeUnit.SECONDS).join();
  }

  /** The errno a mutation failed with; fails the test if it succeeded. */
  static Errno errno(CompletableFuture<?> f) {
    try {
      Object v = f.orTimeout(30, java.util.concurrent.TimeUnit.SECONDS).join();
      throw new AssertionError("expected a failure, got " + v);
    } catch (java.util.concurrent.CompletionException e) {
      assertTrue(e.getCause() instanceof FsException, () -> "not an FsException: " + e.getCause());
      return ((FsException) e.getCause()).errno();
    }
  }

  static Errno errnoOf(Runnable read) {
    return assertThrows(FsException.class, read::run).errno();
  }

  static NewObject obj(FileType type, int mode) {
    return new NewObject(type, mode, 1000, 100, 0, type == FileType.REGULAR ? LAYOUT : null,
        type == FileType.SYMLINK ? "target/of/link" : null);
  }

  Attr mkdir(Handle parent, String name) {
    return join(store.create(parent, name, obj(FileType.DIRECTORY, 0755), tick()));
  }

  Attr mkfile(Handle parent, String name) {
    return join(store.create(parent, name, obj(FileType.REGULAR, 0644), tick()));
  }

  Attr attr(Handle h) {
    return store.getattr(h);
  }

  List<String> names(Handle dir) {
    List<String> out = new ArrayList<>();
    for (Dirent d : store.readdir(dir, null, 100_000, false).entries()) {
      out.add(d.name());
    }
    return out;
  }

  SetAttr change(int mask) {
    return new SetAttr(mask, 0, 0, 0, 0, 0, 0);
  }

  // ---- root and create ------------------------------------------------------------------------

  @Test
  void root_existsAsEmptyDirectory() {
    Attr r = attr(ROOT);
    assertEquals(FileType.DIRECTORY, r.type());
    assertEquals(0755, r.mode());
    assertEquals(0, r.uid());
    assertEquals(0, r.gid());
    assertEquals(2, r.nlink());
    assertEquals(List.of(), names(ROOT));
    assertEquals(new Counts(1, 1), store.counts());
  }

  @Test
  void create_eachType() {
    for (FileType type : FileType.values()) {
      long now = tick();
      NewObject o = new NewObject(type, 0640, 1000, 100, type == FileType.CHAR_DEVICE ? 0x0501 : 0,
          type == FileType.REGULAR ? LAYOUT : null, type == FileType.SYMLINK ? "../x/y" : null);
      Attr a = join(store.create(ROOT, "obj-" + type, o, now));
      assertEquals(type, a.type());
      assertEquals(0640, a.mode());
      assertEquals(1000, a.uid());
      assertEquals(100, a.gid());
      assertEquals(type == FileType.DIRECTORY ? 2 : 1, a.nlink());
      assertEquals(now, a.atimeNs());
      assertEquals(now, a.mtimeNs());
      assertEquals(now, a.ctimeNs());
      assertEquals(Handle.META_SERVER, a.handle().server());
      assertEquals(type == FileType.REGULAR ? LAYOUT : null, a.layout());
      if (type == FileType.CHAR_DEVICE) {
        assertEquals(0x0501, a.rdev());
      }
      if (type == FileType.SYMLINK) {
        assertEquals(6, a.size());
        assertEquals("../x/y", store.readlink(a.handle()));
      }
      if (type == FileType.REGULAR) {
        assertEquals(0, a.size());
      }
      assertEquals(a, store.lookup(ROOT, "obj-" + type));
      assertEquals(a, attr(a.handle()));
    }
    assertEquals(new Counts(1 + FileType.values().length, 2), store.counts());
  }

  @Test
  void create_regularFileWithoutLayout() {
    Attr a = join(store.create(ROOT, "lazy", new NewObject(FileType.REGULAR, 0600, 1, 1, 0, null, null), tick()));
    assertNull(a.layout());
    assertNull(attr(a.handle()).layout());
  }

  @Test
  void create_updatesParentTimesAndNlink() {
    Attr d = mkdir(ROOT, "d");
    long now = tick();
    join(store.create(d.handle(), "sub", obj(FileType.DIRECTORY, 0700), now));
    Attr after = attr(d.handle());
    assertEquals(3, after.nlink());
    assertEquals(now, after.mtimeNs());
    assertEquals(now, after.ctimeNs());
    assertEquals(d.atimeNs(), after.atimeNs());
    long later = tick();
    join(store.create(d.handle(), "file", obj(FileType.REGULAR, 0600), later));
    assertEquals(3, attr(d.handle()).nlink());
    assertEquals(later, attr(d.handle()).mtimeNs());
    assertEquals(3, attr(ROOT).nlink());
  }

  @Test
  void entryChanges_returnTheParentsCtimeBefore() {
    Attr d = mkdir(ROOT, "d");
    long t1 = tick();
    MetadataStore.NewEntry made = join(store.createEntry(d.handle(), "f", obj(FileType.REGULAR, 0600), t1));
    assertEquals(d.ctimeNs(), made.parentWasNs());
    assertEquals(t1, made.attr().ctimeNs());
    long t2 = tick();
    MetadataStore.NewEntry linked = join(store.linkEntry(made.attr().handle(), d.handle(), "g", t2));
    assertEquals(t1, linked.parentWasNs());
    long t3 = tick();
    MetadataStore.Removed removed = join(store.remove(d.handle(), "f", false, t3));
    assertEquals(t2, removed.parentWasNs());
    assertEquals(t3, attr(d.handle()).ctimeNs());
  }

  @Test
  void entryChanges_leaveTheParentACtimeOfTheirOwn() {
    Attr d = mkdir(ROOT, "d");
    long same = tick();
    MetadataStore.NewEntry a = join(store.createEntry(d.handle(), "a", obj(FileType.REGULAR, 0600), same));
    MetadataStore.NewEntry b = join(store.createEntry(d.handle(), "b", obj(FileType.REGULAR, 0600), same));
    assertEquals(d.ctimeNs(), a.parentWasNs());
    assertEquals(same, b.parentWasNs());
    assertEquals(same + 1, attr(d.handle()).ctimeNs()); // the same clock reading twice
    assertEquals(same, attr(d.handle()).mtimeNs());
    MetadataStore.Removed r = join(store.remove(d.handle(), "a", false, same - 5)); // a clock set back
    assertEquals(same + 1, r.parentWasNs());
    assertEquals(same + 2, attr(d.handle()).ctimeNs());
    assertEquals(same - 5, attr(d.handle()).mtimeNs());
  }

  @Test
  void create_existingName_EEXIST() {
    mkfile(ROOT, "a");
    assertEquals(Errno.EEXIST, errno(store.create(ROOT, "a", obj(FileType.DIRECTORY, 0755), tick())));
    assertEquals(Errno.EEXIST, errno(store.create(ROOT, "a", obj(FileType.REGULAR, 0644), tick())));
    assertEquals(new Counts(2, 1), store.counts());
  }

  /**
   * A create sent again with its verifier (its answer was lost) is answered with the object it
   * made, unchanged, and a former parent ctime of 0; another verifier, none, or another type is
   * EEXIST.
   */
  @Test
  void create_sentAgainWithItsVerifier_isAnsweredWithWhatItMade() {
    for (FileType type : List.of(FileType.REGULAR, FileType.DIRECTORY, FileType.SYMLINK, FileType.FIFO)) {
      NewObject o = obj(type, 0640);
      NewObject verified = new NewObject(o.type(), o.mode(), o.uid(), o.gid(), o.rdev(), o.layout(), o.target(), 0x5eed + type.ordinal());
      String name = "v-" + type;
      NewEntry first = join(store.createEntry(ROOT, name, verified, tick()));
      Attr parent = attr(ROOT);
      Counts counts = store.counts();
      NewEntry again = join(store.createEntry(ROOT, name, verified, tick()));
      assertEquals(first.attr(), again.attr(), type + ": the object made the first time");
      assertEquals(0, again.parentWasNs(), "the parent's ctime before is not known");
      assertEquals(parent, attr(ROOT), "nothing changed");
      assertEquals(counts, store.counts());
      NewObject other = new NewObject(o.type(), o.mode(), o.uid(), o.gid(), o.rdev(), o.layout(), o.target(), 0x5eed + 99);
      assertEquals(Errno.EEXIST, errno(store.createEntry(ROOT, name, other, tick())));
      assertEquals(Errno.EEXIST, errno(store.createEntry(ROOT, name, o, tick())));
    }
    NewObject dirV = new NewObject(FileType.DIRECTORY, 0755, 1, 1, 0, null, null, 7);
    join(store.createEntry(ROOT, "typed", dirV, tick()));
    NewObject fifoV = new NewObject(FileType.FIFO, 0644, 1, 1, 0, null, null, 7);
    assertEquals(Errno.EEXIST, errno(store.createEntry(ROOT, "typed", fifoV, tick())), "same verifier, another type");
  }

  @Test
  void create_missingParent_ENOENT() {
    Handle nowhere = Handle.of(0, 999_999);
    assertEquals(Errno.ENOENT, errno(store.create(nowhere, "a", obj(FileType.REGULAR, 0644), tick())));
  }

  @Test
  void create_parentNotDirectory_ENOTDIR() {
    Attr f = mkfile(ROOT, "f");
    assertEquals(Errno.ENOTDIR, errno(store.create(f.handle(), "a", obj(FileType.REGULAR, 0644), tick())));
  }

  @Test
  void create_badNames_EINVAL() {
    for (String bad : List.of(".", "..", "a/b", "", "nul\0")) {
      assertEquals(Errno.EINVAL, errno(store.create(ROOT, bad, obj(FileType.REGULAR, 0644), tick())), bad);
    }
    assertEquals(Errno.EINVAL, errno(store.create(ROOT, "half\uD800", obj(FileType.REGULAR, 0644), tick())));
    assertEquals(Errno.ENAMETOOLONG, errno(store.create(ROOT, "x".repeat(256), obj(FileType.REGULAR, 0644), tick())));
    mkfile(ROOT, "x".repeat(255));
    assertEquals(List.of("x".repeat(255)), names(ROOT));
  }

  @Test
  void create_inconsistentObject_EINVAL() {
    assertEquals(Errno.EINVAL, errno(store.create(ROOT, "a",
        new NewObject(FileType.DIRECTORY, 0755, 0, 0, 0, LAYOUT, null), tick())));
    assertEquals(Errno.EINVAL, errno(store.create(ROOT, "a",
        new NewObject(FileType.REGULAR, 0755, 0, 0, 0, null, "target"), tick())));
    assertEquals(Errno.EINVAL, errno(store.create(ROOT, "a",
        new NewObject(FileType.REGULAR, 0100755, 0, 0, 0, null, null), tick())));
    assertEquals(Errno.ENOENT, errno(store.create(ROOT, "a",
        new NewObject(FileType.SYMLINK, 0777, 0, 0, 0, null, ""), tick())));
    assertEquals(new Counts(1, 1), store.counts());
  }

  @Test
  void create_handlesAreDistinct() {
    Set<Handle> seen = new HashSet<>(Set.of(ROOT));
    for (int i = 0; i < 50; i++) {
      assertTrue(seen.add(mkfile(ROOT, "f" + i).handle()));
    }
  }

  @Test
  void create_inSetgidDirectory_inheritsGroupAndDirBit() {
    Attr d = join(store.create(ROOT, "shared", new NewObject(FileType.DIRECTORY, 02775, 0, 500, 0, null, null), tick()));
    assertEquals(02775, d.mode());
    Attr f = join(store.create(d.handle(), "f", new NewObject(FileType.REGULAR, 0644, 1000, 100, 0, null, null), tick()));
    assertEquals(500, f.gid());
    assertEquals(0644, f.mode());
    Attr sub = join(store.create(d.handle(), "sub", new NewObject(FileType.DIRECTORY, 0755, 1000, 100, 0, null, null), tick()));
    assertEquals(500, sub.gid());
    assertEquals(02755, sub.mode());
    Attr deeper = join(store.create(sub.handle(), "f", new NewObject(FileType.REGULAR, 0600, 1000, 100, 0, null, null), tick()));
    assertEquals(500, deeper.gid());
    Attr plain = join(store.create(ROOT, "plain", new NewObject(FileType.DIRECTORY, 0755, 1000, 100, 0, null, null), tick()));
    assertEquals(100, plain.gid());
    assertEquals(0755, plain.mode());
  }

  // ---- lookup ---------------------------------------------------------------------------------

  @Test
  void lookup_missing_ENOENT() {
    assertEquals(Errno.ENOENT, errnoOf(() -> store.lookup(ROOT, "nope")));
    assertEquals(Errno.ENOENT, errnoOf(() -> store.lookup(Handle.of(0, 77_777), "nope")));
  }

  @Test
  void lookup_inFile_ENOTDIR() {
    Attr f = mkfile(ROOT, "f");
    assertEquals(Errno.ENOTDIR, errnoOf(() -> store.lookup(f.handle(), "x")));
  }

  @Test
  void lookup_dotAndDotDot() {
    Attr d = mkdir(ROOT, "d");
    Attr e = mkdir(d.handle(), "e");
    assertEquals(e.handle(), store.lookup(e.handle(), ".").handle());
    assertEquals(d.handle(), store.lookup(e.handle(), "..").handle());
    assertEquals(ROOT, store.lookup(ROOT, "..").handle());
  }

  @Test
  void getattr_missing_ENOENT() {
    assertEquals(Errno.ENOENT, errnoOf(() -> store.getattr(Handle.of(0, 4242))));
  }

  // ---- readdir --------------------------------------------------------------------------------

  @Test
  void readdir_sortsByUtf8Bytes() {
    List<String> names = new ArrayList<>(List.of("b", "a", "Z", "\u00e9t\u00e9", "\u65e5\u672c", "\uD83D\uDE00smile",
        "a.b", "a-b", "\uFFFDx", "aa", "~"));
    for (String n : names) {
      mkfile(ROOT, n);
    }
    names.sort((x, y) -> Arrays.compareUnsigned(x.getBytes(StandardCharsets.UTF_8), y.getBytes(StandardCharsets.UTF_8)));
    assertEquals(names, names(ROOT));
  }

  @Test
  void readdir_withoutPlus_hasTypesNotAttrs() {
    Attr d = mkdir(ROOT, "d");
    Attr f = mkfile(ROOT, "f");
    join(store.create(ROOT, "s", obj(FileType.SYMLINK, 0777), tick()));
    List<Dirent> es = store.readdir(ROOT, null, 10, false).entries();
    assertEquals(List.of("d", "f", "s"), es.stream().map(Dirent::name).toList());
    assertEquals(List.of(FileType.DIRECTORY, FileType.REGULAR, FileType.SYMLINK), es.stream().map(Dirent::type).toList());
    assertEquals(d.handle(), es.get(0).handle());
    assertEquals(f.handle(), es.get(1).handle());
    es.forEach(e -> assertNull(e.attr()));
    es.forEach(e -> assertTrue(e.xattrs(), "without plus nothing is known of xattrs"));
    List<Dirent> plus = store.readdir(ROOT, null, 10, true).entries();
    assertEquals(attr(d.handle()), plus.get(0).attr());
    assertEquals(attr(f.handle()), plus.get(1).attr());
    plus.forEach(e -> assertFalse(e.xattrs(), e.name() + " has no xattrs yet"));
    join(store.setxattr(f.handle(), "user.k", new byte[] {1}, 0, tick()));
    List<Dirent> after = store.readdir(ROOT, null, 10, true).entries();
    assertEquals(List.of(false, true, false), after.stream().map(Dirent::xattrs).toList());
  }

  @Test
  void readdir_pagesThrough10000EntriesWithCursor() {
    int n = 10_000;
    List<CompletableFuture<Attr>> fs = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      fs.add(store.create(ROOT, String.format("entry-%05d", i), obj(i % 10 == 0 ? FileType.DIRECTORY : FileType.REGULAR, 0644), tick()));
    }
    fs.forEach(MetadataStoreContract::join);
    assertEquals(new Counts(n + 1, 1 + n / 10), store.counts());
    assertEquals(2 + n / 10, attr(ROOT).nlink());
    String cursor = null;
    int seen = 0;
    int pages = 0;
    boolean plus = false;
    while (true) {
      DirPage p = store.readdir(ROOT, cursor, 333, plus);
      pages++;
      for (Dirent d : p.entries()) {
        assertEquals(String.format("entry-%05d", seen), d.name());
        assertEquals(seen % 10 == 0 ? FileType.DIRECTORY : FileType.REGULAR, d.type());
        if (plus) {
          assertEquals(d.handle(), d.attr().handle());
          assertEquals(d.type(), d.attr().type());
        } else {
          assertNull(d.attr());
        }
        seen++;
      }
      if (p.eof()) {
        break;
      }
      assertEquals(333, p.entries().size());
      cursor = p.entries().get(p.entries().size() - 1).name();
      plus = !plus;
    }
    assertEquals(n, seen);
    assertEquals((n + 332) / 333, pages);
  }

  @Test
  void readdir_exactPage_eofOnlyWhenNothingFollows() {
    mkfile(ROOT, "a");
    mkfile(ROOT, "b");
    DirPage p = store.readdir(ROOT, null, 2, false);
    assertEquals(2, p.entries().size());
    assertTrue(p.eof());
    p = store.readdir(ROOT, null, 1, false);
    assertFalse(p.eof());
    p = store.readdir(ROOT, "b", 5, false);
    assertEquals(List.of(), p.entries());
    assertTrue(p.eof());
  }

  @Test
  void readdir_cursorOfRemovedName_continuesAfterIt() {
    for (String s : List.of("a", "b", "c", "d")) {
      mkfile(ROOT, s);
    }
    DirPage p = store.readdir(ROOT, null, 2, false);
    join(store.remove(ROOT, "b", false, tick()));
    DirPage next = store.readdir(ROOT, p.entries().get(1).name(), 10, false);
    assertEquals(List.of("c", "d"), next.entries().stream().map(Dirent::name).toList());
    assertEquals(List.of("c", "d"), store.readdir(ROOT, "bb", 10, false).entries().stream().map(Dirent::name).toList());
  }

  @Test
  void readdir_onlyOwnEntries() {
    Attr d1 = mkdir(ROOT, "d1");
    Attr d2 = mkdir(ROOT, "d2");
    mkfile(d1.handle(), "x");
    mkfile(d2.handle(), "y");
    assertEquals(List.of("x"), names(d1.handle()));
    assertEquals(List.of("y"), names(d2.handle()));
    assertEquals(List.of("d1", "d2"), names(ROOT));
  }

  @Test
  void readdir_errors() {
    Attr f = mkfile(ROOT, "f");
    assertEquals(Errno.ENOTDIR, errnoOf(() -> store.readdir(f.handle(), null, 10, false)));
    assertEquals(Errno.ENOENT, errnoOf(() -> store.readdir(Handle.of(0, 31_337), null, 10, false)));
    assertEquals(Errno.EINVAL, errnoOf(() -> store.readdir(ROOT, null, 0, false)));
  }

  // ---- remove ---------------------------------------------------------------------------------

  @Test
  void remove_file_isGone() {
    Attr f = mkfile(ROOT, "f");
    long now = tick();
    Removed r = join(store.remove(ROOT, "f", false, now));
    assertTrue(r.gone());
    assertEquals(f.handle(), r.attr().handle());
    assertEquals(0, r.attr().nlink());
    assertEquals(LAYOUT, r.attr().layout());
    assertEquals(Errno.ENOENT, errnoOf(() -> store.getattr(f.handle())));
    assertEquals(Errno.ENOENT, errnoOf(() -> store.lookup(ROOT, "f")));
    assertEquals(now, attr(ROOT).mtimeNs());
    assertEquals(now, attr(ROOT).ctimeNs());
    assertEquals(new Counts(1, 1), store.counts());
  }

  @Test
  void remove_emptyDir_dropsParentNlink() {
    Attr d = mkdir(ROOT, "d");
    assertEquals(3, attr(ROOT).nlink());
    Removed r = join(store.remove(ROOT, "d", true, tick()));
    assertTrue(r.gone());
    assertEquals(0, r.attr().nlink());
    assertEquals(2, attr(ROOT).nlink());
    assertEquals(Errno.ENOENT, errnoOf(() -> store.getattr(d.handle())));
    assertEquals(new Counts(1, 1), store.counts());
  }

  @Test
  void remove_nonEmptyDir_ENOTEMPTY() {
    Attr d = mkdir(ROOT, "d");
    mkfile(d.handle(), "f");
    Attr full = attr(d.handle());
    assertEquals(Errno.ENOTEMPTY, errno(store.remove(ROOT, "d", true, tick())));
    assertEquals(full, store.lookup(ROOT, "d"));
  }

  @Test
  void remove_dirAsFile_EISDIR() {
    mkdir(ROOT, "d");
    assertEquals(Errno.EISDIR, errno(store.remove(ROOT, "d", false, tick())));
  }

  @Test
  void remove_fileAsDir_ENOTDIR() {
    mkfile(ROOT, "f");
    assertEquals(Errno.ENOTDIR, errno(store.remove(ROOT, "f", true, tick())));
  }

  @Test
  void remove_missing_ENOENT() {
    assertEquals(Errno.ENOENT, errno(store.remove(ROOT, "nope", false, tick())));
    assertEquals(Errno.ENOENT, errno(store.remove(Handle.of(0, 9191), "nope", false, tick())));
    Attr f = mkfile(ROOT, "f");
    assertEquals(Errno.ENOTDIR, errno(store.remove(f.handle(), "x", false, tick())));
  }

  @Test
  void remove_takesObjectsXattrsAlong() {
    Attr f = mkfile(ROOT, "f");
    join(store.setxattr(f.handle(), "user.a", new byte[] {1}, 0, tick()));
    join(store.remove(ROOT, "f", false, tick()));
    assertEquals(Errno.ENOENT, errnoOf(() -> store.listxattr(f.handle())));
  }

  // ---- link -----------------------------------------------------------------------------------

  @Test
  void link_countsNames_dataKeptUntilLastName() {
    Attr f = mkfile(ROOT, "f");
    Attr d = mkdir(ROOT, "d");
    long now = tick();
    Attr l = join(store.link(f.handle(), d.handle(), "g", now));
    assertEquals(2, l.nlink());
    assertEquals(now, l.ctimeNs());
    assertEquals(now, attr(d.handle()).mtimeNs());
    join(store.link(f.handle(), ROOT, "h", tick()));
    assertEquals(3, attr(f.handle()).nlink());
    assertEquals(f.handle(), store.lookup(d.handle(), "g").handle());
    assertEquals(new Counts(3, 2), store.counts());

    Removed r1 = join(store.remove(ROOT, "f", false, tick()));
    assertFalse(r1.gone());
    assertEquals(2, r1.attr().nlink());
    Removed r2 = join(store.remove(d.handle(), "g", false, tick()));
    assertFalse(r2.gone());
    assertEquals(1, attr(f.handle()).nlink());
    assertEquals(LAYOUT, attr(f.handle()).layout());
    Removed r3 = join(store.remove(ROOT, "h", false, tick()));
    assertTrue(r3.gone());
    assertEquals(LAYOUT, r3.attr().layout());
    assertEquals(Errno.ENOENT, errnoOf(() -> store.getattr(f.handle())));
    assertEquals(new Counts(2, 2), store.counts());
  }

  @Test
  void link_directory_EPERM() {
    Attr d = mkdir(ROOT, "d");
    assertEquals(Errno.EPERM, errno(store.link(d.handle(), ROOT, "d2", tick())));
  }

  @Test
  void link_errors() {
    Attr f = mkfile(ROOT, "f");
    assertEquals(Errno.EEXIST, errno(store.link(f.handle(), ROOT, "f", tick())));
    assertEquals(Errno.ENOENT, errno(store.link(Handle.of(0, 5555), ROOT, "x", tick())));
    assertEquals(Errno.ENOENT, errno(store.link(f.handle(), Handle.of(0, 5555), "x", tick())));
    assertEquals(Errno.ENOTDIR, errno(store.link(f.handle(), f.handle(), "x", tick())));
    assertEquals(1, attr(f.handle()).nlink());
  }

  @Test
  void link_symlinkAndSpecialFiles() {
    Attr s = join(store.create(ROOT, "s", obj(FileType.SYMLINK, 0777), tick()));
    Attr p = join(store.create(ROOT, "p", obj(FileType.FIFO, 0600), tick()));
    assertEquals(2, join(store.link(s.handle(), ROOT, "s2", tick())).nlink());
    assertEquals(2, join(store.link(p.handle(), ROOT, "p2", tick())).nlink());
    assertEquals("target/of/link", store.readlink(store.lookup(ROOT, "s2").handle()));
  }

  // ---- rename ---------------------------------------------------------------------------------

  /**
   * A rename sent again with its verifier (its answer was lost) is answered with the object it
   * moved and nothing replaced; nothing moves again, even when the old name is taken meanwhile.
   */
  @Test
  void rename_sentAgainWithItsVerifier_doesNothingMore() {
    Attr d = mkdir(ROOT, "d");
    Attr a = mkfile(ROOT, "a");
    Attr old = mkfile(d.handle(), "b");
    Renamed first = join(store.rename(ROOT, "a", d.handle(), "b", 0, 77, tick()));
    assertEquals(old.handle(), first.replaced().handle());
    Attr again = mkfile(ROOT, "a"); // the old name taken again before the request is sent again
    Attr dir = attr(d.handle());
    Renamed replay = join(store.rename(ROOT, "a", d.handle(), "b", 0, 77, tick()));
    assertEquals(first.moved(), replay.moved());
    assertNull(replay.replaced());
    assertEquals(a.handle(), store.lookup(d.handle(), "b").handle());
    assertEquals(again.handle(), store.lookup(ROOT, "a").handle(), "not moved by the request sent again");
    assertEquals(dir, attr(d.handle()));
    // another verifier, or none, is a rename of its own
    join(store.rename(ROOT, "a", d.handle(), "b", 0, 78, tick()));
    assertEquals(again.handle(), store.lookup(d.handle(), "b").handle());
    assertEquals(Errno.ENOENT, errno(store.rename(ROOT, "a", d.handle(), "b", 0, 77, tick())));
  }

  /** A link sent again with its verifier is answered with its object, and the link count grows once. */
  @Test
  void link_sentAgainWithItsVerifier_linksOnce() {
    Attr f = mkfile(ROOT, "f");
    NewEntry first = join(store.linkEntry(f.handle(), ROOT, "g", 5, tick()));
    assertEquals(2, first.attr().nlink());
    NewEntry again = join(store.linkEntry(f.handle(), ROOT, "g", 5, tick()));
    assertEquals(first.attr(), again.attr());
    assertEquals(0, again.parentWasNs());
    assertEquals(2, attr(f.handle()).nlink());
    assertEquals(Errno.EEXIST, errno(store.linkEntry(f.handle(), ROOT, "g", 6, tick())));
    assertEquals(Errno.EEXIST, errno(store.linkEntry(f.handle(), ROOT, "g", tick())));
  }

  @Test
  void rename_fileWithinDirectory() {
    Attr f = mkfile(ROOT, "a");
    long now = tick();
    Renamed r = join(store.rename(ROOT, "a", ROOT, "b", 0, now));
    assertEquals(f.handle(), r.moved().handle());
    assertNull(r.replaced());
    assertEquals(List.of("b"), names(ROOT));
    assertEquals(now, attr(f.handle()).ctimeNs());
    assertEquals(now, attr(ROOT).mtimeNs());
    assertEquals(new Counts(2, 1), store.counts());
  }

  @Test
  void rename_replacesFile() {
    Attr a = mkfile(ROOT, "a");
    Attr b = mkfile(ROOT, "b");
    Renamed r = join(store.rename(ROOT, "a", ROOT, "b", 0, tick()));
    assertEquals(a.handle(), r.moved().handle());
    assertEquals(b.handle(), r.replaced().handle());
    assertTrue(r.replacedGone());
    assertEquals(0, r.replaced().nlink());
    assertEquals(List.of("b"), names(ROOT));
    assertEquals(a.handle(), store.lookup(ROOT, "b").handle());
    assertEquals(Errno.ENOENT, errnoOf(() -> store.getattr(b.handle())));
    assertEquals(new Counts(2, 1), store.counts());
  }

  @Test
  void rename_replacesLinkedFile_replacedStays() {
    mkfile(ROOT, "a");
    Attr b = mkfile(ROOT, "b");
    join(store.link(b.handle(), ROOT, "b2", tick()));
    Renamed r = join(store.rename(ROOT, "a", ROOT, "b", 0, tick()));
    assertFalse(r.replacedGone());
    assertEquals(1, r.replaced().nlink());
    assertEquals(1, attr(b.handle()).nlink());
    assertEquals(List.of("b", "b2"), names(ROOT));
  }

  @Test
  void rename_dirOverEmptyDir() {
    Attr a = mkdir(ROOT, "a");
    mkfile(a.handle(), "inside");
    Attr b = mkdir(ROOT, "b");
    assertEquals(4, attr(ROOT).nlink());
    Renamed r = join(store.rename(ROOT, "a", ROOT, "b", 0, tick()));
    assertEquals(b.handle(), r.replaced().handle());
    assertTrue(r.replacedGone());
    assertEquals(3, attr(ROOT).nlink());
    assertEquals(List.of("inside"), names(store.lookup(ROOT, "b").handle()));
    assertEquals(Errno.ENOENT, errnoOf(() -> store.getattr(b.handle())));
    assertEquals(new Counts(3, 2), store.counts());
  }

  @Test
  void rename_overNonEmptyDir_ENOTEMPTY() {
    mkdir(ROOT, "a");
    Attr b = mkdir(ROOT, "b");
    mkfile(b.handle(), "x");
    assertEquals(Errno.ENOTEMPTY, errno(store.rename(ROOT, "a", ROOT, "b", 0, tick())));
    assertEquals(List.of("a", "b"), names(ROOT));
  }

  @Test
  void rename_dirOverFile_ENOTDIR() {
    mkdir(ROOT, "d");
    mkfile(ROOT, "f");
    assertEquals(Errno.ENOTDIR, errno(store.rename(ROOT, "d", ROOT, "f", 0, tick())));
  }

  @Test
  void rename_fileOverDir_EISDIR() {
    mkdir(ROOT, "d");
    mkfile(ROOT, "f");
    assertEquals(Errno.EISDIR, errno(store.rename(ROOT, "f", ROOT, "d", 0, tick())));
  }

  @Test
  void rename_dirIntoOwnSubtree_EINVAL() {
    Attr a = mkdir(ROOT, "a");
    Attr b = mkdir(a.handle(), "b");
    Attr c = mkdir(b.handle(), "c");
    assertEquals(Errno.EINVAL, errno(store.rename(ROOT, "a", a.handle(), "x", 0, tick())));
    assertEquals(Errno.EINVAL, errno(store.rename(ROOT, "a", c.handle(), "x", 0, tick())));
    assertEquals(Errno.EINVAL, errno(store.rename(a.handle(), "b", c.handle(), "x", 0, tick())));
    // moving up is fine, and onto an ancestor is ENOTEMPTY
    assertEquals(Errno.ENOTEMPTY, errno(store.rename(b.handle(), "c", ROOT, "a", 0, tick())));
    join(store.rename(b.handle(), "c", ROOT, "c", 0, tick()));
    assertEquals(List.of("a", "c"), names(ROOT));
  }

  @Test
  void rename_otherNameOfSameObject_doesNothing() {
    Attr f = mkfile(ROOT, "a");
    join(store.link(f.handle(), ROOT, "b", tick()));
    Attr before = attr(f.handle());
    Attr rootBefore = attr(ROOT);
    Renamed r = join(store.rename(ROOT, "a", ROOT, "b", 0, tick()));
    assertNull(r.replaced());
    assertEquals(List.of("a", "b"), names(ROOT));
    assertEquals(before, attr(f.handle()));
    assertEquals(rootBefore, attr(ROOT));
    assertEquals(2, attr(f.handle()).nlink());
  }

  @Test
  void rename_ontoItself_doesNothing() {
    Attr d = mkdir(ROOT, "d");
    join(store.rename(ROOT, "d", ROOT, "d", 0, tick()));
    assertEquals(d, attr(d.handle()));
    assertEquals(List.of("d"), names(ROOT));
  }

  @Test
  void rename_noReplace() {
    mkfile(ROOT, "a");
    mkfile(ROOT, "b");
    assertEquals(Errno.EEXIST, errno(store.rename(ROOT, "a", ROOT, "b", RenameReq.NOREPLACE, tick())));
    assertEquals(Errno.EEXIST, errno(store.rename(ROOT, "a", ROOT, "a", RenameReq.NOREPLACE, tick())));
    join(store.rename(ROOT, "a", ROOT, "c", RenameReq.NOREPLACE, tick()));
    assertEquals(List.of("b", "c"), names(ROOT));
  }

  @Test
  void rename_dirBetweenParents_movesNlinkAndDotDot() {
    Attr p1 = mkdir(ROOT, "p1");
    Attr p2 = mkdir(ROOT, "p2");
    Attr d = mkdir(p1.handle(), "d");
    assertEquals(3, attr(p1.handle()).nlink());
    assertEquals(2, attr(p2.handle()).nlink());
    join(store.rename(p1.handle(), "d", p2.handle(), "e", 0, tick()));
    assertEquals(2, attr(p1.handle()).nlink());
    assertEquals(3, attr(p2.handle()).nlink());
    assertEquals(p2.handle(), store.lookup(d.handle(), "..").handle());
    assertEquals(2, attr(d.handle()).nlink());
    // and over an empty directory in a third parent
    Attr p3 = mkdir(ROOT, "p3");
    mkdir(p3.handle(), "empty");
    assertEquals(3, attr(p3.handle()).nlink());
    join(store.rename(p2.handle(), "e", p3.handle(), "empty", 0, tick()));
    assertEquals(2, attr(p2.handle()).nlink());
    assertEquals(3, attr(p3.handle()).nlink());
    assertEquals(p3.handle(), store.lookup(d.handle(), "..").handle());
    assertEquals(new Counts(5, 5), store.counts());
  }

  @Test
  void rename_fileBetweenParents_keepsNlinks() {
    Attr p1 = mkdir(ROOT, "p1");
    Attr p2 = mkdir(ROOT, "p2");
    Attr f = mkfile(p1.handle(), "f");
    long now = tick();
    join(store.rename(p1.handle(), "f", p2.handle(), "g", 0, now));
    assertEquals(2, attr(p1.handle()).nlink());
    assertEquals(2, attr(p2.handle()).nlink());
    assertEquals(1, attr(f.handle()).nlink());
    assertEquals(now, attr(p1.handle()).mtimeNs());
    assertEquals(now, attr(p2.handle()).mtimeNs());
    assertEquals(List.of(), names(p1.handle()));
    assertEquals(List.of("g"), names(p2.handle()));
  }

  @Test
  void rename_errors() {
    Attr f = mkfile(ROOT, "f");
    assertEquals(Errno.ENOENT, errno(store.rename(ROOT, "nope", ROOT, "x", 0, tick())));
    assertEquals(Errno.ENOENT, errno(store.rename(ROOT, "f", Handle.of(0, 8888), "x", 0, tick())));
    assertEquals(Errno.ENOTDIR, errno(store.rename(ROOT, "f", f.handle(), "x", 0, tick())));
    assertEquals(Errno.EINVAL, errno(store.rename(ROOT, "f", ROOT, "x", 4, tick())));
    assertEquals(Errno.EINVAL, errno(store.rename(ROOT, "f", ROOT, "..", 0, tick())));
    assertEquals(List.of("f"), names(ROOT));
  }

  // ---- setattr --------------------------------------------------------------------------------

  @Test
  void setattr_modeUidGid_setCtime() {
    Attr f = mkfile(ROOT, "f");
    long now = tick();
    Attr a = join(store.setattr(f.handle(), new SetAttr(MODE, 04711, 0, 0, 0, 0, 0), now));
    assertEquals(04711, a.mode());
    assertEquals(now, a.ctimeNs());
    assertEquals(f.mtimeNs(), a.mtimeNs());
    a = join(store.setattr(f.handle(), new SetAttr(UID, 0, 42, 0, 0, 0, 0), tick()));
    assertEquals(42, a.uid());
    assertEquals(100, a.gid());
    a = join(store.setattr(f.handle(), new SetAttr(GID | UID, 0, 7, 8, 0, 0, 0), tick()));
    assertEquals(7, a.uid());
    assertEquals(8, a.gid());
    assertEquals(04711, a.mode());
    assertEquals(a, attr(f.handle()));
  }

  @Test
  void setattr_size_setsMtimeAndCtime() {
    Attr f = mkfile(ROOT, "f");
    long now = tick();
    Attr a = join(store.setattr(f.handle(), new SetAttr(SIZE, 0, 0, 0, 1 << 20, 0, 0), now));
    assertEquals(1 << 20, a.size());
    assertEquals(now, a.mtimeNs());
    assertEquals(now, a.ctimeNs());
    a = join(store.setattr(f.handle(), new SetAttr(SIZE, 0, 0, 0, 10, 0, 0), tick()));
    assertEquals(10, a.size());
  }

  @Test
  void setattr_sizeOfDirectory_EISDIR() {
    Attr d = mkdir(ROOT, "d");
    assertEquals(Errno.EISDIR, errno(store.setattr(d.handle(), new SetAttr(SIZE, 0, 0, 0, 0, 0, 0), tick())));
    assertEquals(Errno.EISDIR, errno(store.setattr(d.handle(), new SetAttr(SIZE_GROW, 0, 0, 0, 5, 0, 0), tick())));
    Attr s = join(store.create(ROOT, "s", obj(FileType.SYMLINK, 0777), tick()));
    assertEquals(Errno.EINVAL, errno(store.setattr(s.handle(), new SetAttr(SIZE, 0, 0, 0, 0, 0, 0), tick())));
  }

  @Test
  void setattr_sizeGrow_onlyGrows() {
    Attr f = mkfile(ROOT, "f");
    long t1 = tick();
    Attr a = join(store.setattr(f.handle(), new SetAttr(SIZE_GROW, 0, 0, 0, 100, 0, 0), t1));
    assertEquals(100, a.size());
    assertEquals(t1, a.ctimeNs());
    assertEquals(f.mtimeNs(), a.mtimeNs());
    a = join(store.setattr(f.handle(), new SetAttr(SIZE_GROW, 0, 0, 0, 50, 0, 0), tick()));
    assertEquals(100, a.size());
    assertEquals(t1, a.ctimeNs(), "nothing changed, so ctime stays");
  }

  @Test
  void setattr_sizeGrowWithMtime_setsMtime() {
    Attr f = mkfile(ROOT, "f");
    long writeTime = tick();
    long now = tick();
    Attr a = join(store.setattr(f.handle(), new SetAttr(SIZE_GROW | MTIME, 0, 0, 0, 10, 0, writeTime), now));
    assertEquals(10, a.size());
    assertEquals(writeTime, a.mtimeNs());
    assertEquals(now, a.ctimeNs());
    // an overwrite within the size still moves mtime
    long writeTime2 = tick();
    long now2 = tick();
    a = join(store.setattr(f.handle(), new SetAttr(SIZE_GROW | MTIME, 0, 0, 0, 5, 0, writeTime2), now2));
    assertEquals(10, a.size());
    assertEquals(writeTime2, a.mtimeNs());
    assertEquals(now2, a.ctimeNs());
    // the same flush again changes nothing
    a = join(store.setattr(f.handle(), new SetAttr(SIZE_GROW | MTIME, 0, 0, 0, 5, 0, writeTime2), tick()));
    assertEquals(now2, a.ctimeNs());
  }

  @Test
  void setattr_explicitTimes() {
    Attr f = mkfile(ROOT, "f");
    long now = tick();
    Attr a = join(store.setattr(f.handle(), new SetAttr(ATIME | MTIME, 0, 0, 0, 0, 111, 222), now));
    assertEquals(111, a.atimeNs());
    assertEquals(222, a.mtimeNs());
    assertEquals(now, a.ctimeNs());
    a = join(store.setattr(f.handle(), new SetAttr(ATIME, 0, 0, 0, 0, 333, 0), tick()));
    assertEquals(333, a.atimeNs());
    assertEquals(222, a.mtimeNs());
  }

  @Test
  void setattr_timesNow() {
    Attr f = mkfile(ROOT, "f");
    long now = tick();
    Attr a = join(store.setattr(f.handle(), new SetAttr(ATIME_NOW | MTIME_NOW, 0, 0, 0, 0, 5, 6), now));
    assertEquals(now, a.atimeNs());
    assertEquals(now, a.mtimeNs());
    assertEquals(now, a.ctimeNs());
    long later = tick();
    a = join(store.setattr(f.handle(), new SetAttr(MTIME_NOW, 0, 0, 0, 0, 0, 0), later));
    assertEquals(now, a.atimeNs());
    assertEquals(later, a.mtimeNs());
  }

  @Test
  void setattr_killSuid() {
    Attr f = join(store.create(ROOT, "f", new NewObject(FileType.REGULAR, 06755, 0, 0, 0, null, null), tick()));
    long now = tick();
    Attr a = join(store.setattr(f.handle(), change(KILL_SUID), now));
    assertEquals(0755, a.mode());
    assertEquals(now, a.ctimeNs());
    // without group execute, set-group-id means mandatory locking and stays
    Attr g = join(store.create(ROOT, "g", new NewObject(FileType.REGULAR, 06744, 0, 0, 0, null, null), tick()));
    a = join(store.setattr(g.handle(), change(KILL_SUID), tick()));
    assertEquals(02744, a.mode());
    // nothing to kill: ctime stays
    Attr plain = mkfile(ROOT, "plain");
    a = join(store.setattr(plain.handle(), change(KILL_SUID), tick()));
    assertEquals(plain.ctimeNs(), a.ctimeNs());
    // a directory's bits mean inheritance: kept
    Attr d = join(store.create(ROOT, "d", new NewObject(FileType.DIRECTORY, 06775, 0, 0, 0, null, null), tick()));
    a = join(store.setattr(d.handle(), change(KILL_SUID | UID), tick()));
    assertEquals(06775, a.mode());
  }

  @Test
  void setattr_emptyMask_changesNothing() {
    Attr f = mkfile(ROOT, "f");
    assertEquals(f, join(store.setattr(f.handle(), change(0), tick())));
  }

  @Test
  void setattr_errors() {
    Attr f = mkfile(ROOT, "f");
    assertEquals(Errno.ENOENT, errno(store.setattr(Handle.of(0, 12345), change(MODE), tick())));
    assertEquals(Errno.EINVAL, errno(store.setattr(f.handle(), new SetAttr(MODE, 0100644, 0, 0, 0, 0, 0), tick())));
    assertEquals(Errno.EINVAL, errno(store.setattr(f.handle(), change(1 << 20), tick())));
    assertEquals(Errno.EINVAL, errno(store.setattr(f.handle(), new SetAttr(SIZE, 0, 0, 0, -1, 0, 0), tick())));
    assertEquals(f, attr(f.handle()));
  }

  // ---- xattrs ---------------------------------------------------------------------------------

  @Test
  void xattr_setGetListRemove() {
    Attr f = mkfile(ROOT, "f");
    long now = tick();
    join(store.setxattr(f.handle(), "user.b", new byte[] {1, 2, 3}, 0, now));
    assertEquals(now, attr(f.handle()).ctimeNs());
    join(store.setxattr(f.handle(), "user.a", new byte[0], 0, tick()));
    join(store.setxattr(f.handle(), "security.selinux", "x".getBytes(StandardCharsets.UTF_8), 0, tick()));
    assertArrayEquals(new byte[] {1, 2, 3}, store.getxattr(f.handle(), "user.b"));
    assertArrayEquals(new byte[0], store.getxattr(f.handle(), "user.a"));
    assertEquals(List.of("security.selinux", "user.a", "user.b"), store.listxattr(f.handle()));
    join(store.setxattr(f.handle(), "user.b", new byte[] {9}, 0, tick()));
    assertArrayEquals(new byte[] {9}, store.getxattr(f.handle(), "user.b"));
    long later = tick();
    join(store.removexattr(f.handle(), "user.b", later));
    assertEquals(later, attr(f.handle()).ctimeNs());
    assertEquals(List.of("security.selinux", "user.a"), store.listxattr(f.handle()));
    assertEquals(List.of(), store.listxattr(ROOT));
  }

  @Test
  void xattr_createAndReplaceFlags() {
    Attr f = mkfile(ROOT, "f");
    assertEquals(Errno.ENODATA, errno(store.setxattr(f.handle(), "user.x", new byte[] {1}, SetxattrReq.REPLACE, tick())));
    join(store.setxattr(f.handle(), "user.x", new byte[] {1}, SetxattrReq.CREATE, tick()));
    assertEquals(Errno.EEXIST, errno(store.setxattr(f.handle(), "user.x", new byte[] {2}, SetxattrReq.CREATE, tick())));
    join(store.setxattr(f.handle(), "user.x", new byte[] {3}, SetxattrReq.REPLACE, tick()));
    assertArrayEquals(new byte[] {3}, store.getxattr(f.handle(), "user.x"));
    assertEquals(Errno.EINVAL, errno(store.setxattr(f.handle(), "user.x", new byte[] {4},
        SetxattrReq.CREATE | SetxattrReq.REPLACE, tick())));
  }

  @Test
  void xattr_missing_ENODATA() {
    Attr f = mkfile(ROOT, "f");
    assertEquals(Errno.ENODATA, errnoOf(() -> store.getxattr(f.handle(), "user.none")));
    assertEquals(Errno.ENODATA, errno(store.removexattr(f.handle(), "user.none", tick())));
    Handle gone = Handle.of(0, 4444);
    assertEquals(Errno.ENOENT, errnoOf(() -> store.getxattr(gone, "user.none")));
    assertEquals(Errno.ENOENT, errnoOf(() -> store.listxattr(gone)));
    assertEquals(Errno.ENOENT, errno(store.setxattr(gone, "user.a", new byte[1], 0, tick())));
    assertEquals(Errno.ENOENT, errno(store.removexattr(gone, "user.a", tick())));
  }

  @Test
  void xattr_limits() {
    Attr f = mkfile(ROOT, "f");
    assertEquals(Errno.ERANGE, errno(store.setxattr(f.handle(), "", new byte[1], 0, tick())));
    assertEquals(Errno.ERANGE, errno(store.setxattr(f.handle(), "u".repeat(256), new byte[1], 0, tick())));
    assertEquals(Errno.E2BIG, errno(store.setxattr(f.handle(), "user.big", new byte[65537], 0, tick())));
    join(store.setxattr(f.handle(), "u".repeat(255), new byte[65536], 0, tick()));
    assertEquals(65536, store.getxattr(f.handle(), "u".repeat(255)).length);
  }

  @Test
  void xattr_valuesAreCopies() {
    Attr f = mkfile(ROOT, "f");
    byte[] v = {1, 2};
    CompletableFuture<Void> set = store.setxattr(f.handle(), "user.v", v, 0, tick());
    v[0] = 99;
    join(set);
    byte[] got = store.getxattr(f.handle(), "user.v");
    assertArrayEquals(new byte[] {1, 2}, got);
    got[1] = 77;
    assertArrayEquals(new byte[] {1, 2}, store.getxattr(f.handle(), "user.v"));
  }

  @Test
  void xattr_perObject() {
    Attr a = mkfile(ROOT, "a");
    Attr b = mkfile(ROOT, "b");
    join(store.setxattr(a.handle(), "user.k", new byte[] {1}, 0, tick()));
    assertEquals(List.of(), store.listxattr(b.handle()));
    assertEquals(Errno.ENODATA, errnoOf(() -> store.getxattr(b.handle(), "user.k")));
  }

  // ---- ACLs -----------------------------------------------------------------------------------

  /** {@code u::rwx,u:12003:rwx,g::r-x,m::rwx,o::---}. */
  private static PosixAcl acl() {
    return new PosixAcl(List.of(
        new PosixAcl.Entry(1, 7, -1), new PosixAcl.Entry(2, 7, 12003), new PosixAcl.Entry(4, 5, -1),
        new PosixAcl.Entry(0x10, 7, -1), new PosixAcl.Entry(0x20, 0, -1)));
  }

  private NewObject withUmask(FileType type, int mode, int umask) {
    NewObject o = obj(type, mode);
    return new NewObject(o.type(), o.mode(), o.uid(), o.gid(), o.rdev(), o.layout(), o.target(), 0, umask);
  }

  @Test
  void create_appliesTheUmask_unlessTheDirectoryHasADefaultAcl() {
    assertEquals(0640, join(store.create(ROOT, "f", withUmask(FileType.REGULAR, 0666, 027), tick())).mode());
    assertEquals(0750, join(store.create(ROOT, "d", withUmask(FileType.DIRECTORY, 0777, 027), tick())).mode());
    Attr d = mkdir(ROOT, "acl");
    join(store.setxattr(d.handle(), PosixAcl.DEFAULT, acl().bytes(), 0, tick()));
    Attr f = join(store.create(d.handle(), "f", withUmask(FileType.REGULAR, 0666, 077), tick()));
    assertEquals(0660, f.mode(), "the default ACL replaces the umask; its mask limits the group class");
    assertEquals(List.of(6, 7, 5, 6, 0), PosixAcl.parse(store.getxattr(f.handle(), PosixAcl.ACCESS)).entries()
        .stream().map(PosixAcl.Entry::perm).toList());
    assertEquals(List.of(PosixAcl.ACCESS), store.listxattr(f.handle()));
    Attr sub = join(store.create(d.handle(), "sub", withUmask(FileType.DIRECTORY, 0777, 077), tick()));
    assertEquals(0770, sub.mode());
    assertArrayEquals(acl().bytes(), store.getxattr(sub.handle(), PosixAcl.DEFAULT), "a new directory inherits it");
    assertArrayEquals(acl().bytes(), store.getxattr(sub.handle(), PosixAcl.ACCESS));
    Attr link = join(store.create(d.handle(), "l", obj(FileType.SYMLINK, 0777), tick()));
    assertEquals(0777, link.mode());
    assertEquals(List.of(), store.listxattr(link.handle()));
  }

  @Test
  void accessAcl_setsTheMode_andAChmodSetsItsMask() {
    Attr f = join(store.create(ROOT, "f", obj(FileType.REGULAR, 02600), tick()));
    join(store.setxattr(f.handle(), PosixAcl.ACCESS, acl().bytes(), 0, tick()));
    assertEquals(02770, attr(f.handle()).mode());
    join(store.setattr(f.handle(), new SetAttr(MODE, 0640, 0, 0, 0, 0, 0), tick()));
    assertEquals(List.of(6, 7, 5, 4, 0), PosixAcl.parse(store.getxattr(f.handle(), PosixAcl.ACCESS)).entries()
        .stream().map(PosixAcl.Entry::perm).toList(), "owner, mask and other follow the mode; the rest stays");
    // an ACL the mode says all of is not kept (setfacl -b, or the three base entries)
    PosixAcl plain = new PosixAcl(List.of(new PosixAcl.Entry(1, 6, -1), new PosixAcl.Entry(4, 0, -1),
        new PosixAcl.Entry(0x20, 4, -1)));
    join(store.setxattr(f.handle(), PosixAcl.ACCESS, plain.bytes(), 0, tick()));
    assertEquals(0604, attr(f.handle()).mode());
    assertEquals(List.of(), store.listxattr(f.handle()));
    // set by someone outside the file's group: set-group-ID goes
    join(store.setattr(f.handle(), new SetAttr(MODE, 02770, 0, 0, 0, 0, 0), tick()));
    join(store.setxattr(f.handle(), PosixAcl.ACCESS, acl().bytes(), SetxattrReq.KILL_SGID, tick()));
    assertEquals(0770, attr(f.handle()).mode());
  }

  @Test
  void acls_badOnes_areRefused_andChangeNothing() {
    Attr f = mkfile(ROOT, "f");
    assertEquals(Errno.EINVAL, errno(store.setxattr(f.handle(), PosixAcl.ACCESS, new byte[] {2, 0, 0, 0, 1}, 0, tick())));
    assertEquals(Errno.EACCES, errno(store.setxattr(f.handle(), PosixAcl.DEFAULT, acl().bytes(), 0, tick())));
    assertEquals(Errno.EINVAL, errno(store.setxattr(f.handle(), "user.x", new byte[1], 8, tick())));
    assertEquals(f, attr(f.handle()));
    assertEquals(List.of(), store.listxattr(f.handle()));
  }

  // ---- symlinks -------------------------------------------------------------------------------

  @Test
  void readlink_returnsTarget() {
    String target = "/a/very/long/" + "\u00fc".repeat(100) + "/target";
    Attr s = join(store.create(ROOT, "s", new NewObject(FileType.SYMLINK, 0777, 0, 0, 0, null, target), tick()));
    assertEquals(target, store.readlink(s.handle()));
    assertEquals(target.getBytes(StandardCharsets.UTF_8).length, s.size());
  }

  @Test
  void readlink_errors() {
    Attr f = mkfile(ROOT, "f");
    assertEquals(Errno.EINVAL, errnoOf(() -> store.readlink(f.handle())));
    assertEquals(Errno.EINVAL, errnoOf(() -> store.readlink(ROOT)));
    assertEquals(Errno.ENOENT, errnoOf(() -> store.readlink(Handle.of(0, 6789))));
  }

  // ---- counts and visiting --------------------------------------------------------------------

  @Test
  void counts_trackCreatesAndRemoves() {
    Attr d = mkdir(ROOT, "d");
    mkfile(d.handle(), "f");
    mkdir(d.handle(), "e");
    join(store.create(d.handle(), "s", obj(FileType.SYMLINK, 0777), tick()));
    assertEquals(new Counts(5, 3), store.counts());
    join(store.remove(d.handle(), "e", true, tick()));
    join(store.remove(d.handle(), "f", false, tick()));
    assertEquals(new Counts(3, 2), store.counts());
  }

  @Test
  void forEachObject_visitsEveryObjectOnce() {
    int n = 2500; // more than one chunk
    List<CompletableFuture<Attr>> fs = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      fs.add(store.create(ROOT, "f" + i, obj(FileType.REGULAR, 0644), tick()));
    }
    Set<Handle> expected = new HashSet<>(Set.of(ROOT));
    fs.forEach(f -> expected.add(join(f).handle()));
    Set<Handle> seen = new HashSet<>();
    store.forEachObject(a -> assertTrue(seen.add(a.handle())));
    assertEquals(expected, seen);
  }

  // ---- threads --------------------------------------------------------------------------------

  @Test
  void mutations_concurrentCallers_allApplied() throws Exception {
    int threads = 4;
    int each = 200;
    List<Thread> ts = new ArrayList<>();
    List<CompletableFuture<Attr>> fs = java.util.Collections.synchronizedList(new ArrayList<>());
    for (int t = 0; t < threads; t++) {
      int id = t;
      ts.add(new Thread(() -> {
        for (int i = 0; i < each; i++) {
          fs.add(store.create(ROOT, "t" + id + "-" + i, obj(FileType.REGULAR, 0644), tick()));
        }
      }));
    }
    ts.forEach(Thread::start);
    for (Thread t : ts) {
      t.join();
    }
    Set<Handle> handles = new HashSet<>();
    fs.forEach(f -> handles.add(join(f).handle()));
    assertEquals(threads * each, handles.size());
    assertEquals(threads * each, names(ROOT).size());
  }

  /** A second name comes and goes; a reader must see nlink 2 exactly when both names are there. */
  @Test
  void reads_neverSeeHalfAnOp() throws Exception {
    Attr f = mkfile(ROOT, "a");
    AtomicBoolean done = new AtomicBoolean();
    AtomicReference<String> problem = new AtomicReference<>();
    Thread reader = new Thread(() -> {
      while (!done.get() && problem.get() == null) {
        List<Dirent> es = store.readdir(ROOT, null, 10, true).entries();
        int nlink = es.get(0).attr().nlink();
        if (nlink != es.size()) {
          problem.set(es.size() + " names but nlink " + nlink);
        }
      }
    });
    reader.start();
    List<CompletableFuture<?>> fs = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      fs.add(store.link(f.handle(), ROOT, "b", tick()));
      fs.add(store.remove(ROOT, "b", false, tick()));
    }
    fs.forEach(MetadataStoreContract::join);
    done.set(true);
    reader.join();
    assertNull(problem.get());
  }

  // ---- closing --------------------------------------------------------------------------------

  @Test
  void close_isIdempotent_laterCallsFail() {
    mkfile(ROOT, "f");
    store.close();
    store.close();
    assertEquals(Errno.EIO, errnoOf(() -> store.getattr(ROOT)));
    assertEquals(Errno.EIO, errno(store.create(ROOT, "g", obj(FileType.REGULAR, 0644), tick())));
  }

  // ---- model ----------------------------------------------------------------------------------

  @Test
  void randomOperations_matchModel() {
    for (long seed : new long[] {1, 2, 3}) {
      store.close();
      store = open();
      new NamespaceModelCheck(store, seed).run(randomOps());
    }
  }

  @Test
  void handles_areNotReusedAfterRemove() {
    Attr a = mkfile(ROOT, "a");
    join(store.remove(ROOT, "a", false, tick()));
    Attr b = mkfile(ROOT, "a");
    assertNotEquals(a.handle(), b.handle());
  }

  // ---- heads ----------------------------------------------------------------------------------

  static final Layout HEAD_LAYOUT = new Layout(LAYOUT.dist(), LAYOUT.datafiles(), 4096);

  /** A regular file whose first 4096 bytes are a head. */
  Attr mkheaded(Handle parent, String name) {
    return join(store.create(parent, name, new NewObject(FileType.REGULAR, 0644, 1000, 100, 0, HEAD_LAYOUT, null), tick()));
  }

  /** {@code n} bytes, none zero, starting from {@code first}. */
  static byte[] bytes(int n, int first) {
    byte[] b = new byte[n];
    for (int i = 0; i < n; i++) {
      b[i] = (byte) (1 + (first + i) % 255);
    }
    return b;
  }

  static byte[] concat(byte[]... parts) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    for (byte[] p : parts) {
      out.writeBytes(p);
    }
    return out.toByteArray();
  }

  @Test
  void head_writeRead_roundTripsAndLeavesAttributesAlone() {
    Attr f = mkheaded(ROOT, "f");
    assertEquals(HEAD_LAYOUT, f.layout());
    assertArrayEquals(new byte[0], store.headRead(f.handle(), 0, 100), "nothing written yet");
    byte[] data = bytes(100, 0);
    join(store.headWrite(f.handle(), 0, data));
    assertArrayEquals(data, store.headRead(f.handle(), 0, 100));
    assertArrayEquals(Arrays.copyOfRange(data, 10, 30), store.headRead(f.handle(), 10, 20));
    assertArrayEquals(Arrays.copyOfRange(data, 50, 100), store.headRead(f.handle(), 50, 4096), "short at the end");
    assertArrayEquals(new byte[0], store.headRead(f.handle(), 100, 10));
    assertArrayEquals(new byte[0], store.headRead(f.handle(), 5000, 10));
    assertArrayEquals(new byte[0], store.headRead(f.handle(), 0, 0));
    assertEquals(f, attr(f.handle()), "size and times are the writer's to record");
  }

  @Test
  void head_flush_writesTheBytesAndRecordsTheirSize_together() {
    Attr f = mkheaded(ROOT, "f");
    long t = tick();
    Attr a = join(store.headFlush(f.handle(), 0, bytes(100, 3), new SetAttr(SIZE_GROW | MTIME, 0, 0, 0, 100, 0, t - 5), t));
    assertEquals(100, a.size());
    assertEquals(t - 5, a.mtimeNs(), "the writer's mtime");
    assertArrayEquals(bytes(100, 3), store.headRead(f.handle(), 0, 4096));
    assertEquals(a, attr(f.handle()));
    // bytes past the head: refused, and the size is not recorded either
    assertEquals(Errno.EINVAL, errno(store.headFlush(f.handle(), 4090, bytes(10, 0),
        new SetAttr(SIZE_GROW | MTIME, 0, 0, 0, 4100, 0, t), tick())));
    assertEquals(a, attr(f.handle()));
    assertArrayEquals(bytes(100, 3), store.headRead(f.handle(), 0, 4096));
  }

  @Test
  void open_givesTheAttributesAndTheHeadsFirstBytes_withinTheSize() {
    Attr f = mkheaded(ROOT, "f");
    MetadataStore.Opened o = store.open(f.handle(), 4096);
    assertEquals(f, o.attr());
    assertArrayEquals(new byte[0], o.head(), "size 0: no bytes");
    long t = tick();
    Attr a = join(store.headFlush(f.handle(), 0, bytes(100, 3), new SetAttr(SIZE_GROW | MTIME, 0, 0, 0, 100, 0, t), t));
    o = store.open(f.handle(), 4096);
    assertEquals(a, o.attr());
    assertArrayEquals(bytes(100, 3), o.head());
    assertArrayEquals(bytes(10, 3), store.open(f.handle(), 10).head(), "no more than asked for");
    assertArrayEquals(new byte[0], store.open(f.handle(), 0).head(), "attributes only");
    // a size past what was written to the head: the bytes written (the rest reads as zeros)
    Attr grown = join(store.setattr(f.handle(), new SetAttr(SIZE_GROW, 0, 0, 0, 3000, 0, 0), tick()));
    o = store.open(f.handle(), 4096);
    assertEquals(grown, o.attr());
    assertArrayEquals(bytes(100, 3), o.head());
    // a size below it: only the bytes within the size
    join(store.setattr(f.handle(), new SetAttr(SIZE, 0, 0, 0, 40, 0, 0), tick()));
    assertArrayEquals(bytes(40, 3), store.open(f.handle(), 4096).head());
    // no head: a directory, a file laid out without one
    o = store.open(ROOT, 4096);
    assertEquals(attr(ROOT), o.attr());
    assertArrayEquals(new byte[0], o.head());
    Attr plain = mkfile(ROOT, "plain");
    assertEquals(plain, store.open(plain.handle(), 4096).attr());
    assertArrayEquals(new byte[0], store.open(plain.handle(), 4096).head());
    assertEquals(Errno.ENOENT, errnoOf(() -> store.open(Handle.of(0, 999_999), 10)));
    assertEquals(Errno.EINVAL, errnoOf(() -> store.open(f.handle(), -1)));
  }

  @Test
  void head_writePastTheEnd_zerosBetween_overwriteKeepsTheRest() {
    Attr f = mkheaded(ROOT, "f");
    join(store.headWrite(f.handle(), 0, bytes(3, 0)));
    join(store.headWrite(f.handle(), 10, bytes(2, 50)));
    assertArrayEquals(concat(bytes(3, 0), new byte[7], bytes(2, 50)), store.headRead(f.handle(), 0, 4096));
    join(store.headWrite(f.handle(), 1, bytes(4, 100)));
    assertArrayEquals(concat(bytes(1, 0), bytes(4, 100), new byte[5], bytes(2, 50)), store.headRead(f.handle(), 0, 4096));
    Attr g = mkheaded(ROOT, "g");
    join(store.headWrite(g.handle(), 4000, bytes(96, 7)));
    assertArrayEquals(concat(new byte[4000], bytes(96, 7)), store.headRead(g.handle(), 0, 8192));
  }

  @Test
  void head_write_mustEndWithinTheHead_EINVAL() {
    Attr f = mkheaded(ROOT, "f");
    join(store.headWrite(f.handle(), 0, bytes(4096, 0)));
    join(store.headWrite(f.handle(), 4095, bytes(1, 9)));
    join(store.headWrite(f.handle(), 4096, new byte[0]));
    assertEquals(Errno.EINVAL, errno(store.headWrite(f.handle(), 4096, bytes(1, 0))));
    assertEquals(Errno.EINVAL, errno(store.headWrite(f.handle(), 4095, bytes(2, 0))));
    assertEquals(Errno.EINVAL, errno(store.headWrite(f.handle(), 0, bytes(4097, 0))));
    assertEquals(Errno.EINVAL, errno(store.headWrite(f.handle(), Long.MAX_VALUE, bytes(1, 0))));
    assertEquals(Errno.EINVAL, errno(store.headWrite(f.handle(), -1, bytes(1, 0))));
    assertEquals(Errno.EINVAL, errno(store.headWrite(f.handle(), 0, null)));
    assertArrayEquals(concat(bytes(4095, 0), bytes(1, 9)), store.headRead(f.handle(), 0, 8192), "failed writes change nothing");
  }

  @Test
  void head_fileWithoutAHead_EINVAL() {
    Attr f = mkfile(ROOT, "f");
    assertEquals(0, f.layout().headBytes());
    assertEquals(Errno.EINVAL, errno(store.headWrite(f.handle(), 0, bytes(1, 0))));
    Attr bare = join(store.create(ROOT, "bare", new NewObject(FileType.REGULAR, 0644, 1, 1, 0, null, null), tick()));
    assertEquals(Errno.EINVAL, errno(store.headWrite(bare.handle(), 0, bytes(1, 0))));
    assertArrayEquals(new byte[0], store.headRead(f.handle(), 0, 10));
    assertArrayEquals(new byte[0], store.headRead(bare.handle(), 0, 10));
  }

  @Test
  void head_ofOtherObjects_EISDIR_EINVAL_ENOENT() {
    Attr d = mkdir(ROOT, "d");
    Attr s = join(store.create(ROOT, "s", obj(FileType.SYMLINK, 0777), tick()));
    Attr p = join(store.create(ROOT, "p", obj(FileType.FIFO, 0644), tick()));
    Handle missing = Handle.of(0, 12345);
    assertEquals(Errno.EISDIR, errno(store.headWrite(d.handle(), 0, bytes(1, 0))));
    assertEquals(Errno.EISDIR, errnoOf(() -> store.headRead(d.handle(), 0, 1)));
    assertEquals(Errno.EINVAL, errno(store.headWrite(s.handle(), 0, bytes(1, 0))));
    assertEquals(Errno.EINVAL, errnoOf(() -> store.headRead(s.handle(), 0, 1)));
    assertEquals(Errno.EINVAL, errno(store.headWrite(p.handle(), 0, bytes(1, 0))));
    assertEquals(Errno.EINVAL, errnoOf(() -> store.headRead(p.handle(), 0, 1)));
    assertEquals(Errno.ENOENT, errno(store.headWrite(missing, 0, bytes(1, 0))));
    assertEquals(Errno.ENOENT, errnoOf(() -> store.headRead(missing, 0, 1)));
    Attr f = mkheaded(ROOT, "f");
    assertEquals(Errno.EINVAL, errnoOf(() -> store.headRead(f.handle(), -1, 1)));
    assertEquals(Errno.EINVAL, errnoOf(() -> store.headRead(f.handle(), 0, -1)));
  }

  @Test
  void head_bytesAreCopies() {
    Attr f = mkheaded(ROOT, "f");
    byte[] data = bytes(10, 0);
    CompletableFuture<Void> w = store.headWrite(f.handle(), 0, data);
    Arrays.fill(data, (byte) 0); // the caller may reuse its array at once
    join(w);
    byte[] read = store.headRead(f.handle(), 0, 10);
    assertArrayEquals(bytes(10, 0), read);
    Arrays.fill(read, (byte) 0);
    assertArrayEquals(bytes(10, 0), store.headRead(f.handle(), 0, 10));
  }

  @Test
  void setattr_size_cutsTheHead() {
    Attr f = mkheaded(ROOT, "f");
    join(store.headWrite(f.handle(), 0, bytes(100, 0)));
    join(store.setattr(f.handle(), new SetAttr(SIZE, 0, 0, 0, 1 << 20, 0, 0), tick()));
    assertArrayEquals(bytes(100, 0), store.headRead(f.handle(), 0, 4096), "a longer size leaves the head");
    join(store.setattr(f.handle(), new SetAttr(SIZE, 0, 0, 0, 40, 0, 0), tick()));
    assertArrayEquals(bytes(40, 0), store.headRead(f.handle(), 0, 4096));
    join(store.setattr(f.handle(), new SetAttr(SIZE, 0, 0, 0, 200, 0, 0), tick()));
    assertArrayEquals(bytes(40, 0), store.headRead(f.handle(), 0, 4096), "cut bytes do not come back");
    join(store.setattr(f.handle(), new SetAttr(SIZE, 0, 0, 0, 0, 0, 0), tick()));
    assertArrayEquals(new byte[0], store.headRead(f.handle(), 0, 4096));
    join(store.headWrite(f.handle(), 20, bytes(5, 0)));
    assertArrayEquals(concat(new byte[20], bytes(5, 0)), store.headRead(f.handle(), 0, 4096));
  }

  @Test
  void setattr_sizeGrow_leavesTheHead() {
    Attr f = mkheaded(ROOT, "f");
    join(store.headWrite(f.handle(), 0, bytes(100, 0)));
    Attr a = join(store.setattr(f.handle(), new SetAttr(SIZE_GROW, 0, 0, 0, 10, 0, 0), tick()));
    assertEquals(10, a.size());
    assertArrayEquals(bytes(100, 0), store.headRead(f.handle(), 0, 4096));
    join(store.setattr(f.handle(), new SetAttr(MODE, 0600, 0, 0, 0, 0, 0), tick()));
    assertArrayEquals(bytes(100, 0), store.headRead(f.handle(), 0, 4096));
  }

  @Test
  void remove_lastName_takesTheHeadAlong() {
    Attr f = mkheaded(ROOT, "f");
    join(store.headWrite(f.handle(), 0, bytes(100, 0)));
    join(store.link(f.handle(), ROOT, "g", tick()));
    join(store.remove(ROOT, "f", false, tick()));
    assertArrayEquals(bytes(100, 0), store.headRead(f.handle(), 0, 4096), "a name is left");
    join(store.remove(ROOT, "g", false, tick()));
    assertEquals(Errno.ENOENT, errnoOf(() -> store.headRead(f.handle(), 0, 1)));
    assertEquals(0, join(store.fsck(false, tick())).found(), "no head left behind");
    Attr again = mkheaded(ROOT, "f");
    assertArrayEquals(new byte[0], store.headRead(again.handle(), 0, 4096));
  }

  @Test
  void rename_overAFile_takesItsHeadAlong() {
    Attr victim = mkheaded(ROOT, "victim");
    join(store.headWrite(victim.handle(), 0, bytes(100, 0)));
    Attr moved = mkheaded(ROOT, "new");
    join(store.headWrite(moved.handle(), 0, bytes(5, 200)));
    join(store.rename(ROOT, "new", ROOT, "victim", 0, tick()));
    assertEquals(Errno.ENOENT, errnoOf(() -> store.headRead(victim.handle(), 0, 1)));
    assertEquals(0, join(store.fsck(false, tick())).found(), "no head left behind");
    assertArrayEquals(bytes(5, 200), store.headRead(store.lookup(ROOT, "victim").handle(), 0, 4096));
  }

  // ---- the datafile removal queue -------------------------------------------------------------

  @Test
  void remove_lastNameOfAFile_queuesItsDatafilesUntilReaped() {
    Attr f = join(store.create(ROOT, "f", new NewObject(FileType.REGULAR, 0644, 1, 1, 0, LAYOUT, null), tick()));
    join(store.link(f.handle(), ROOT, "g", tick()));
    join(store.remove(ROOT, "f", false, tick()));
    assertEquals(List.of(), store.doomed(10), "a file with a name left keeps its datafiles");
    join(store.remove(ROOT, "g", false, tick()));
    assertEquals(List.of(new MetadataStore.Doomed(f.handle(), LAYOUT.datafiles())), store.doomed(10));
    join(store.reaped(List.of(f.handle())));
    assertEquals(List.of(), store.doomed(10));
  }

  @Test
  void rename_overTheLastNameOfAFile_queuesItsDatafiles() {
    Attr victim = join(store.create(ROOT, "victim", new NewObject(FileType.REGULAR, 0644, 1, 1, 0, LAYOUT, null), tick()));
    join(store.create(ROOT, "new", new NewObject(FileType.REGULAR, 0644, 1, 1, 0, null, null), tick()));
    join(store.rename(ROOT, "new", ROOT, "victim", 0, tick()));
    assertEquals(List.of(new MetadataStore.Doomed(victim.handle(), LAYOUT.datafiles())), store.doomed(10));
  }

  @Test
  void remove_ofAFailedName_queuesNothing() {
    assertThrows(java.util.concurrent.CompletionException.class, () -> join(store.remove(ROOT, "nothing", false, tick())));
    join(store.create(ROOT, "d", new NewObject(FileType.DIRECTORY, 0755, 1, 1, 0, null, null), tick()));
    join(store.remove(ROOT, "d", true, tick()));
    assertEquals(List.of(), store.doomed(10), "directories have no datafiles");
  }

  // ---- reserved handles and batches of creates (directory leases) -----------------------------

  static MetadataStore.BatchEntry entry(String name, Handle h, long offset, byte[] head, SetAttr change) {
    return new MetadataStore.BatchEntry(name, h, new NewObject(FileType.REGULAR, 0640, 1000, 100, 0, HEAD_LAYOUT, null),
        offset, head, change);
  }

  static MetadataStore.BatchEntry entry(String name, Handle h) {
    return entry(name, h, 0, new byte[0], null);
  }

  @Test
  void reserveHandles_handsOutUnusedHandles_andReadsTheDirectorysCtime() {
    Attr d = mkdir(ROOT, "d");
    Attr before = mkfile(d.handle(), "before");
    MetadataStore.Reservation r = join(store.reserveHandles(d.handle(), 3));
    assertEquals(3, r.count());
    assertEquals(attr(d.handle()).ctimeNs(), r.dirCtimeNs(), "the ctime after the create before it");
    assertTrue(r.first().local() > before.handle().local());
    Set<Handle> reserved = Set.of(r.handle(0), r.handle(1), r.handle(2));
    assertEquals(3, reserved.size());
    for (Handle h : reserved) {
      assertEquals(Errno.ENOENT, errnoOf(() -> store.getattr(h)), "reserved, no object yet");
    }
    Attr after = mkfile(d.handle(), "after");
    assertFalse(reserved.contains(after.handle()), "a create never gets a reserved handle");
    assertTrue(after.handle().local() > r.handle(2).local());
    assertEquals(new Counts(4, 2), store.counts(), "reserving creates no object");
  }

  @Test
  void reserveHandles_errors() {
    Attr f = mkfile(ROOT, "f");
    assertEquals(Errno.ENOTDIR, errno(store.reserveHandles(f.handle(), 1)));
    assertEquals(Errno.ENOENT, errno(store.reserveHandles(Handle.of(0, 999_999), 1)));
    assertEquals(Errno.EINVAL, errno(store.reserveHandles(ROOT, 0)));
  }

  @Test
  void createBatch_createsWithTheReservedHandles_headsAndSizes() {
    Attr d = mkdir(ROOT, "d");
    MetadataStore.Reservation r = join(store.reserveHandles(d.handle(), 3));
    long t = tick();
    SetAttr closed = new SetAttr(SIZE_GROW | MTIME, 0, 0, 0, 5, 0, t - 7);
    List<MetadataStore.Created> out = join(store.createBatch(d.handle(), List.of(
        entry("a", r.handle(0), 0, bytes(5, 1), closed),
        entry("b", r.handle(1)),
        entry("c", r.handle(2), 10, bytes(3, 9), null)), t));
    assertEquals(3, out.size());
    out.forEach(c -> assertNull(c.errno()));
    Attr a = out.get(0).entry().attr();
    assertEquals(r.handle(0), a.handle());
    assertEquals(a, store.lookup(d.handle(), "a"));
    assertEquals(5, a.size());
    assertEquals(t - 7, a.mtimeNs(), "the close's mtime");
    assertEquals(t, a.ctimeNs());
    assertEquals(0640, a.mode());
    assertEquals(HEAD_LAYOUT, a.layout());
    assertArrayEquals(bytes(5, 1), store.headRead(a.handle(), 0, 4096));
    Attr b = store.lookup(d.handle(), "b");
    assertEquals(r.handle(1), b.handle());
    assertEquals(0, b.size(), "no record: only created");
    assertArrayEquals(concat(new byte[10], bytes(3, 9)), store.headRead(r.handle(2), 0, 4096),
        "head bytes without a record are written; the size is the writer's to record");
    // every create stamps the directory, each with a ctime of its own, chained by parentWasNs
    assertEquals(d.ctimeNs(), out.get(0).entry().parentWasNs());
    assertEquals(t, out.get(1).entry().parentWasNs());
    assertEquals(t + 1, out.get(2).entry().parentWasNs());
    for (int i = 0; i < 3; i++) {
      assertEquals(out.get(i).entry().attr().ctimeNs(), i < 2 ? out.get(i + 1).entry().parentWasNs() : attr(d.handle()).ctimeNs(),
          "a file's ctime is its directory's after its entry: the holder follows the chain");
    }
    Attr dir = attr(d.handle());
    assertEquals(t + 2, dir.mtimeNs(), "each file with a nanosecond of its own, the directory with the last");
    assertEquals(t + 2, dir.ctimeNs());
    assertEquals(List.of("a", "b", "c"), names(d.handle()));
    assertEquals(new Counts(5, 2), store.counts());
    assertEquals(0, join(store.fsck(false, tick())).found());
  }

  @Test
  void createBatch_aFailingEntryChangesNothing_theOthersApply() {
    Attr d = mkdir(ROOT, "d");
    Attr taken = mkfile(d.handle(), "taken");
    MetadataStore.Reservation r = join(store.reserveHandles(d.handle(), 5));
    Handle beyond = Handle.of(0, r.handle(4).local() + 1000);
    SetAttr bad = new SetAttr(1 << 20, 0, 0, 0, 0, 0, 0);
    long t = tick();
    List<MetadataStore.Created> out = join(store.createBatch(d.handle(), List.of(
        entry("taken", r.handle(0), 0, bytes(5, 1), new SetAttr(SIZE_GROW, 0, 0, 0, 5, 0, 0)),
        entry("past-head", r.handle(1), 4090, bytes(10, 1), new SetAttr(SIZE_GROW, 0, 0, 0, 4100, 0, 0)),
        entry("bad-change", r.handle(2), 0, bytes(1, 1), bad),
        entry("not-reserved", beyond),
        entry("in-use", taken.handle()),
        entry("fine", r.handle(3), 0, bytes(2, 1), new SetAttr(SIZE_GROW, 0, 0, 0, 2, 0, 0))), t));
    assertEquals(Errno.EEXIST, out.get(0).errno());
    assertEquals(Errno.EINVAL, out.get(1).errno());
    assertEquals(Errno.EINVAL, out.get(2).errno());
    assertEquals(Errno.EINVAL, out.get(3).errno());
    assertEquals(Errno.EINVAL, out.get(4).errno());
    out.subList(0, 5).forEach(c -> assertNull(c.entry()));
    assertEquals(r.handle(3), out.get(5).entry().attr().handle());
    assertEquals(2, store.lookup(d.handle(), "fine").size());
    assertEquals(List.of("fine", "taken"), names(d.handle()), "failed entries made no names");
    assertEquals(0, attr(taken.handle()).size(), "the existing file is untouched");
    for (int i = 0; i < 3; i++) {
      Handle h = r.handle(i);
      assertEquals(Errno.ENOENT, errnoOf(() -> store.getattr(h)), "a failed entry made no object");
    }
    assertEquals(Errno.ENOENT, errnoOf(() -> store.getattr(beyond)));
    assertEquals(new Counts(4, 2), store.counts());
    assertEquals(0, join(store.fsck(false, tick())).found(), "no head, no entry left behind");
    // the handles of failed entries are still free: a later batch uses them
    List<MetadataStore.Created> again = join(store.createBatch(d.handle(), List.of(
        entry("x", r.handle(0)), entry("y", r.handle(1)), entry("fine", r.handle(2)), entry("z", r.handle(3))), tick()));
    assertEquals(r.handle(0), again.get(0).entry().attr().handle());
    assertEquals(r.handle(1), again.get(1).entry().attr().handle());
    assertEquals(Errno.EEXIST, again.get(2).errno());
    assertEquals(Errno.EINVAL, again.get(3).errno(), "a handle in use since");
  }

  static MetadataStore.BatchEntry dirEntry(String name, Handle h) {
    return new MetadataStore.BatchEntry(name, h, new NewObject(FileType.DIRECTORY, 0750, 1000, 100, 0, null, null),
        0, new byte[0], null);
  }

  @Test
  void createBatch_makesDirectories_linkedAndCounted_withNoLayoutHeadOrChange() {
    Attr d = mkdir(ROOT, "d");
    MetadataStore.Reservation r = join(store.reserveHandles(d.handle(), 6));
    long t = tick();
    List<MetadataStore.Created> out = join(store.createBatch(d.handle(), List.of(
        dirEntry("sub", r.handle(0)),
        entry("file", r.handle(1)),
        dirEntry("sub", r.handle(2)),
        new MetadataStore.BatchEntry("with-layout", r.handle(3),
            new NewObject(FileType.DIRECTORY, 0750, 1000, 100, 0, HEAD_LAYOUT, null), 0, new byte[0], null),
        new MetadataStore.BatchEntry("with-head", r.handle(4),
            new NewObject(FileType.DIRECTORY, 0750, 1000, 100, 0, null, null), 0, bytes(3, 1), null),
        new MetadataStore.BatchEntry("with-change", r.handle(5),
            new NewObject(FileType.DIRECTORY, 0750, 1000, 100, 0, null, null), 0, new byte[0],
            new SetAttr(MTIME, 0, 0, 0, 0, 0, t - 5))), t));
    Attr sub = out.get(0).entry().attr();
    assertEquals(r.handle(0), sub.handle());
    assertTrue(sub.isDir());
    assertEquals(2, sub.nlink());
    assertEquals(0750, sub.mode());
    assertNull(sub.layout());
    assertEquals(sub, store.lookup(d.handle(), "sub"));
    assertEquals(List.of(), names(sub.handle()), "empty");
    assertNull(out.get(1).errno());
    assertEquals(Errno.EEXIST, out.get(2).errno());
    for (int i = 3; i < 6; i++) {
      assertEquals(Errno.EINVAL, out.get(i).errno(), "a directory takes a handle only: " + i);
    }
    Attr dir = attr(d.handle());
    assertEquals(3, dir.nlink(), "the new directory's .. links its parent");
    assertEquals(out.get(1).entry().attr().ctimeNs(), dir.ctimeNs());
    assertEquals(sub.ctimeNs(), out.get(1).entry().parentWasNs(), "chained as files are");
    assertEquals(new Counts(4, 3), store.counts(), "a directory more");
    assertEquals(List.of("file", "sub"), names(d.handle()));
    // it is a directory like any other
    Attr inner = mkfile(sub.handle(), "inner");
    assertEquals(inner, store.lookup(sub.handle(), "inner"));
    join(store.remove(sub.handle(), "inner", false, tick()));
    join(store.remove(d.handle(), "sub", true, tick()));
    assertEquals(2, attr(d.handle()).nlink());
    assertEquals(0, join(store.fsck(false, tick())).found());
  }

  @Test
  void createBatch_inAMissingOrNonDirectory_failsEveryEntry() {
    Attr f = mkfile(ROOT, "f");
    MetadataStore.Reservation r = join(store.reserveHandles(ROOT, 1));
    List<MetadataStore.Created> out = join(store.createBatch(f.handle(), List.of(entry("a", r.handle(0))), tick()));
    assertEquals(Errno.ENOTDIR, out.get(0).errno());
    out = join(store.createBatch(Handle.of(0, 999_999), List.of(entry("a", r.handle(0))), tick()));
    assertEquals(Errno.ENOENT, out.get(0).errno());
    assertEquals(new Counts(2, 1), store.counts());
  }

  @Test
  void createBatch_headsAreCopies() {
    MetadataStore.Reservation r = join(store.reserveHandles(ROOT, 1));
    byte[] head = bytes(4, 0);
    CompletableFuture<List<MetadataStore.Created>> f =
        store.createBatch(ROOT, List.of(entry("a", r.handle(0), 0, head, null)), tick());
    head[0] = 0;
    join(f);
    assertArrayEquals(bytes(4, 0), store.headRead(r.handle(0), 0, 10));
  }
}
