package org.flowfs.common.wire;

import java.util.Map;

/** Messages every server speaks. Ids 1..99. */
public sealed interface CommonOp extends Message {
  /** The failure answer to any request: an errno value and a detail for logs. */
  @Wire(1)
  record ErrorResp(int errno, String detail) implements CommonOp {}

  /** The success answer of requests that return nothing. */
  @Wire(2)
  record OkResp() implements CommonOp {
    public static final OkResp INSTANCE = new OkResp();
  }

  /** Asks a server who it is; the answer carries the sender's clock back for latency. */
  @Wire(3)
  record PingReq(long sentNanos) implements CommonOp, Req<PingResp> {}

  @Wire(4)
  record PingResp(String role, int serverId, String version, long sentNanos) implements CommonOp {}

  /** Asks a server for its counters. */
  @Wire(5)
  record StatsReq() implements CommonOp, Req<StatsResp> {}

  @Wire(6)
  record StatsResp(String role, int serverId, Map<String, Long> counters) implements CommonOp {}
}
