package org.flowfs.common.rpc;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.flowfs.common.config.Secret;

/**
 * The proof that a peer belongs to the file system: knowledge of the shared secret ({@code
 * fs.secret}), shown in a challenge-response when a connection opens, in both directions.
 *
 * <pre>
 *   server -> client   AuthChallenge(server name S, nonce Ns)        one-way, on accept
 *   client -> server   AuthReq(nonce Nc, HMAC(K, "client" | S | Ns | Nc))   first request
 *   server -> client   AuthResp(HMAC(K, "server" | S | Ns | Nc))      its answer
 * </pre>
 *
 * <p>K is the secret, the MAC HMAC-SHA256, every field length-prefixed. The server's fresh nonce
 * makes a recorded proof useless on another connection; the client's makes the server's proof
 * fresh, and the two directions use different labels, so neither proof can be reflected as the
 * other. This proves membership at connect, nothing per request: it keeps strangers away from the
 * servers, it is not transport encryption (someone who can already read and inject into a
 * connection's TCP stream is out of its scope).
 *
 * <p>Thread safe.
 */
public final class Membership {
  /** Bytes of the nonces this side makes. */
  public static final int NONCE = 32;
  private static final String MAC = "HmacSHA256";
  private static final byte[] PROTOCOL = "flowfs-membership-v1".getBytes(StandardCharsets.US_ASCII);
  private static final SecureRandom RANDOM = new SecureRandom();

  private final SecretKeySpec key;

  public Membership(Secret secret) {
    this.key = new SecretKeySpec(secret.key(), MAC);
  }

  /** A fresh random nonce. */
  public static byte[] nonce() {
    byte[] n = new byte[NONCE];
    RANDOM.nextBytes(n);
    return n;
  }

  /** The client's proof for the challenge of {@code server}. */
  public byte[] clientProof(String server, byte[] serverNonce, byte[] clientNonce) {
    return proof("client", server, serverNonce, clientNonce);
  }

  /** The server's proof, its answer to a valid client proof. */
  public byte[] serverProof(String server, byte[] serverNonce, byte[] clientNonce) {
    return proof("server", server, serverNonce, clientNonce);
  }

  /** Whether {@code got} is {@code expected}, in time independent of where they differ. */
  public static boolean matches(byte[] expected, byte[] got) {
    return got != null && MessageDigest.isEqual(expected, got);
  }

  private byte[] proof(String role, String server, byte[] serverNonce, byte[] clientNonce) {
    try {
      Mac mac = Mac.getInstance(MAC);
      mac.init(key);
      field(mac, PROTOCOL);
      field(mac, role.getBytes(StandardCharsets.US_ASCII));
      field(mac, server.getBytes(StandardCharsets.UTF_8));
      field(mac, serverNonce);
      field(mac, clientNonce);
      return mac.doFinal();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HMAC-SHA256 is not available", e);
    }
  }

  private static void field(Mac mac, byte[] b) {
    mac.update((byte) (b.length >>> 24));
    mac.update((byte) (b.length >>> 16));
    mac.update((byte) (b.length >>> 8));
    mac.update((byte) b.length);
    mac.update(b);
  }
}
