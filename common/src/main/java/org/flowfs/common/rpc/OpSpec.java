package org.flowfs.common.rpc;

import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.function.Predicate;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.Req;

/**
 * One server operation: the request type it serves, whether it modifies state, where it runs and
 * what handles it (OrangeFS's {@code PINT_server_req_table} row).
 *
 * @param executor where the handler runs; null runs it on the event loop, for handlers that
 *     never block
 * @param inline which requests run on the event loop that read them even though the operation
 *     has an executor: those whose work is known to be short and not to wait on a disk (a copy
 *     into the page cache), for which the two hand-overs between threads cost more than the work;
 *     null for none. Asked on the event loop: it must be cheap and never block.
 */
public record OpSpec<Q extends Req<R>, R extends Message>(
    Class<Q> type, Access access, Executor executor, Predicate<? super Q> inline, Handler<Q, R> handler) {

  public OpSpec(Class<Q> type, Access access, Executor executor, Handler<Q, R> handler) {
    this(type, access, executor, null, handler);
  }

  /** Serves one request; may complete later. Failures become an errno answer. */
  @FunctionalInterface
  public interface Handler<Q, R> {
    CompletionStage<R> handle(Q request, CallContext ctx) throws Exception;
  }

  /** Whether {@code request} (of this operation's type) runs on the event loop that read it. */
  boolean runsInline(Message request) {
    return executor == null || inline != null && inline.test(type.cast(request));
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
