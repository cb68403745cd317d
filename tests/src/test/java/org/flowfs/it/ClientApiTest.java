package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.file.Path;
import java.util.Random;
import org.flowfs.cli.EmbeddedCluster;
import org.flowfs.client.Caller;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.common.rpc.NetRuntime;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The client library over in-process servers, without FUSE. */
class ClientApiTest {
  @TempDir static Path dir;
  static EmbeddedCluster cluster;
  static NetRuntime net;
  static FileSystemClient fs;

  @BeforeAll
  static void up() throws Exception {
    cluster = EmbeddedCluster.create(dir, 4, 0);
    net = NetRuntime.create("test-client", 2);
    fs = new FileSystemClient(cluster.config(), net);
  }

  @AfterAll
  static void down() {
    if (fs != null) {
      fs.close();
    }
    if (net != null) {
      net.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void write_thenRead_roundTrips() {
    byte[] data = new byte[3 * 1024 * 1024 + 123];
    new Random(1).nextBytes(data);
    OpenFile f = fs.create("/rt", 0644, 0, Caller.ROOT);
    fs.write(f, 0, Unpooled.wrappedBuffer(data));
    fs.release(f);
    assertEquals(data.length, fs.getattr("/rt").size());
    OpenFile g = fs.open("/rt", 0);
    ByteBuf dst = Unpooled.buffer(data.length);
    int n = fs.read(g, 0, data.length, dst);
    fs.release(g);
    assertEquals(data.length, n);
    byte[] back = new byte[n];
    dst.getBytes(0, back);
    assertArrayEquals(data, back);
  }
}
