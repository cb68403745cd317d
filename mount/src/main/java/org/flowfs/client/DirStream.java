package org.flowfs.client;

import java.util.ArrayList;
import java.util.List;
import org.flowfs.common.Handle;
import org.flowfs.common.wire.MetaOp.Dirent;

/**
 * An open directory: its entries in name order, fetched a page at a time as the reader advances,
 * kept so a reader can seek back (telldir/seekdir). Entry {@code i} is at position {@code i}.
 * Thread safe.
 */
public final class DirStream {
  private final Handle dir;
  private final List<Dirent> entries = new ArrayList<>();
  private String cursor;
  private boolean eof;

  DirStream(Handle dir) {
    this.dir = dir;
  }

  public Handle dir() {
    return dir;
  }

  synchronized boolean needs(int index) {
    return index >= entries.size() && !eof;
  }

  synchronized void append(List<Dirent> page, boolean last) {
    entries.addAll(page);
    if (!page.isEmpty()) {
      cursor = page.get(page.size() - 1).name();
    }
    eof = last;
  }

  synchronized String cursor() {
    return cursor;
  }

  /** The entry at {@code index}, or null past the end (after fetching as needed). */
  synchronized Dirent at(int index) {
    return index < entries.size() ? entries.get(index) : null;
  }
}
