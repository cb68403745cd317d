package org.flowfs.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;

/**
 * Hands out the datafile handles of one I/O server's range, never the same one twice, also across
 * crashes: the high-water mark is written and synced before any handle below it is returned.
 * Thread safe.
 */
final class HandleAllocator implements AutoCloseable {
  private final int server;
  private final FileChannel file;
  private long next;

  HandleAllocator(Path stateFile, int server) throws IOException {
    this.server = server;
    this.file = FileChannel.open(stateFile, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
    try {
      ByteBuffer b = ByteBuffer.allocate(8);
      int n = file.read(b, 0);
      if (n == 8) {
        b.flip();
        next = b.getLong();
      } else if (n <= 0) {
        next = 1;
      } else {
        throw new IOException(stateFile + " is corrupt (" + n + " bytes)");
      }
      if (next < 1 || next > Handle.LOCAL_MASK) {
        throw new IOException(stateFile + " holds an impossible handle counter " + next);
      }
    } catch (IOException | RuntimeException e) {
      file.close();
      throw e;
    }
  }

  /** Reserves {@code count} consecutive handles. */
  synchronized List<Handle> allocate(int count) {
    if (next + count > Handle.LOCAL_MASK) {
      throw new FsException(Errno.ENOSPC, "handle range of server " + server + " exhausted");
    }
    long first = next;
    long after = next + count;
    try {
      ByteBuffer b = ByteBuffer.allocate(8).putLong(0, after);
      file.write(b, 0);
      file.force(false);
    } catch (IOException e) {
      throw new FsException(Errno.from(e), "cannot record handle counter: " + e.getMessage(), e);
    }
    next = after;
    List<Handle> out = new ArrayList<>(count);
    for (long l = first; l < after; l++) {
      out.add(Handle.of(server, l));
    }
    return out;
  }

  /** Whether {@code h} was handed out by this allocator. */
  synchronized boolean issued(Handle h) {
    return h.server() == server && h.local() > 0 && h.local() < next; // local 0 is never handed out
  }

  @Override
  public void close() {
    try {
      file.close();
    } catch (IOException e) {
      // nothing to do: the counter was synced on every allocation
    }
  }
}
