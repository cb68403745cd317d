package org.flowfs.it;

import java.nio.file.Path;

/** The shell tools over separate metaserver, ioserver and mount processes (the systemd shape). */
class ProcessShellToolsTest extends ShellToolsContract {
  @Override
  Deployment deploy(Path root) throws Exception {
    return new ProcessDeployment(root, 4);
  }
}
