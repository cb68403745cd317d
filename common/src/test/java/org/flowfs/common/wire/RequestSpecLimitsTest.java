package org.flowfs.common.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.flowfs.common.request.Elementary;
import org.flowfs.common.request.Request;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A request tree from the wire may be at most {@link RequestSpec#MAX_NODES} nodes; within that, a
 * tree whose parts the request factories would copy into more than a bounded number of entries
 * (a few kilobytes that would become gigabytes) is refused before it is built.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class RequestSpecLimitsTest {
  private static RequestSpec.Node named() {
    return new RequestSpec.Node(Request.Combiner.NAMED, Elementary.BYTE, 0, 0, 0, null, null, null, null, null, null, null);
  }

  /** Chains of structs, each of two copies of the one before it: sizes double with every node. */
  private static List<RequestSpec.Node> doublingChains(int depth, int total) {
    List<RequestSpec.Node> nodes = new ArrayList<>();
    nodes.add(named());
    while (nodes.size() + depth < total) {
      int prev = 0;
      for (int i = 1; i <= depth; i++) {
        nodes.add(new RequestSpec.Node(Request.Combiner.STRUCT, null, 0, 0, 0, new long[] {1, 1},
            new long[] {0, 1L << (i + 1)}, new long[] {prev, prev}, null, null, null, null));
        prev = nodes.size() - 1;
      }
    }
    return nodes;
  }

  @Test
  void toRequest_partsCopiedPastTheBudget_isRefusedQuickly() {
    for (int depth : new int[] {12, 16, 17, 24}) {
      RequestSpec spec = new RequestSpec(doublingChains(depth, RequestSpec.MAX_NODES));
      long t0 = System.nanoTime();
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, spec::toRequest);
      assertTrue(e.getMessage().contains("too complex"), e.getMessage());
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertTrue(ms < 1000, "depth " + depth + " refused after " + ms + " ms");
    }
  }

  @Test
  void toRequest_bigButHonestRequests_areBuilt() {
    // one chain of doublings: 2^16 blocks, as a real application might describe
    Request r = new RequestSpec(doublingChains(16, 18)).toRequest();
    assertEquals(1L << 16, r.size());
    // an hindexed of 200,000 blocks: large because the message is large, not because it expands
    int n = 200_000;
    long[] bl = new long[n];
    long[] d = new long[n];
    for (int i = 0; i < n; i++) {
      bl[i] = 1;
      d[i] = 2L * i;
    }
    Request big = Request.hindexed(bl, d, Request.INT32);
    assertEquals(4L * n, RequestSpec.of(big).toRequest().size());
    // as deep as allowed
    List<RequestSpec.Node> deep = new ArrayList<>();
    deep.add(named());
    for (int i = 1; i < RequestSpec.MAX_NODES; i++) {
      deep.add(new RequestSpec.Node(Request.Combiner.RESIZED, null, 0, 0, 0, null, new long[] {0, 1}, new long[] {i - 1},
          null, null, null, null));
    }
    assertEquals(1, new RequestSpec(deep).toRequest().size());
    // structs of many different parts
    Request s = Request.struct(new long[] {1, 2, 3}, new long[] {0, 100, 1000},
        Request.vector(10, 1, 2, Request.INT64), Request.hindexed(new long[] {1, 1}, new long[] {0, 16}, Request.BYTE),
        Request.contiguous(7, Request.INT16));
    assertEquals(s.size(), RequestSpec.of(s).toRequest().size());
  }
}
