package org.flowfs.it.api;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import org.flowfs.client.api.AccessMode;
import org.flowfs.client.api.FlowFile;
import org.flowfs.client.api.FlowIo;
import org.flowfs.client.api.Group;
import org.flowfs.client.api.Hints;
import org.flowfs.common.config.FlowFsConfig;

/**
 * One rank of a collective run as its own process:
 * {@code CollectiveMember CONFIG RANK SIZE RENDEZVOUS_PORT PATH write|read DATAREP}. Exits 0 when
 * the collective write succeeded or the collective read found every value.
 */
public final class CollectiveMember {
  private CollectiveMember() {}

  public static void main(String[] args) throws Exception {
    FlowFsConfig config = FlowFsConfig.load(Path.of(args[0]));
    int rank = Integer.parseInt(args[1]);
    int size = Integer.parseInt(args[2]);
    InetSocketAddress at = new InetSocketAddress("127.0.0.1", Integer.parseInt(args[3]));
    String path = args[4];
    boolean write = args[5].equals("write");
    String datarep = args[6];
    String problem = null;
    try (FlowIo io = FlowIo.connect(config); Group g = Group.connect(rank, size, at, Duration.ofSeconds(60))) {
      EnumSet<AccessMode> mode = write ? EnumSet.of(AccessMode.CREATE, AccessMode.WRITE_ONLY) : EnumSet.of(AccessMode.READ_ONLY);
      try (FlowFile f = io.open(g, path, mode, Hints.of(Hints.CB_BUFFER_SIZE, "4096"))) {
        if (write) {
          Collective.write(f, rank, size, datarep);
        } else {
          problem = Collective.readAndCheck(f, rank, size, datarep);
        }
      }
    }
    if (problem != null) {
      System.out.println(problem);
      System.exit(2);
    }
    System.out.println("rank " + rank + " ok");
    System.exit(0);
  }
}
