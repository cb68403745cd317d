package org.flowfs.common.rpc;

import java.util.ArrayList;
import java.util.List;
import org.flowfs.common.Counters;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.config.IoServerConfig;
import org.flowfs.common.wire.MessageRegistry;

/** A client to each server of a file system: the metadata server and every I/O server. */
public final class Peers implements AutoCloseable {
  private final RpcClient meta;
  private final DirectClient metaDirect;
  private final List<RpcClient> io;
  private final List<DirectClient> ioDirect;

  /** A client to each server; none offers shared memory (a server's or a tool's few small payloads). */
  public Peers(FlowFsConfig config, NetRuntime net) {
    this(config, net, null);
  }

  /**
   * A client to each server; with {@code counters}, and {@code client.shared-memory} on, each I/O
   * server on this machine is offered shared memory for large payloads ({@link ShmOffer}).
   */
  public Peers(FlowFsConfig config, NetRuntime net, Counters counters) {
    this.meta = new RpcClient("metaserver", net, config.meta().address(), config.rpc(), MessageRegistry.DEFAULT);
    this.metaDirect = new DirectClient("metaserver", config.meta().address(), config.rpc(), MessageRegistry.DEFAULT);
    List<RpcClient> l = new ArrayList<>();
    List<DirectClient> d = new ArrayList<>();
    for (IoServerConfig s : config.ioServers()) {
      RpcClient c = new RpcClient("ioserver " + s.id(), net, s.address(), config.rpc(), MessageRegistry.DEFAULT);
      if (counters != null && config.client().sharedMemory()) {
        ShmOffer.install(c, s.address(), config.node().shmDir(), Math.max(config.flow().bufferSize(), config.flow().eagerWriteMax()), counters);
      }
      l.add(c);
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
