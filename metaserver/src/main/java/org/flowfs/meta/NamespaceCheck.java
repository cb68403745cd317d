package org.flowfs.meta;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeSet;
import org.flowfs.common.Attr;
import org.flowfs.common.FileType;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.wire.MetaOp;
import org.flowfs.common.wire.MetaOp.FsckProblem;
import org.flowfs.common.wire.MetaOp.FsckProblem.Kind;
import org.flowfs.meta.MetadataStore.FsckReport;
import org.flowfs.meta.MetadataStore.NewObject;
import org.flowfs.meta.Tables.Counter;

/**
 * The namespace half of {@code flowfs fsck}: one pass over the tables that finds what the
 * namespace rules ({@link Namespace}) never produce, plans the repair of all of it, and with
 * {@code repair} applies the plan.
 *
 * <ul>
 *   <li>Object records that cannot be decoded are dropped.
 *   <li>Directory entries naming a missing object, or sitting in a missing or non-directory parent,
 *       are removed; an entry recording the wrong type is rewritten.
 *   <li>A directory has one name: further names are removed (the one its ".." agrees with stays).
 *   <li>Objects no path from the root reaches get a name {@code #<handle>} in {@code /lost+found}
 *       (created if missing): first those that no entry names, then what is left of cycles.
 *   <li>Link counts become the number of names (a directory's: 2 plus its subdirectories), each
 *       directory's ".." the directory holding it, the object counters the objects there are.
 *   <li>Extended attributes and heads of missing objects are removed.
 * </ul>
 *
 * <p>The plan is made before anything changes, so a check without repair reports exactly what a
 * repair would do. Memory: a few arrays with one slot per object, and the entries to change.
 *
 * <p>Not thread safe: the store runs it alone, under the read side of its lock for a check and as
 * one mutation (write side, one commit) for a repair.
 */
final class NamespaceCheck {
  private static final String LOST_FOUND = "lost+found";
  private static final int NONE = -1;
  /** Stands for the /lost+found a repair will create. */
  private static final int NEW_LOST_FOUND = -2;

  private final Tables t;
  private final Namespace ns;
  private final List<FsckProblem> listed = new ArrayList<>();
  private long found;
  private long entriesChecked;

  // the objects that decode, in handle order, and what the check learns of each
  private int n;
  private long[] handles = new long[1024];
  private FileType[] types = new FileType[1024];
  private int[] nlinks = new int[1024];
  private long[] parents = new long[1024];
  private int[] names;        // non-directories: names they keep
  private int[] holder;       // directories: index of the directory keeping their one name, or NONE
  private int[] subdirs;      // directories: subdirectories they keep
  private boolean[] reached;
  private int[] planDelta;    // directories: subdirectories the planned reconnects add or take
  private boolean[] moved;    // named in lost+found by the plan

  private final List<Long> badObjects = new ArrayList<>();
  private final TreeSet<byte[]> removeEntries = new TreeSet<>(Arrays::compareUnsigned);
  private final List<byte[][]> rewriteEntries = new ArrayList<>(); // {key, value}
  private final List<byte[]> removeXattrs = new ArrayList<>();
  private final List<Long> removeHeads = new ArrayList<>();
  /** Objects to name in lost+found, in order, and the names. */
  private final List<Integer> reconnect = new ArrayList<>();
  private final List<String> reconnectNames = new ArrayList<>();
  private int lostFound = NONE;
  private String lostFoundName;
  private int newLostFoundSubdirs;

  NamespaceCheck(Tables tables, Namespace namespace) {
    this.t = tables;
    this.ns = namespace;
  }

  /** Checks; with {@code repair}, applies the plan (the caller commits). */
  FsckReport run(boolean repair, long nowNs) {
    loadObjects();
    checkEntries();
    walkFromRoot();
    planReconnects();
    checkCounts();
    checkXattrs();
    checkHeads();
    if (repair && found > 0) {
      try {
        apply(nowNs);
      } catch (FsException e) {
        // changes may have started: not an outcome to commit, a failure to roll back
        throw new IllegalStateException("fsck repair failed: " + e.getMessage(), e);
      }
    }
    return new FsckReport(n, entriesChecked, found, List.copyOf(listed));
  }

  private void problem(Kind kind, long handle, long parent, String name, String detail) {
    found++;
    if (listed.size() < MetaOp.MAX_FSCK_PROBLEMS) {
      listed.add(new FsckProblem(kind, handle == 0 ? null : new Handle(handle), parent == 0 ? null : new Handle(parent),
          name, detail));
    }
  }

  // ---- finding --------------------------------------------------------------------------------

  private void loadObjects() {
    for (Map.Entry<Long, byte[]> e : t.objects().entrySet()) {
      long h = e.getKey();
      Inode in;
      try {
        in = InodeCodec.decode(h, e.getValue());
      } catch (RuntimeException bad) {
        badObjects.add(h);
        problem(Kind.BAD_OBJECT, h, 0, null, "record cannot be read (" + bad.getMessage() + "): drop it");
        continue;
      }
      if (n == handles.length) {
        int cap = n * 2;
        handles = Arrays.copyOf(handles, cap);
        types = Arrays.copyOf(types, cap);
        nlinks = Arrays.copyOf(nlinks, cap);
        parents = Arrays.copyOf(parents, cap);
      }
      handles[n] = h;
      types[n] = in.type;
      nlinks[n] = in.nlink;
      parents[n] = in.parent;
      n++;
    }
    names = new int[n];
    holder = new int[n];
    Arrays.fill(holder, NONE);
    subdirs = new int[n];
    reached = new boolean[n];
    planDelta = new int[n];
    moved = new boolean[n];
  }

  /** The index of object {@code h}, or NONE. */
  private int index(long h) {
    int i = Arrays.binarySearch(handles, 0, n, h);
    return i >= 0 ? i : NONE;
  }

  private static long keyHandle(byte[] key) {
    return ByteBuffer.wrap(key).getLong(0);
  }

  /** The type as a word in a sentence. */
  private static String lower(FileType type) {
    return switch (type) {
      case REGULAR -> "file";
      case SYMLINK -> "symlink";
      default -> type.name().toLowerCase(Locale.ROOT).replace('_', ' ');
    };
  }

  private boolean isDir(int i) {
    return types[i] == FileType.DIRECTORY;
  }

  private void checkEntries() {
    List<long[]> dirNames = new ArrayList<>(); // {child index, parent index}, same order as dirKeys
    List<byte[]> dirKeys = new ArrayList<>();
    for (Map.Entry<byte[], byte[]> e : t.entries().entrySet()) {
      entriesChecked++;
      byte[] key = e.getKey();
      long parent = keyHandle(key);
      String name = Keys.name(key);
      if (e.getValue().length != Keys.entry(1, FileType.REGULAR).length) {
        removeEntries.add(key);
        problem(Kind.DANGLING_ENTRY, 0, parent, name, "the entry cannot be read: remove it");
        continue;
      }
      long child = Keys.entryHandle(e.getValue());
      int p = index(parent);
      int c = index(child);
      if (p == NONE || !isDir(p)) {
        removeEntries.add(key);
        problem(Kind.DANGLING_ENTRY, child, parent, name, (p == NONE ? "the directory holding it does not exist"
            : "it sits in a " + lower(types[p])) + ": remove the entry");
        continue;
      }
      if (c == NONE) {
        removeEntries.add(key);
        problem(Kind.DANGLING_ENTRY, child, parent, name, "names object " + new Handle(child)
            + ", which does not exist: remove the entry");
        continue;
      }
      FileType recorded;
      try {
        recorded = Keys.entryType(e.getValue());
      } catch (RuntimeException bad) {
        recorded = null;
      }
      if (recorded != types[c]) {
        rewriteEntries.add(new byte[][] {key, Keys.entry(child, types[c])});
        problem(Kind.ENTRY_TYPE, child, parent, name, "records "
            + (recorded == null ? "an unknown type" : "a " + lower(recorded)) + ", the object is a " + lower(types[c])
            + ": rewrite the entry");
      }
      if (c == p || child == Handle.ROOT.id()) {
        removeEntries.add(key);
        problem(Kind.EXTRA_DIRECTORY_NAME, child, parent, name,
            (c == p ? "a directory holds itself" : "names the root") + ": remove the entry");
      } else if (isDir(c)) {
        dirNames.add(new long[] {c, p});
        dirKeys.add(key);
      } else {
        names[c]++;
      }
    }
    // a directory keeps one name: the one in the directory its ".." names, else the first
    for (int k = 0; k < dirNames.size(); k++) {
      int c = (int) dirNames.get(k)[0];
      int p = (int) dirNames.get(k)[1];
      if (holder[c] == NONE) {
        holder[c] = p;
      } else if (handles[p] == parents[c] && handles[holder[c]] != parents[c]) {
        holder[c] = p;
      }
    }
    boolean[] kept = new boolean[n];
    for (int k = 0; k < dirNames.size(); k++) {
      int c = (int) dirNames.get(k)[0];
      int p = (int) dirNames.get(k)[1];
      if (holder[c] == p && !kept[c]) {
        kept[c] = true;
        subdirs[p]++;
      } else {
        removeEntries.add(dirKeys.get(k));
        problem(Kind.EXTRA_DIRECTORY_NAME, handles[c], handles[p], Keys.name(dirKeys.get(k)),
            "a directory has one name, this is another: remove the entry");
      }
    }
  }

  /** Marks what the root reaches through kept entries. */
  private void walkFromRoot() {
    int root = index(Handle.ROOT.id());
    if (root == NONE) {
      throw new IllegalStateException("the metadata store has no root directory");
    }
    holder[root] = root;
    walk(root);
  }

  private void walk(int start) {
    ArrayDeque<Integer> todo = new ArrayDeque<>();
    reached[start] = true;
    if (isDir(start)) {
      todo.add(start);
    }
    while (!todo.isEmpty()) {
      int d = todo.poll();
      for (Map.Entry<byte[], byte[]> e : entriesOf(handles[d]).entrySet()) {
        if (removeEntries.contains(e.getKey())) {
          continue;
        }
        int c = index(Keys.entryHandle(e.getValue()));
        if (c != NONE && !reached[c]) {
          reached[c] = true;
          if (isDir(c)) {
            todo.add(c);
          }
        }
      }
    }
  }

  private NavigableMap<byte[], byte[]> entriesOf(long dir) {
    return t.entries().subMap(Keys.first(dir), false, Keys.end(dir), false);
  }

  /**
   * Names every unreachable object in lost+found: first those no entry names (the tops of lost
   * trees), then directories left (cycles: their one name is in a lost directory; it moves).
   */
  private void planReconnects() {
    boolean any = false;
    for (int i = 0; i < n; i++) {
      any |= !reached[i];
    }
    if (!any) {
      return;
    }
    findLostFound();
    for (int i = 0; i < n; i++) {
      boolean named = isDir(i) ? holder[i] != NONE : names[i] > 0;
      if (!reached[i] && !named) {
        reconnect(i, "no entry names it");
      }
    }
    for (int i = 0; i < n; i++) {
      if (!reached[i] && isDir(i)) {
        int p = holder[i];
        for (Map.Entry<byte[], byte[]> e : entriesOf(handles[p]).entrySet()) {
          if (Keys.entryHandle(e.getValue()) == handles[i] && !removeEntries.contains(e.getKey())) {
            removeEntries.add(e.getKey());
          }
        }
        subdirs[p]--;
        planDelta[p]--;
        holder[i] = NONE;
        reconnect(i, "its directory " + new Handle(handles[p]) + " is unreachable itself (a cycle)");
      }
    }
    for (int i = 0; i < n; i++) {
      if (!reached[i]) { // cannot happen: every lost directory was named above
        reconnect(i, "only unreachable directories name it");
      }
    }
  }

  /** Picks /lost+found, or the first lost+found.N, that is a reachable directory or free. */
  private void findLostFound() {
    int root = index(Handle.ROOT.id());
    for (int k = 0; ; k++) {
      String name = k == 0 ? LOST_FOUND : LOST_FOUND + "." + k;
      byte[] key = Keys.of(Handle.ROOT.id(), Keys.utf8(name));
      byte[] v = t.entries().get(key);
      if (v == null) {
        lostFound = NEW_LOST_FOUND;
        lostFoundName = name;
        return;
      }
      int i = index(Keys.entryHandle(v));
      if (i != NONE && isDir(i) && holder[i] == root && !removeEntries.contains(key)) {
        lostFound = i;
        lostFoundName = name;
        return;
      }
    }
  }

  private void reconnect(int i, String why) {
    String name = "#" + handles[i];
    if (lostFound >= 0) {
      for (int k = 1; t.entries().containsKey(Keys.of(handles[lostFound], Keys.utf8(name))); k++) {
        name = "#" + handles[i] + "." + k;
      }
    }
    reconnect.add(i);
    reconnectNames.add(name);
    moved[i] = true;
    if (isDir(i)) {
      holder[i] = lostFound;
      if (lostFound >= 0) {
        subdirs[lostFound]++;
        planDelta[lostFound]++;
      } else {
        newLostFoundSubdirs++;
      }
    } else {
      names[i]++;
    }
    problem(Kind.UNREACHABLE, handles[i], 0, null, "no path from the root reaches this " + lower(types[i])
        + " (" + why + "): name it /" + lostFoundName + "/" + name);
    walk(i);
  }

  private void checkCounts() {
    int root = index(Handle.ROOT.id());
    long dirs = 0;
    for (int i = 0; i < n; i++) {
      if (isDir(i)) {
        dirs++;
        // what the repair itself changes (lost+found, cycles cut) is no problem found
        int rootExtra = i == root && lostFound == NEW_LOST_FOUND ? 1 : 0;
        int has = 2 + subdirs[i] - planDelta[i];
        if (nlinks[i] != has) {
          problem(Kind.NLINK, handles[i], 0, null, "directory with " + (has - 2) + " subdirectories has link count "
              + nlinks[i] + ": set it to " + (2 + subdirs[i] + rootExtra));
        }
        long wantParent = holder[i] >= 0 ? handles[holder[i]] : 0;
        if (holder[i] >= 0 && !moved[i] && parents[i] != wantParent) {
          problem(Kind.DIRECTORY_PARENT, handles[i], wantParent, null, "\"..\" names " + new Handle(parents[i])
              + ", the directory holding it is " + new Handle(wantParent) + ": set \"..\"");
        }
      } else if (nlinks[i] != names[i]) {
        problem(Kind.NLINK, handles[i], 0, null, lower(types[i]) + " with " + names[i]
            + " names has link count " + nlinks[i] + ": set it to " + names[i]);
      }
    }
    if (t.get(Counter.OBJECTS) != n) {
      problem(Kind.COUNTER, 0, 0, null, "object counter says " + t.get(Counter.OBJECTS) + ", there are " + n
          + ": set it");
    }
    if (t.get(Counter.DIRECTORIES) != dirs) {
      problem(Kind.COUNTER, 0, 0, null, "directory counter says " + t.get(Counter.DIRECTORIES) + ", there are " + dirs
          + ": set it");
    }
  }

  private void checkXattrs() {
    long last = 0;
    for (byte[] key : t.xattrs().keySet()) {
      long h = keyHandle(key);
      if (index(h) == NONE) {
        removeXattrs.add(key);
        if (h != last) {
          problem(Kind.ORPHAN_XATTR, h, 0, null, "extended attributes of a missing object: remove them");
        }
        last = h;
      }
    }
  }

  private void checkHeads() {
    for (long h : t.heads().keySet()) {
      if (index(h) == NONE) {
        removeHeads.add(h);
        problem(Kind.ORPHAN_HEAD, h, 0, null, "the head of a missing object: remove it");
      }
    }
  }

  // ---- repairing ------------------------------------------------------------------------------

  private void apply(long nowNs) {
    long lf;
    if (lostFound == NEW_LOST_FOUND) {
      // first, while nothing has changed: it may fail (EMLINK) like any create
      NewObject dir = new NewObject(FileType.DIRECTORY, 0700, 0, 0, 0, null, null);
      Attr a = ns.create(Handle.ROOT, lostFoundName, dir, nowNs).attr();
      lf = a.handle().id();
    } else {
      lf = lostFound >= 0 ? handles[lostFound] : 0;
    }
    for (long h : badObjects) {
      t.removeObject(h);
    }
    for (byte[] key : removeEntries) {
      t.entries().remove(key);
    }
    for (byte[][] kv : rewriteEntries) {
      if (!removeEntries.contains(kv[0])) {
        t.entries().put(kv[0], kv[1]);
      }
    }
    for (byte[] key : removeXattrs) {
      t.xattrs().remove(key);
    }
    for (long h : removeHeads) {
      t.heads().remove(h);
    }
    for (int k = 0; k < reconnect.size(); k++) {
      int i = reconnect.get(k);
      t.entries().put(Keys.of(lf, Keys.utf8(reconnectNames.get(k))), Keys.entry(handles[i], types[i]));
    }
    int root = index(Handle.ROOT.id());
    long dirs = 0;
    for (int i = 0; i < n; i++) {
      boolean dir = isDir(i);
      dirs += dir ? 1 : 0;
      int want = dir ? 2 + subdirs[i] + (i == root && lostFound == NEW_LOST_FOUND ? 1 : 0) : names[i];
      long wantParent = !dir ? parents[i]
          : holder[i] == NEW_LOST_FOUND ? lf
          : holder[i] >= 0 ? handles[holder[i]]
          : parents[i];
      if (nlinks[i] != want || parents[i] != wantParent || i == root && lostFound == NEW_LOST_FOUND) {
        Inode in = InodeCodec.decode(handles[i], t.object(handles[i]));
        in.nlink = want;
        if (dir) {
          in.parent = wantParent;
        }
        in.ctimeNs = nowNs;
        t.putObject(in.handle, InodeCodec.encode(in));
      }
    }
    if (lostFound == NEW_LOST_FOUND) {
      Inode in = InodeCodec.decode(lf, t.object(lf));
      in.nlink = 2 + newLostFoundSubdirs;
      t.putObject(lf, InodeCodec.encode(in));
      dirs++;
    } else if (!reconnect.isEmpty()) {
      Inode in = InodeCodec.decode(lf, t.object(lf));
      in.touchContents(nowNs);
      t.putObject(lf, InodeCodec.encode(in));
    }
    t.set(Counter.OBJECTS, n + (lostFound == NEW_LOST_FOUND ? 1 : 0));
    t.set(Counter.DIRECTORIES, dirs);
  }
}
