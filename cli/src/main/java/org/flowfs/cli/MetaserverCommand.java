package org.flowfs.cli;

import java.util.concurrent.Callable;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.meta.MetaServer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

@Command(name = "metaserver", mixinStandardHelpOptions = true,
    description = "Run the metadata server (namespace, attributes, layouts) in the foreground.")
final class MetaserverCommand implements Callable<Integer> {
  @Mixin
  ConfigOption config;

  @Override
  public Integer call() throws Exception {
    FlowFsConfig cfg = config.load();
    Main.begin("metaserver", cfg);
    try (Lifecycle life = new Lifecycle()) {
      NetRuntime net = life.add(NetRuntime.create("meta-net", 2));
      MetaServer server = life.add(MetaServer.open(cfg, net));
      server.start();
      Readiness.ready("metaserver");
      life.awaitStop();
    }
    return 0;
  }
}
