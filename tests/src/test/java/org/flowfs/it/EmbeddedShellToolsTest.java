package org.flowfs.it;

import java.nio.file.Path;

/** The shell tools over {@code flowfs up}'s shape: all servers and the mount in one JVM. */
class EmbeddedShellToolsTest extends ShellToolsContract {
  @Override
  Deployment deploy(Path root) throws Exception {
    return new EmbeddedDeployment(root, 4);
  }
}
