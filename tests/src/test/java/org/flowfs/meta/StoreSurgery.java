package org.flowfs.meta;

import java.nio.file.Path;
import org.flowfs.common.Handle;
import org.mapdb.DB;

/**
 * Damages the MapDB store of a stopped metadata server the ways a bug or a torn store could, for
 * fsck tests: an object record gone (its entries dangle), an entry gone (its object is lost), a
 * wrong link count. Changes are committed on {@link #close()}. Test code only; it lives in this
 * package to reach the store's tables.
 */
public final class StoreSurgery implements AutoCloseable {
  private final DB db;
  private final MapDbTables tables;
  private final Namespace ns;

  private StoreSurgery(DB db) {
    this.db = db;
    this.tables = new MapDbTables(db);
    this.ns = new Namespace(tables);
  }

  /** Opens the store in {@code metaDir} (its server must be stopped). */
  public static StoreSurgery open(Path metaDir) throws Exception {
    return new StoreSurgery(RedoVolumes.open(metaDir.resolve(MapDbMetadataStore.FILE_NAME)));
  }

  /** The handle of {@code path} (absolute, "/" separated). */
  public Handle resolve(String path) {
    Handle h = Handle.ROOT;
    for (String name : path.split("/")) {
      if (!name.isEmpty()) {
        h = ns.lookup(h, name).handle();
      }
    }
    return h;
  }

  /** Drops an object's record, leaving its entries and everything else as they are. */
  public void removeObject(Handle h) {
    tables.removeObject(h.id());
  }

  /** Drops one directory entry, leaving the object it named as it is. */
  public void removeEntry(Handle dir, String name) {
    tables.entries().remove(Keys.of(dir.id(), Keys.utf8(name)));
  }

  /** Sets an object's link count. */
  public void setNlink(Handle h, int nlink) {
    Inode in = InodeCodec.decode(h.id(), tables.object(h.id()));
    in.nlink = nlink;
    tables.putObject(h.id(), InodeCodec.encode(in));
  }

  @Override
  public void close() {
    tables.flushCounters();
    db.commit();
    db.close();
  }
}
