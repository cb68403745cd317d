package org.flowfs.common.config;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

/**
 * The file system's shared secret ({@code fs.secret}): the key with which servers and clients
 * prove to each other that they belong to the same file system. Never printed: {@link #toString()}
 * shows only its length. Compared in constant time. Immutable.
 */
public final class Secret {
  private final byte[] key;

  private Secret(byte[] key) {
    this.key = key.clone();
  }

  /** The secret as written in the config (its UTF-8 bytes are the key). */
  public static Secret of(String text) {
    if (text == null || text.isEmpty()) {
      throw new IllegalArgumentException("an empty secret");
    }
    return new Secret(text.getBytes(StandardCharsets.UTF_8));
  }

  /** A copy of the key bytes. */
  public byte[] key() {
    return key.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Secret s && MessageDigest.isEqual(key, s.key);
  }

  @Override
  public int hashCode() {
    return key.length;
  }

  @Override
  public String toString() {
    return "(secret of " + key.length + " bytes)";
  }
}
