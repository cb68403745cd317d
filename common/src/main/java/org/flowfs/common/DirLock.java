package org.flowfs.common;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** An exclusive lock on a server's storage directory, so two servers never share one. */
public final class DirLock implements AutoCloseable {
  private final FileChannel channel;
  private final FileLock lock;

  private DirLock(FileChannel channel, FileLock lock) {
    this.channel = channel;
    this.lock = lock;
  }

  /** Locks {@code dir} (created if missing), or fails with a message naming the directory. */
  public static DirLock acquire(Path dir, String role) throws IOException {
    Files.createDirectories(dir);
    FileChannel ch = FileChannel.open(dir.resolve(".lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
    FileLock l;
    try {
      l = ch.tryLock();
    } catch (OverlappingFileLockException e) {
      l = null;
    }
    if (l == null) {
      ch.close();
      throw new IOException("storage directory " + dir + " is in use by another " + role + " (lock " + dir.resolve(".lock") + ")");
    }
    return new DirLock(ch, l);
  }

  @Override
  public void close() {
    try {
      lock.release();
      channel.close();
    } catch (IOException e) {
      // the lock goes with the process anyway
    }
  }
}
