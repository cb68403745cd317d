package org.flowfs.common.config;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The whole configuration of a FlowFS file system, one file shared by every process of it (the
 * metadata server, each I/O server, each mount). Loaded and validated at start: a bad file stops
 * the process with messages that name each bad key.
 *
 * <p>File syntax: {@code key = value} lines, {@code #} comments.
 */
public record FlowFsConfig(
    FsConfig fs,
    MetaConfig meta,
    List<IoServerConfig> ioServers,
    IoConfig io,
    LayoutConfig layout,
    RpcConfig rpc,
    ClientConfig client,
    FlowConfig flow,
    NodeConfig node,
    Map<String, String> effective) {

  public FlowFsConfig {
    ioServers = List.copyOf(ioServers);
    effective = Map.copyOf(effective);
  }

  public static FlowFsConfig load(Path file) {
    String text;
    try {
      text = Files.readString(file, StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      throw new ConfigException("config file " + file + " does not exist");
    } catch (IOException e) {
      throw new ConfigException("config file " + file + " cannot be read: " + e.getMessage());
    }
    return parse(file.toString(), text);
  }

  public static FlowFsConfig parse(String origin, String text) {
    List<String> syntax = new ArrayList<>();
    Map<String, String> pairs = lines(origin, text, syntax);
    FlowFsConfig config;
    try {
      config = from(new ConfigSource(origin, pairs));
    } catch (ConfigException e) {
      // report the lines that did not parse together with the bad values, not one batch after the other
      syntax.addAll(e.problems());
      throw new ConfigException(syntax);
    }
    if (!syntax.isEmpty()) {
      throw new ConfigException(syntax);
    }
    return config;
  }

  public static FlowFsConfig of(Map<String, String> pairs) {
    return from(new ConfigSource("config", pairs));
  }

  public static FlowFsConfig from(ConfigSource src) {
    FsConfig fs = FsConfig.from(src);
    MetaConfig meta = MetaConfig.from(src);
    List<IoServerConfig> io = new ArrayList<>();
    List<Integer> ids = src.indices("io");
    for (int i = 0; i < ids.size(); i++) {
      if (ids.get(i) != i) {
        src.problem("key 'io." + i + ".address' is missing: I/O server ids must be 0.." + (ids.size() - 1) + " without gaps");
        break;
      }
      io.add(IoServerConfig.from(src, i));
    }
    if (ids.isEmpty()) {
      src.problem("key 'io.0.address' is required: a file system needs at least one I/O server");
    }
    IoConfig ioc = IoConfig.from(src);
    LayoutConfig layout = LayoutConfig.from(src);
    if (layout.servers() > io.size() && !io.isEmpty()) {
      src.problem("key 'layout.servers': " + layout.servers() + " is more than the " + io.size() + " I/O servers configured");
    }
    RpcConfig rpc = RpcConfig.from(src, fs.secret());
    ClientConfig client = ClientConfig.from(src);
    NodeConfig node = NodeConfig.from(src);
    FlowConfig flow = FlowConfig.from(src, node);
    if (flow.bufferSize() > rpc.maxFrame() - 1024) {
      src.problem("key 'flow.buffer-size' must be smaller than 'rpc.max-frame'");
    }
    if (layout.headBytes() > rpc.maxFrame() - 1024) { // a whole head moves in one message
      src.problem("key 'layout.head-bytes' must be smaller than 'rpc.max-frame'");
    }
    src.finish();
    return new FlowFsConfig(fs, meta, io, ioc, layout, rpc, client, flow, node, src.effective());
  }

  /** The pairs of a file's lines; lines that are not {@code key = value} or repeat a key go to {@code problems}. */
  static Map<String, String> lines(String origin, String text, List<String> problems) {
    Map<String, String> pairs = new LinkedHashMap<>();
    String[] lines = text.split("\n", -1);
    for (int i = 0; i < lines.length; i++) {
      String line = lines[i].strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      int eq = line.indexOf('=');
      if (eq <= 0) {
        problems.add(origin + ":" + (i + 1) + ": expected 'key = value', found '" + line + "'");
        continue;
      }
      String key = line.substring(0, eq).strip();
      String value = line.substring(eq + 1).strip();
      if (pairs.put(key, value) != null) {
        problems.add(origin + ":" + (i + 1) + ": key '" + key + "' is set twice");
      }
    }
    return pairs;
  }

  /** The I/O server with this id, or a config error naming the key. */
  public IoServerConfig ioServer(int id) {
    if (id < 0 || id >= ioServers.size()) {
      throw new ConfigException("I/O server " + id + " is not configured (key 'io." + id + ".address'); configured: 0.." + (ioServers.size() - 1));
    }
    return ioServers.get(id);
  }

  /**
   * This config with the servers' addresses replaced by where they actually listen (a port 0 in
   * the file becomes the port the server bound).
   */
  public FlowFsConfig withAddresses(java.net.InetSocketAddress metaAddress, List<java.net.InetSocketAddress> ioAddresses) {
    List<IoServerConfig> io = new ArrayList<>();
    for (IoServerConfig s : ioServers) {
      java.net.InetSocketAddress a = ioAddresses.get(s.id());
      io.add(new IoServerConfig(s.id(), java.net.InetSocketAddress.createUnresolved(a.getHostString(), a.getPort()), s.dir()));
    }
    MetaConfig m = new MetaConfig(java.net.InetSocketAddress.createUnresolved(metaAddress.getHostString(), metaAddress.getPort()),
        meta.dir(), meta.threads(), meta.commitBatch(), meta.precreateBatch(), meta.precreateLowWater(), meta.syncInterval(),
        meta.dirLeaseTerm(), meta.dirLeaseGrace(), meta.lockTerm());
    return new FlowFsConfig(fs, m, io, this.io, layout, rpc, client, flow, node, effective);
  }

  /** The config file text for these effective values (used to write a default config). */
  public String render() {
    StringBuilder sb = new StringBuilder("# FlowFS configuration\n");
    effective.forEach((k, v) -> {
      if (!k.equals("fs.secret")) {
        sb.append(k).append(" = ").append(v).append('\n');
      }
    });
    return sb.toString();
  }
}
