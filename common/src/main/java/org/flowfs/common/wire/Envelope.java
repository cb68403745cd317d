package org.flowfs.common.wire;

/**
 * One frame: a message with its kind and id. For {@link Kind#REQUEST} and {@link Kind#RESPONSE}
 * the id pairs a response with its request; for {@link Kind#ONEWAY} it is a tag (a flow's).
 */
public record Envelope(Kind kind, long id, Message message) {
  public enum Kind {
    REQUEST,
    RESPONSE,
    ONEWAY
  }

  public static Envelope request(long id, Message m) {
    return new Envelope(Kind.REQUEST, id, m);
  }

  public static Envelope response(long id, Message m) {
    return new Envelope(Kind.RESPONSE, id, m);
  }

  public static Envelope oneway(long tag, Message m) {
    return new Envelope(Kind.ONEWAY, tag, m);
  }

  /** Releases the payload this envelope holds, if any. */
  public void release() {
    if (message instanceof HasPayload p) {
      p.release();
    }
  }
}
