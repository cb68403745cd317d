package org.flowfs.meta;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.flowfs.common.Attr;
import org.flowfs.common.Errno;
import org.flowfs.common.FileType;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.wire.MetaOp.Dirent;
import org.flowfs.common.wire.MetaOp.RenameReq;
import org.flowfs.common.wire.MetaOp.SetattrReq;
import org.flowfs.common.wire.MetaOp.SetxattrReq;
import org.flowfs.meta.MetadataStore.Counts;
import org.flowfs.meta.MetadataStore.NewObject;
import org.flowfs.meta.MetadataStore.SetAttr;

/**
 * Runs seeded random operation sequences against a store and against a plain model of a
 * namespace written here from the POSIX rules, and compares every errno and, after every
 * operation, the whole tree: names, handles, types, sizes, xattr names, counts, and link counts
 * the model derives from the tree itself (a file's names; a directory's 2 + subdirectories).
 *
 * <p>Few names and few directories, so collisions (EEXIST, ENOTEMPTY, replacing renames, renames
 * into a subtree) are frequent.
 */
final class NamespaceModelCheck {
  private static final String[] NAMES = {"a", "b", "c", "d", "e"};

  private final MetadataStore store;
  private final Random random;
  private final long seed;
  private final Map<Handle, Node> nodes = new HashMap<>();
  private final List<Handle> gone = new ArrayList<>();
  private long clock = 1_000_000;
  private int step;
  private String lastOp = "";

  /** One object of the model. */
  private static final class Node {
    final Handle handle;
    final FileType type;
    final TreeMap<String, Handle> children = new TreeMap<>();
    final TreeSet<String> xattrs = new TreeSet<>();
    Handle parent;
    long size;

    Node(Handle handle, FileType type) {
      this.handle = handle;
      this.type = type;
    }

    boolean isDir() {
      return type == FileType.DIRECTORY;
    }
  }

  NamespaceModelCheck(MetadataStore store, long seed) {
    this.store = store;
    this.seed = seed;
    this.random = new Random(seed);
    Node root = new Node(Handle.ROOT, FileType.DIRECTORY);
    root.parent = Handle.ROOT;
    nodes.put(Handle.ROOT, root);
  }

  void run(int operations) {
    for (step = 0; step < operations; step++) {
      int r = random.nextInt(100);
      if (r < 18) {
        create(FileType.REGULAR);
      } else if (r < 32) {
        create(FileType.DIRECTORY);
      } else if (r < 36) {
        create(random.nextBoolean() ? FileType.SYMLINK : FileType.FIFO);
      } else if (r < 46) {
        link();
      } else if (r < 64) {
        remove();
      } else if (r < 84) {
        rename();
      } else if (r < 88) {
        growSize();
      } else if (r < 93) {
        setxattr();
      } else if (r < 96) {
        removexattr();
      } else {
        lookup();
      }
      checkTree();
    }
  }

  // ---- operations: the model's rules and the comparison ---------------------------------------

  private void create(FileType type) {
    Handle parent = pickDir();
    String name = pickName();
    lastOp = "create " + type + " " + parent + "/" + name;
    Errno expected = dirErrno(parent);
    if (expected == Errno.OK && dir(parent).children.containsKey(name)) {
      expected = Errno.EEXIST;
    }
    NewObject o = new NewObject(type, 0644, 1, 1, 0, null, type == FileType.SYMLINK ? "t" : null);
    Attr a = compare(expected, () -> store.create(parent, name, o, tick()));
    if (a != null) {
      Node n = new Node(a.handle(), type);
      n.parent = parent;
      n.size = type == FileType.SYMLINK ? 1 : 0;
      nodes.put(a.handle(), n);
      dir(parent).children.put(name, a.handle());
    }
  }

  private void link() {
    Handle target = pickAny();
    Handle parent = pickDir();
    String name = pickName();
    lastOp = "link " + target + " " + parent + "/" + name;
    Errno expected = nodes.containsKey(target) ? dirErrno(parent) : Errno.ENOENT;
    if (expected == Errno.OK && dir(parent).children.containsKey(name)) {
      expected = Errno.EEXIST;
    }
    if (expected == Errno.OK && nodes.get(target).isDir()) {
      expected = Errno.EPERM;
    }
    if (compare(expected, () -> store.link(target, parent, name, tick())) != null) {
      dir(parent).children.put(name, target);
    }
  }

  private void remove() {
    Handle parent = pickDir();
    String name = pickName();
    boolean directory = random.nextBoolean();
    lastOp = (directory ? "rmdir " : "unlink ") + parent + "/" + name;
    Errno expected = dirErrno(parent);
    Node child = null;
    if (expected == Errno.OK) {
      Handle h = dir(parent).children.get(name);
      child = h == null ? null : nodes.get(h);
      if (child == null) {
        expected = Errno.ENOENT;
      } else if (directory && !child.isDir()) {
        expected = Errno.ENOTDIR;
      } else if (!directory && child.isDir()) {
        expected = Errno.EISDIR;
      } else if (child.isDir() && !child.children.isEmpty()) {
        expected = Errno.ENOTEMPTY;
      }
    }
    MetadataStore.Removed r = compare(expected, () -> store.remove(parent, name, directory, tick()));
    if (r != null) {
      dir(parent).children.remove(name);
      assertEquals(forget(child), r.gone(), this::where);
      assertEquals(linkCount(child), r.attr().nlink(), this::where);
    }
  }

  private void rename() {
    Handle sp = pickDir();
    Handle dp = random.nextInt(3) == 0 ? sp : pickDir();
    String sn = pickName();
    String dn = pickName();
    int flags = random.nextInt(6) == 0 ? RenameReq.NOREPLACE : 0;
    lastOp = "rename " + sp + "/" + sn + " " + dp + "/" + dn + " flags " + flags;
    Errno expected = dirErrno(sp);
    if (expected == Errno.OK) {
      expected = dirErrno(dp);
    }
    Node src = null;
    Node dst = null;
    boolean noop = false;
    if (expected == Errno.OK) {
      Handle s = dir(sp).children.get(sn);
      Handle d = dir(dp).children.get(dn);
      src = s == null ? null : nodes.get(s);
      dst = d == null ? null : nodes.get(d);
      if (src == null) {
        expected = Errno.ENOENT;
      } else if (dst != null && flags == RenameReq.NOREPLACE) {
        expected = Errno.EEXIST;
      } else if (src.isDir() && !sp.equals(dp) && isWithin(dp, src.handle)) {
        expected = Errno.EINVAL;
      } else if (dst == src) {
        noop = true;
      } else if (dst != null && src.isDir() && !dst.isDir()) {
        expected = Errno.ENOTDIR;
      } else if (dst != null && !src.isDir() && dst.isDir()) {
        expected = Errno.EISDIR;
      } else if (dst != null && dst.isDir() && !dst.children.isEmpty()) {
        expected = Errno.ENOTEMPTY;
      }
    }
    MetadataStore.Renamed r = compare(expected, () -> store.rename(sp, sn, dp, dn, flags, tick()));
    if (r == null || noop) {
      return;
    }
    assertEquals(src.handle, r.moved().handle(), this::where);
    dir(sp).children.remove(sn);
    dir(dp).children.put(dn, src.handle);
    if (src.isDir()) {
      src.parent = dp;
    }
    if (dst == null) {
      assertEquals(null, r.replaced(), this::where);
    } else {
      assertEquals(dst.handle, r.replaced().handle(), this::where);
      assertEquals(forget(dst), r.replacedGone(), this::where);
    }
  }

  private void growSize() {
    Handle h = pickAny();
    long size = random.nextInt(1000);
    lastOp = "grow " + h + " to " + size;
    Node n = nodes.get(h);
    Errno expected = n == null ? Errno.ENOENT : n.isDir() ? Errno.EISDIR
        : n.type != FileType.REGULAR ? Errno.EINVAL : Errno.OK;
    Attr a = compare(expected, () -> store.setattr(h, new SetAttr(SetattrReq.SIZE_GROW, 0, 0, 0, size, 0, 0), tick()));
    if (a != null) {
      n.size = Math.max(n.size, size);
      assertEquals(n.size, a.size(), this::where);
    }
  }

  private void setxattr() {
    Handle h = pickAny();
    String name = "user." + pickName();
    int flags = new int[] {0, SetxattrReq.CREATE, SetxattrReq.REPLACE}[random.nextInt(3)];
    lastOp = "setxattr " + h + " " + name + " flags " + flags;
    Node n = nodes.get(h);
    Errno expected = n == null ? Errno.ENOENT
        : flags == SetxattrReq.CREATE && n.xattrs.contains(name) ? Errno.EEXIST
        : flags == SetxattrReq.REPLACE && !n.xattrs.contains(name) ? Errno.ENODATA : Errno.OK;
    byte[] value = {(byte) step};
    if (compare(expected, () -> store.setxattr(h, name, value, flags, tick()).thenApply(v -> "ok")) != null) {
      n.xattrs.add(name);
    }
  }

  private void removexattr() {
    Handle h = pickAny();
    String name = "user." + pickName();
    lastOp = "removexattr " + h + " " + name;
    Node n = nodes.get(h);
    Errno expected = n == null ? Errno.ENOENT : !n.xattrs.contains(name) ? Errno.ENODATA : Errno.OK;
    if (compare(expected, () -> store.removexattr(h, name, tick()).thenApply(v -> "ok")) != null) {
      n.xattrs.remove(name);
    }
  }

  private void lookup() {
    Handle parent = pickDir();
    String name = pickName();
    lastOp = "lookup " + parent + "/" + name;
    Errno expected = dirErrno(parent);
    if (expected == Errno.OK && !dir(parent).children.containsKey(name)) {
      expected = Errno.ENOENT;
    }
    Attr a = compare(expected, () -> CompletableFuture.completedFuture(store.lookup(parent, name)));
    if (a != null) {
      assertEquals(dir(parent).children.get(name), a.handle(), this::where);
    }
  }

  // ---- the model's bookkeeping ----------------------------------------------------------------

  /** ENOENT, ENOTDIR or OK for a handle used as a directory. */
  private Errno dirErrno(Handle h) {
    Node n = nodes.get(h);
    return n == null ? Errno.ENOENT : n.isDir() ? Errno.OK : Errno.ENOTDIR;
  }

  private Node dir(Handle h) {
    return nodes.get(h);
  }

  /** True if {@code dir} is {@code ancestor} or below it. */
  private boolean isWithin(Handle dir, Handle ancestor) {
    Handle h = dir;
    while (true) {
      if (h.equals(ancestor)) {
        return true;
      }
      if (h.equals(Handle.ROOT)) {
        return false;
      }
      h = nodes.get(h).parent;
    }
  }

  /** The link count the tree implies. */
  private int linkCount(Node n) {
    if (n.isDir()) {
      if (!nodes.containsKey(n.handle)) {
        return 0;
      }
      return 2 + (int) n.children.values().stream().filter(c -> nodes.get(c).isDir()).count();
    }
    int links = 0;
    for (Node d : nodes.values()) {
      if (d.isDir()) {
        for (Handle c : d.children.values()) {
          links += c.equals(n.handle) ? 1 : 0;
        }
      }
    }
    return links;
  }

  /** After a name of {@code n} went: drops it from the model if that was its last; true if so. */
  private boolean forget(Node n) {
    if (n.isDir() || linkCount(n) == 0) {
      nodes.remove(n.handle);
      gone.add(n.handle);
      return true;
    }
    return false;
  }

  // ---- comparing ------------------------------------------------------------------------------

  /** Runs a store call; checks its errno against {@code expected}; the result if it succeeded. */
  private <T> T compare(Errno expected, Supplier<CompletableFuture<T>> call) {
    Errno actual;
    T result = null;
    try {
      result = call.get().get(30, TimeUnit.SECONDS);
      actual = Errno.OK;
    } catch (FsException e) {
      actual = e.errno();
    } catch (java.util.concurrent.ExecutionException e) {
      if (!(e.getCause() instanceof FsException fe)) {
        throw new AssertionError(where(), e.getCause());
      }
      actual = fe.errno();
    } catch (CompletionException | InterruptedException | java.util.concurrent.TimeoutException e) {
      throw new AssertionError(where(), e);
    }
    assertEquals(expected, actual, this::where);
    return result;
  }

  private void checkTree() {
    int objects = 0;
    int dirs = 0;
    Map<Handle, Integer> names = new HashMap<>();
    for (Node n : nodes.values()) {
      n.children.values().forEach(c -> names.merge(c, 1, Integer::sum));
    }
    for (Node n : nodes.values()) {
      objects++;
      dirs += n.isDir() ? 1 : 0;
      Attr a = store.getattr(n.handle);
      assertEquals(n.type, a.type(), this::where);
      int nlink = n.isDir() ? linkCount(n) : names.getOrDefault(n.handle, 0);
      assertEquals(nlink, a.nlink(), () -> where() + ": nlink of " + n.handle);
      assertEquals(new ArrayList<>(n.xattrs), store.listxattr(n.handle), this::where);
      if (n.type == FileType.REGULAR) {
        assertEquals(n.size, a.size(), this::where);
      }
      if (n.isDir()) {
        List<String> listed = new ArrayList<>();
        for (Dirent d : store.readdir(n.handle, null, 100, true).entries()) {
          listed.add(d.name());
          assertEquals(n.children.get(d.name()), d.handle(), this::where);
          assertEquals(nodes.get(d.handle()).type, d.type(), this::where);
          assertEquals(d.handle(), d.attr().handle(), this::where);
        }
        assertEquals(new ArrayList<>(n.children.keySet()), listed, this::where);
        assertEquals(n.parent, store.lookup(n.handle, "..").handle(), this::where);
      }
    }
    assertEquals(new Counts(objects, dirs), store.counts(), this::where);
    if (!gone.isEmpty()) {
      Handle g = gone.get(random.nextInt(gone.size()));
      assertEquals(Errno.ENOENT, org.junit.jupiter.api.Assertions.assertThrows(FsException.class,
          () -> store.getattr(g)).errno(), this::where);
    }
  }

  private String where() {
    return "seed " + seed + " step " + step + ": " + lastOp;
  }

  // ---- picking arguments ----------------------------------------------------------------------

  private long tick() {
    return clock += 1000;
  }

  private String pickName() {
    return NAMES[random.nextInt(NAMES.length)];
  }

  /** Mostly a live directory; sometimes a file (ENOTDIR) or a removed object (ENOENT). */
  private Handle pickDir() {
    int r = random.nextInt(20);
    if (r == 0 && !gone.isEmpty()) {
      return gone.get(random.nextInt(gone.size()));
    }
    List<Handle> candidates = new ArrayList<>();
    for (Node n : nodes.values()) {
      if (n.isDir() != (r == 1)) {
        candidates.add(n.handle);
      }
    }
    if (candidates.isEmpty()) {
      return Handle.ROOT;
    }
    candidates.sort(null);
    return candidates.get(random.nextInt(candidates.size()));
  }

  /** Mostly a live object of any type; sometimes a removed one. */
  private Handle pickAny() {
    if (random.nextInt(15) == 0 && !gone.isEmpty()) {
      return gone.get(random.nextInt(gone.size()));
    }
    List<Handle> all = new ArrayList<>(nodes.keySet());
    all.sort(null);
    return all.get(random.nextInt(all.size()));
  }
}
