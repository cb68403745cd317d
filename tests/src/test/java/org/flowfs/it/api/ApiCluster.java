package org.flowfs.it.api;

import java.nio.file.Path;
import org.flowfs.cli.EmbeddedCluster;
import org.flowfs.client.Caller;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.api.FlowIo;
import org.flowfs.common.rpc.NetRuntime;

/** In-process servers (1 metadata, 4 I/O) and a typed-API client over them, for one test class. */
final class ApiCluster implements AutoCloseable {
  final EmbeddedCluster cluster;
  final NetRuntime net;
  final FileSystemClient client;
  final FlowIo io;

  ApiCluster(Path dir) throws Exception {
    cluster = EmbeddedCluster.create(dir, 4, 0);
    net = NetRuntime.create("api-client", 2);
    client = new FileSystemClient(cluster.config(), net);
    io = FlowIo.over(client, Caller.ROOT);
  }

  /** Another client of the same file system (another "node"). */
  FileSystemClient newClient() {
    return new FileSystemClient(cluster.config(), net);
  }

  @Override
  public void close() {
    io.close();
    client.close();
    net.close();
    cluster.close();
  }
}
