package org.flowfs.bench;

import java.nio.file.Path;
import java.util.Map;

/** A file system under test: a directory to work in, and the processes that serve it. */
interface Target extends AutoCloseable {
  String name();

  /** The directory the workloads use. */
  Path root();

  /** The processes serving it, by role, for memory sampling (empty for the local disk). */
  Map<String, Long> pids();

  @Override
  void close();
}
