package org.flowfs.client;

import org.flowfs.common.Handle;

/**
 * One open of a regular file: the FUSE file handle {@code id} and the file's shared state. {@code
 * attrsChanged}: the open found the file's attributes changed from those this client had cached
 * (or had none cached), so what the kernel cached of them may be stale too.
 */
public record OpenFile(long id, FileState state, int flags, boolean attrsChanged) {
  /** The file's handle. */
  public Handle handle() {
    return state.handle;
  }
}
