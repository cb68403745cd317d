package org.flowfs.common.rpc;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.BiFunction;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.Req;

/** The operations a server serves, by request type. Built once, then read-only. */
public final class OpTable {
  private final Map<Class<?>, OpSpec<?, ?>> ops = new HashMap<>();

  public <Q extends Req<R>, R extends Message> OpTable add(OpSpec<Q, R> spec) {
    if (ops.putIfAbsent(spec.type(), spec) != null) { // a refused spec must not replace the first
      throw new IllegalArgumentException("two handlers for " + spec.name());
    }
    return this;
  }

  /** Adds a blocking handler that runs on {@code executor} and returns its answer directly. */
  public <Q extends Req<R>, R extends Message> OpTable blocking(
      Class<Q> type, Access access, Executor executor, BiFunction<Q, CallContext, R> handler) {
    return add(new OpSpec<>(type, access, executor,
        (q, ctx) -> CompletableFuture.completedFuture(handler.apply(q, ctx))));
  }

  /** Adds a handler that starts its work without blocking and answers when it completes. */
  public <Q extends Req<R>, R extends Message> OpTable async(
      Class<Q> type, Access access, OpSpec.Handler<Q, R> handler) {
    return add(new OpSpec<>(type, access, null, handler));
  }

  public OpSpec<?, ?> get(Class<?> type) {
    return ops.get(type);
  }

  public Collection<OpSpec<?, ?>> all() {
    return ops.values();
  }
}
