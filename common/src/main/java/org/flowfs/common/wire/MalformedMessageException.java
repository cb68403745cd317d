package org.flowfs.common.wire;

/** A frame that does not decode: the peer is broken or hostile; its connection is closed. */
public final class MalformedMessageException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public MalformedMessageException(String message) {
    super(message, null, false, false);
  }

  public MalformedMessageException(String message, Throwable cause) {
    super(message, cause, false, false);
  }
}
