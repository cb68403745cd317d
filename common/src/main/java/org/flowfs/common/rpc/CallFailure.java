package org.flowfs.common.rpc;

import java.io.IOException;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;

/**
 * How a call of {@link RpcClient} failed without an answer, so a caller can tell whether the
 * server may have run the request: attached as the cause of the {@code EIO} {@link FsException}
 * the call fails with. The errno the application sees stays EIO.
 *
 * <ul>
 *   <li>{@link Stage#NOT_SENT}: the request never left this process (the server refused or did not
 *       take the connection, or the connection was already closed): re-sending any request is safe.
 *   <li>{@link Stage#LOST}: the request was sent, or may have been, and the connection dropped
 *       before the answer came: the server may or may not have run it, so only idempotent
 *       requests may be re-sent.
 *   <li>{@link Stage#TIMED_OUT}: no answer within the timeout: the time is used up.
 * </ul>
 *
 * <p>Immutable; records no stack trace (it is a result, like {@link FsException}).
 */
public final class CallFailure extends IOException {
  private static final long serialVersionUID = 1L;

  /** Where the call was when it failed. */
  public enum Stage { NOT_SENT, LOST, TIMED_OUT }

  private final Stage stage;

  private CallFailure(Stage stage, String detail) {
    super(detail);
    this.stage = stage;
  }

  public Stage stage() {
    return stage;
  }

  @Override
  public synchronized Throwable fillInStackTrace() {
    return this;
  }

  /** The EIO a call fails with at {@code stage}. */
  static FsException eio(Stage stage, String detail) {
    return new FsException(Errno.EIO, detail, new CallFailure(stage, detail));
  }

  /**
   * The stage at which a call failed, or null when {@code t} is no connection failure of a call
   * (an errno the server answered with, say). Looks through completion wrappers.
   */
  public static Stage stageOf(Throwable t) {
    Throwable c = Errno.unwrap(t);
    return c instanceof FsException fe && fe.getCause() instanceof CallFailure cf ? cf.stage : null;
  }
}
