package org.flowfs.cli;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class LoopbackPortsTest {
  @Test
  void block_liesBelowTheEphemeralRangeAndBindsWhole() throws Exception {
    int base = LoopbackPorts.block(9);
    assertTrue(base >= 10_000 && base + 9 <= LoopbackPorts.ephemeralLow(), "base " + base);
    List<ServerSocket> held = new ArrayList<>();
    try {
      for (int i = 0; i < 9; i++) {
        ServerSocket s = new ServerSocket();
        held.add(s);
        s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), base + i));
      }
      // with the whole block taken, the next block is elsewhere
      int next = LoopbackPorts.block(9);
      assertTrue(next + 9 <= base || next >= base + 9, "overlaps: " + next + " and " + base);
      assertNotEquals(base, next);
    } finally {
      for (ServerSocket s : held) {
        s.close();
      }
    }
  }
}
