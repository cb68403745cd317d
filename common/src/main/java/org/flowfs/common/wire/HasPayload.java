package org.flowfs.common.wire;

import io.netty.buffer.ByteBuf;

/**
 * A message that carries bulk bytes in its last component, {@code payload}. The payload travels
 * after the message's other fields without being copied into the frame.
 *
 * <p>Ownership: whoever holds a decoded message owns one reference to its payload and must
 * {@link #release()} it (or pass the message on, which passes the reference). Encoding a message
 * consumes the reference the sender held.
 */
public interface HasPayload extends Message {
  ByteBuf payload();

  default void release() {
    payload().release();
  }

  /** Releases {@code m}'s payload if it has one (a message that goes nowhere). */
  static void releaseIfAny(Message m) {
    if (m instanceof HasPayload p) {
      p.release();
    }
  }
}
