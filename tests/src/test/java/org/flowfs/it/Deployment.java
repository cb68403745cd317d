package org.flowfs.it;

import java.nio.file.Path;

/**
 * A FlowFS file system deployed for a test and mounted with FUSE, in one of the shapes users run
 * it. {@link #close()} unmounts and stops everything it started, also after a failed test.
 */
interface Deployment extends AutoCloseable {
  Path mountPoint();

  Path dataDir();

  /** The storage directory of I/O server {@code i}. */
  default Path ioDir(int i) {
    return dataDir().resolve("io" + i);
  }

  int ioServers();

  /** Stops every process cleanly (unmount first) and keeps the data. */
  void stop() throws Exception;

  /** Starts everything again on the same data and mounts it. */
  void start() throws Exception;

  @Override
  void close();
}
