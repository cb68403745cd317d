package org.flowfs.client;

import io.netty.buffer.ByteBuf;

/**
 * Where the pages read around a small read that jumps go: the kernel's page cache of the file
 * that read came through (FUSE_NOTIFY_STORE), so later reads of them never leave the kernel. The
 * sink works on a thread of its own; the client decides what may be stored and until when.
 */
public interface PageSink {
  /** Stores {@code p}'s bytes when its turn comes, if {@link Pages#begin()} still allows it. */
  void store(Pages p);

  /** Bytes {@link #data()} at {@link #offset()} of one file, read around a read of it. */
  interface Pages {
    long offset();

    /** The bytes; the sink releases them, stored or not. */
    ByteBuf data();

    /** On the sink's thread, right before it stores: false if it must not (then no {@link #end()}). */
    boolean begin();

    /** After the bytes were stored, or the store failed. */
    void end();
  }
}
