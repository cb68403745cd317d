package org.flowfs.meta;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.flowfs.common.Attr;
import org.flowfs.common.DistSpec;
import org.flowfs.common.FileType;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.wire.MetaOp.FsckProblem;
import org.flowfs.common.wire.MetaOp.FsckProblem.Kind;
import org.flowfs.meta.MetadataStore.FsckReport;
import org.flowfs.meta.MetadataStore.NewObject;
import org.flowfs.meta.Tables.Counter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link NamespaceCheck} over a namespace in memory whose tables the tests damage directly, the
 * ways a bug or a torn store could: each damage is found, a check alone changes nothing, a repair
 * fixes everything (a second check finds nothing), and nothing reachable is lost.
 */
class NamespaceCheckTest {
  private static final long NOW = 1_700_000_000_000_000_000L;
  private static final Layout LAYOUT = new Layout(DistSpec.of("simple_stripe", 65536), List.of(Handle.of(2, 7)), 4096);

  private final MemoryTables t = new MemoryTables();
  private final Namespace ns = new Namespace(t);

  NamespaceCheckTest() {
    ns.initRoot(NOW);
  }

  private Attr mkdir(Handle parent, String name) {
    return ns.create(parent, name, new NewObject(FileType.DIRECTORY, 0755, 1, 1, 0, null, null), NOW).attr();
  }

  private Attr file(Handle parent, String name) {
    return ns.create(parent, name, new NewObject(FileType.REGULAR, 0644, 1, 1, 0, LAYOUT, null), NOW).attr();
  }

  private static byte[] key(Handle dir, String name) {
    return Keys.of(dir.id(), name.getBytes(StandardCharsets.UTF_8));
  }

  /** Every table's content, to compare before and after. */
  private String dump() {
    StringBuilder sb = new StringBuilder();
    t.objects().forEach((k, v) -> sb.append(k).append('=').append(Arrays.toString(v)).append('\n'));
    t.entries().forEach((k, v) -> sb.append(Arrays.toString(k)).append('=').append(Arrays.toString(v)).append('\n'));
    t.xattrs().forEach((k, v) -> sb.append(Arrays.toString(k)).append('=').append(Arrays.toString(v)).append('\n'));
    t.heads().forEach((k, v) -> sb.append(k).append(':').append(Arrays.toString(v)).append('\n'));
    for (Counter c : Counter.values()) {
      sb.append(c).append('=').append(t.get(c)).append('\n');
    }
    return sb.toString();
  }

  private static Map<Kind, Integer> kinds(FsckReport r) {
    Map<Kind, Integer> m = new TreeMap<>();
    for (FsckProblem p : r.problems()) {
      m.merge(p.kind(), 1, Integer::sum);
    }
    return m;
  }

  /** Checks (nothing may change), repairs, checks again (nothing left); returns the first report. */
  private FsckReport checkRepairCheck() {
    String before = dump();
    FsckReport check = ns.fsck(false, NOW);
    assertEquals(before, dump(), "a check without repair changes nothing");
    FsckReport repair = ns.fsck(true, NOW);
    assertEquals(check.found(), repair.found());
    assertEquals(check.problems(), repair.problems(), "a check reports what a repair does");
    FsckReport after = ns.fsck(false, NOW);
    assertEquals(0, after.found(), () -> "left after the repair: " + after.problems());
    return check;
  }

  @Test
  void fsck_healthyNamespace_findsNothing() {
    Attr a = mkdir(Handle.ROOT, "a");
    Attr b = mkdir(a.handle(), "b");
    Attr f = file(b.handle(), "f");
    ns.link(f.handle(), Handle.ROOT, "f2", 0, NOW);
    ns.create(a.handle(), "s", new NewObject(FileType.SYMLINK, 0777, 1, 1, 0, null, "b/f"), NOW);
    ns.setxattr(f.handle(), "user.x", new byte[] {1}, 0, NOW);
    ns.headWrite(f.handle(), 0, new byte[] {1, 2, 3});
    ns.rename(a.handle(), "b", Handle.ROOT, "b2", 0, 0, NOW);
    ns.remove(Handle.ROOT, "f2", false, NOW);
    FsckReport r = ns.fsck(false, NOW);
    assertEquals(0, r.found(), () -> r.problems().toString());
    assertEquals(5, r.objects());
    assertEquals(4, r.entries());
  }

  @Test
  void fsck_entryOfMissingObject_removesEntryAndOrphanXattrs() {
    Attr d = mkdir(Handle.ROOT, "d");
    Attr f = file(d.handle(), "gone");
    file(d.handle(), "kept");
    ns.setxattr(f.handle(), "user.a", new byte[] {1}, 0, NOW);
    t.removeObject(f.handle().id());

    FsckReport r = checkRepairCheck();
    assertEquals(Map.of(Kind.DANGLING_ENTRY, 1, Kind.ORPHAN_XATTR, 1, Kind.COUNTER, 1), kinds(r));
    FsckProblem p = r.problems().stream().filter(x -> x.kind() == Kind.DANGLING_ENTRY).findFirst().orElseThrow();
    assertEquals("gone", p.name());
    assertEquals(d.handle(), p.parent());
    assertEquals(List.of("kept"), names(d.handle()));
    assertEquals(3, t.get(Counter.OBJECTS));
  }

  @Test
  void fsck_headsOfMissingObjects_areRemoved() {
    Attr gone = file(Handle.ROOT, "gone");
    Attr kept = file(Handle.ROOT, "kept");
    ns.headWrite(gone.handle(), 0, new byte[] {1});
    ns.headWrite(kept.handle(), 0, new byte[] {2});
    t.removeObject(gone.handle().id());
    t.heads().put(Handle.of(0, 999).id(), new byte[] {3}); // never an object

    FsckReport r = checkRepairCheck();
    assertEquals(Map.of(Kind.DANGLING_ENTRY, 1, Kind.ORPHAN_HEAD, 2, Kind.COUNTER, 1), kinds(r), r.problems().toString());
    assertEquals(List.of(gone.handle(), Handle.of(0, 999)), r.problems().stream()
        .filter(p -> p.kind() == Kind.ORPHAN_HEAD).map(FsckProblem::handle).toList());
    assertEquals(List.of(kept.handle().id()), List.copyOf(t.heads().keySet()));
    assertArrayEquals(new byte[] {2}, ns.headRead(kept.handle(), 0, 10));
  }

  @Test
  void fsck_unreadableRecordWithAHead_dropsBoth() {
    Attr f = file(Handle.ROOT, "f");
    ns.headWrite(f.handle(), 0, new byte[] {1});
    t.putObject(f.handle().id(), new byte[] {99, 1, 2});

    FsckReport r = checkRepairCheck();
    assertEquals(Map.of(Kind.BAD_OBJECT, 1, Kind.DANGLING_ENTRY, 1, Kind.ORPHAN_HEAD, 1, Kind.COUNTER, 1), kinds(r),
        r.problems().toString());
    assertTrue(t.heads().isEmpty());
  }

  @Test
  void fsck_fileWithoutName_namedInLostFound() {
    Attr f = file(Handle.ROOT, "f");
    t.entries().remove(key(Handle.ROOT, "f"));

    FsckReport r = checkRepairCheck();
    assertEquals(Map.of(Kind.UNREACHABLE, 1), kinds(r));
    Attr lf = ns.lookup(Handle.ROOT, "lost+found");
    assertTrue(lf.isDir());
    assertEquals(0700, lf.mode());
    Attr back = ns.lookup(lf.handle(), "#" + f.handle().id());
    assertEquals(f.handle(), back.handle());
    assertEquals(LAYOUT, back.layout(), "the layout (and so the data) is kept");
    assertEquals(1, back.nlink());
    assertEquals(3, ns.getattr(Handle.ROOT).nlink());
    assertEquals(3, t.get(Counter.OBJECTS));
    assertEquals(2, t.get(Counter.DIRECTORIES));
  }

  @Test
  void fsck_lostDirectoryTree_onlyItsTopIsNamed() {
    Attr top = mkdir(Handle.ROOT, "top");
    Attr sub = mkdir(top.handle(), "sub");
    file(sub.handle(), "f");
    t.entries().remove(key(Handle.ROOT, "top"));

    FsckReport r = checkRepairCheck();
    assertEquals(Map.of(Kind.UNREACHABLE, 1, Kind.NLINK, 1), kinds(r), r.problems().toString()); // the root's count
    Attr lf = ns.lookup(Handle.ROOT, "lost+found");
    Attr moved = ns.lookup(lf.handle(), "#" + top.handle().id());
    assertEquals(lf.handle(), ns.lookup(moved.handle(), "..").handle());
    assertEquals(List.of("f"), names(ns.lookup(moved.handle(), "sub").handle()));
    assertEquals(3, ns.getattr(lf.handle()).nlink());
    assertEquals(3, ns.getattr(Handle.ROOT).nlink()); // "." , ".." of lost+found, nothing else
  }

  @Test
  void fsck_directoryCycleCutOffFromRoot_isBrokenAndReconnected() {
    Attr a = mkdir(Handle.ROOT, "a");
    Attr b = mkdir(a.handle(), "b");
    t.entries().remove(key(Handle.ROOT, "a"));
    t.entries().put(key(b.handle(), "loop"), Keys.entry(a.handle().id(), FileType.DIRECTORY));

    FsckReport r = checkRepairCheck();
    assertEquals(1, kinds(r).get(Kind.UNREACHABLE));
    Attr lf = ns.lookup(Handle.ROOT, "lost+found");
    Attr back = ns.lookup(lf.handle(), "#" + a.handle().id());
    assertEquals(b.handle(), ns.lookup(back.handle(), "b").handle());
    assertEquals(List.of(), names(b.handle()), "the entry closing the cycle is gone");
  }

  @Test
  void fsck_wrongLinkCountsAndParent_areSet() {
    Attr d = mkdir(Handle.ROOT, "d");
    Attr e = mkdir(Handle.ROOT, "e");
    Attr f = file(d.handle(), "f");
    ns.link(f.handle(), e.handle(), "g", 0, NOW);
    damage(f.handle(), in -> in.nlink = 7);
    damage(d.handle(), in -> in.nlink = 5);
    damage(e.handle(), in -> in.parent = d.handle().id());

    FsckReport r = checkRepairCheck();
    assertEquals(Map.of(Kind.NLINK, 2, Kind.DIRECTORY_PARENT, 1), kinds(r));
    assertEquals(2, ns.getattr(f.handle()).nlink());
    assertEquals(2, ns.getattr(d.handle()).nlink());
    assertEquals(Handle.ROOT, ns.lookup(e.handle(), "..").handle());
  }

  @Test
  void fsck_secondNameOfDirectoryAndWrongEntryType_areFixed() {
    Attr d = mkdir(Handle.ROOT, "d");
    Attr e = mkdir(Handle.ROOT, "e");
    file(Handle.ROOT, "f");
    t.entries().put(key(e.handle(), "alias"), Keys.entry(d.handle().id(), FileType.DIRECTORY));
    t.entries().put(key(Handle.ROOT, "f"), Keys.entry(ns.lookup(Handle.ROOT, "f").handle().id(), FileType.FIFO));

    FsckReport r = checkRepairCheck();
    assertEquals(Map.of(Kind.EXTRA_DIRECTORY_NAME, 1, Kind.ENTRY_TYPE, 1), kinds(r));
    assertEquals(List.of(), names(e.handle()));
    assertEquals(FileType.REGULAR, ns.readdir(Handle.ROOT, null, 10, false).entries().stream()
        .filter(x -> x.name().equals("f")).findFirst().orElseThrow().type());
  }

  @Test
  void fsck_entryInMissingDirectoryAndUnreadableRecord_areDropped() {
    Attr d = mkdir(Handle.ROOT, "d");
    Attr f = file(d.handle(), "f");
    t.putObject(d.handle().id(), new byte[] {99, 1, 2});

    FsckReport r = checkRepairCheck();
    // d's record goes; its entry in the root and f's entry in d dangle; f is lost
    assertEquals(Map.of(Kind.BAD_OBJECT, 1, Kind.DANGLING_ENTRY, 2, Kind.UNREACHABLE, 1, Kind.NLINK, 1, Kind.COUNTER, 2),
        kinds(r), r.problems().toString());
    Attr lf = ns.lookup(Handle.ROOT, "lost+found");
    assertEquals(f.handle(), ns.lookup(lf.handle(), "#" + f.handle().id()).handle());
  }

  @Test
  void fsck_existingLostFound_isUsed() {
    Attr lf = mkdir(Handle.ROOT, "lost+found");
    Attr f = file(Handle.ROOT, "f");
    t.entries().remove(key(Handle.ROOT, "f"));
    checkRepairCheck();
    assertEquals(f.handle(), ns.lookup(lf.handle(), "#" + f.handle().id()).handle());
    assertEquals(List.of("lost+found"), names(Handle.ROOT));
  }

  @Test
  void fsck_throughTheStores_checksAndRepairs(@TempDir Path dir) throws Exception {
    for (MetadataStore s : List.of(new MemoryMetadataStore(), new MapDbMetadataStore(dir, 8))) {
      try (s) {
        Attr d = s.create(Handle.ROOT, "d", new NewObject(FileType.DIRECTORY, 0755, 0, 0, 0, null, null), NOW).join();
        s.create(d.handle(), "f", new NewObject(FileType.REGULAR, 0644, 0, 0, 0, LAYOUT, null), NOW).join();
        assertEquals(0, s.fsck(false, NOW).join().found());
        assertEquals(0, s.fsck(true, NOW).join().found());
        List<Attr> all = new ArrayList<>();
        for (long after = 0; ; ) {
          List<Attr> page = s.objectsAfter(after, 2);
          all.addAll(page);
          if (page.size() < 2) {
            break;
          }
          after = page.get(1).handle().id();
        }
        assertEquals(3, all.size());
      }
    }
  }

  private List<String> names(Handle dir) {
    return ns.readdir(dir, null, 100, false).entries().stream().map(e -> e.name()).toList();
  }

  private void damage(Handle h, java.util.function.Consumer<Inode> change) {
    Inode in = InodeCodec.decode(h.id(), t.object(h.id()));
    change.accept(in);
    t.putObject(h.id(), InodeCodec.encode(in));
  }
}
