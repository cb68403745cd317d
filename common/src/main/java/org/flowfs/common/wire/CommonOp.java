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

  // ---- membership: the handshake that opens every connection (see org.flowfs.common.rpc.Membership)

  /** Bytes of a handshake nonce or proof: at least this many. */
  int AUTH_MIN = 16;
  /** ... and at most this many. */
  int AUTH_MAX = 64;

  /**
   * The first frame on every connection, sent by the server one-way (id 0) as soon as it accepts:
   * its name and a fresh random nonce. Until the client has answered it with a valid
   * {@link AuthReq}, the server serves nothing.
   */
  @Wire(7)
  record AuthChallenge(String server, byte[] nonce) implements CommonOp {
    public AuthChallenge {
      if (server == null || server.length() > 128 || nonce == null || nonce.length < AUTH_MIN || nonce.length > AUTH_MAX) {
        throw new IllegalArgumentException("auth challenge out of range");
      }
    }
  }

  /**
   * The client's answer to the challenge, the first request of a connection: its own nonce and
   * its proof that it knows the file system's secret (an HMAC over both nonces and the server's
   * name).
   */
  @Wire(8)
  record AuthReq(byte[] nonce, byte[] proof) implements CommonOp, Req<AuthResp> {
    public AuthReq {
      if (nonce == null || nonce.length < AUTH_MIN || nonce.length > AUTH_MAX
          || proof == null || proof.length < AUTH_MIN || proof.length > AUTH_MAX) {
        throw new IllegalArgumentException("auth request out of range");
      }
    }
  }

  /** The server's own proof of the secret: the connection is open for requests. */
  @Wire(9)
  record AuthResp(byte[] proof) implements CommonOp {
    public AuthResp {
      if (proof == null || proof.length < AUTH_MIN || proof.length > AUTH_MAX) {
        throw new IllegalArgumentException("auth answer out of range");
      }
    }
  }
}
