package org.flowfs.cli;

import java.util.concurrent.Callable;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.io.IoServer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "ioserver", mixinStandardHelpOptions = true,
    description = "Run one I/O server (the datafiles of one storage target) in the foreground.")
final class IoserverCommand implements Callable<Integer> {
  @Mixin
  ConfigOption config;

  @Option(names = "--id", required = true, paramLabel = "N", description = "Which I/O server of the config this is (io.N.*).")
  int id;

  @Override
  public Integer call() throws Exception {
    FlowFsConfig cfg = config.load();
    cfg.ioServer(id);
    Main.begin("ioserver " + id, cfg);
    try (Lifecycle life = new Lifecycle()) {
      NetRuntime net = life.add(NetRuntime.create("io-net", 2));
      IoServer server = life.add(IoServer.open(cfg, id, net));
      server.start();
      Readiness.ready("ioserver " + id);
      life.awaitStop();
    }
    return 0;
  }
}
