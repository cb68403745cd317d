package org.flowfs.common.rpc;

import java.util.ArrayList;
import java.util.List;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.config.IoServerConfig;
import org.flowfs.common.wire.MessageRegistry;

/** A client to each server of a file system: the metadata server and every I/O server. */
public final class Peers implements AutoCloseable {
  private final RpcClient meta;
  private final DirectClient metaDirect;
  private final List<RpcClient> io;
  private final List<DirectClient> ioDirect;

  public Peers(FlowFsConfig config, NetRuntime net) {
    this.meta = new RpcClient("metaserver", net, config.meta().address(), config.rpc(), MessageRegistry.DEFAULT);
    this.metaDirect = new DirectClient("metaserver", config.meta().address(), config.rpc(), MessageRegistry.DEFAULT);
    List<RpcClient> l = new ArrayList<>();
    List<DirectClient> d = new ArrayList<>();
    for (IoServerConfig s : config.ioServers()) {
      l.add(new RpcClient("ioserver " + s.id(), net, s.address(), config.rpc(), MessageRegistry.DEFAULT));
      d.add(new DirectClient("ioserver " + s.id(), s.address(), config.rpc(), MessageRegistry.DEFAULT));
    }
    this.io = List.copyOf(l);
    this.ioDirect = List.copyOf(d);
  }

  public RpcClient meta() {
    return meta;
  }

  /** The metadata server, for callers that wait for each answer on their own thread. */
  public DirectClient metaDirect() {
    return metaDirect;
  }

  public RpcClient io(int id) {
    return io.get(id);
  }

  /** I/O server {@code id}, for callers that wait for each answer on their own thread. */
  public DirectClient ioDirect(int id) {
    return ioDirect.get(id);
  }

  public int ioCount() {
    return io.size();
  }

  @Override
  public void close() {
    meta.close();
    metaDirect.close();
    io.forEach(RpcClient::close);
    ioDirect.forEach(DirectClient::close);
  }
}
