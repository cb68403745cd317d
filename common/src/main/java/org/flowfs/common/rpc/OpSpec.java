package org.flowfs.common.rpc;

import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.Req;

/**
 * One server operation: the request type it serves, whether it modifies state, where it runs and
 * what handles it (OrangeFS's {@code PINT_server_req_table} row).
 *
 * @param executor where the handler runs; null runs it on the event loop, for handlers that
 *     never block
 */
public record OpSpec<Q extends Req<R>, R extends Message>(
    Class<Q> type, Access access, Executor executor, Handler<Q, R> handler) {

  /** Serves one request; may complete later. Failures become an errno answer. */
  @FunctionalInterface
  public interface Handler<Q, R> {
    CompletionStage<R> handle(Q request, CallContext ctx) throws Exception;
  }

  public String name() {
    return type.getSimpleName();
  }

  /** Counter names per request type, made once: a server counts every request it serves. */
  private static final ClassValue<String> COUNT = counterNames("op.");
  private static final ClassValue<String> TIME = counterNames("op-us.");

  private static ClassValue<String> counterNames(String prefix) {
    return new ClassValue<>() {
      @Override
      protected String computeValue(Class<?> t) {
        return prefix + t.getSimpleName();
      }
    };
  }

  /** The counter of requests served, {@code op.NAME}. */
  String countName() {
    return COUNT.get(type);
  }

  /** The counter of microseconds spent on them, {@code op-us.NAME}. */
  String timeName() {
    return TIME.get(type);
  }
}
