package org.flowfs.it;

import java.nio.file.Path;

/** The shell tools over {@code flowfs up}'s shape: all servers and the mount in one JVM. */
class EmbeddedShellToolsTest extends ShellToolsContract {
  @Override
  Deployment deploy(Path root) throws Exception {
    return new EmbeddedDeployment(root, 4);
  }

  /**
   * A part of include (about 800 entries): the same client code as the process shape, which
   * copies all of it (about 8,800), and the suite's time goes where the shapes differ.
   */
  @Override
  String tree() {
    return "include/linux";
  }
}
