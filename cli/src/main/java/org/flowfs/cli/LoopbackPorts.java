package org.flowfs.cli;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Fixed loopback ports for a file system whose processes find each other from one config file
 * (the process shape of tests and benchmarks), chosen so that nothing else takes them between the
 * choice and the servers' bind.
 *
 * <p>A port from {@code new ServerSocket(0)} is an ephemeral port: once that socket closes, any
 * outgoing connection on the machine may be given the same port as its source, and a connect to
 * it can even connect to itself (TCP simultaneous open), which makes a server look ready before it
 * listens. Two such calls may also return the same port. The ports here lie below the kernel's
 * ephemeral range ({@code net.ipv4.ip_local_port_range}), so only an explicit bind can take them,
 * and a block is checked free as a whole, its sockets all open at once.
 */
public final class LoopbackPorts {
  private static final int LOWEST = 10_000;
  private static final Path EPHEMERAL_RANGE = Path.of("/proc/sys/net/ipv4/ip_local_port_range");

  private LoopbackPorts() {}

  /**
   * The first of {@code count} consecutive ports, all free on 127.0.0.1 when checked and all
   * below the ephemeral range, as {@link EmbeddedCluster#configText} numbers them from a base.
   */
  public static int block(int count) throws IOException {
    int top = ephemeralLow() - count;
    if (top <= LOWEST) {
      throw new IOException("no room for " + count + " ports below the ephemeral range (" + ephemeralLow() + ")");
    }
    InetAddress lo = InetAddress.getLoopbackAddress();
    for (int attempt = 0; attempt < 200; attempt++) {
      int base = ThreadLocalRandom.current().nextInt(LOWEST, top);
      if (free(lo, base, count)) {
        return base;
      }
    }
    throw new IOException("no " + count + " consecutive free loopback ports found below " + ephemeralLow());
  }

  private static boolean free(InetAddress lo, int base, int count) {
    List<ServerSocket> held = new ArrayList<>();
    try {
      for (int i = 0; i < count; i++) {
        ServerSocket s = new ServerSocket();
        held.add(s);
        s.setReuseAddress(false);
        s.bind(new InetSocketAddress(lo, base + i), 1);
      }
      return true;
    } catch (IOException e) {
      return false;
    } finally {
      for (ServerSocket s : held) {
        try {
          s.close();
        } catch (IOException ignored) {
          // a socket that was never bound
        }
      }
    }
  }

  /** The first port of the kernel's ephemeral range (32768 if it cannot be read). */
  static int ephemeralLow() {
    try {
      // readAllLines: Files.readString trusts the size procfs reports and returned "3" here
      String[] range = Files.readAllLines(EPHEMERAL_RANGE).get(0).trim().split("\\s+");
      return Integer.parseInt(range[0]);
    } catch (IOException | RuntimeException e) {
      return 32_768;
    }
  }
}
