package org.flowfs.common.wire;

import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Every wire message type by id, gathered from the sealed message hierarchies. Immutable.
 */
public final class MessageRegistry {
  /** All messages FlowFS speaks. */
  public static final MessageRegistry DEFAULT =
      new MessageRegistry(List.of(CommonOp.class, MetaOp.class, IoOp.class));

  private final RecordCodec<?>[] byId;
  private final Map<Class<?>, Integer> ids = new HashMap<>();
  private final Map<Class<?>, Class<?>> responseTypes = new HashMap<>();

  public MessageRegistry(List<Class<?>> roots) {
    Map<Integer, RecordCodec<?>> found = new HashMap<>();
    Deque<Class<?>> todo = new ArrayDeque<>(roots);
    int max = 0;
    while (!todo.isEmpty()) {
      Class<?> c = todo.pop();
      if (c.isSealed()) {
        todo.addAll(List.of(c.getPermittedSubclasses()));
        continue;
      }
      Wire w = c.getAnnotation(Wire.class);
      if (w == null || !c.isRecord()) {
        throw new IllegalArgumentException(c.getName() + " must be a record annotated @Wire");
      }
      if (w.value() <= 0 || w.value() > 0xFFFF) {
        throw new IllegalArgumentException(c.getName() + ": id " + w.value() + " out of range");
      }
      RecordCodec<?> prev = found.put(w.value(), RecordCodec.of(c));
      if (prev != null) {
        throw new IllegalArgumentException("id " + w.value() + " used by " + c.getName() + " and " + prev.type().getName());
      }
      ids.put(c, w.value());
      max = Math.max(max, w.value());
      Class<?> resp = responseTypeOf(c);
      if (resp != null) {
        responseTypes.put(c, resp);
      }
    }
    byId = new RecordCodec<?>[max + 1];
    found.forEach((id, codec) -> byId[id] = codec);
  }

  private static Class<?> responseTypeOf(Class<?> c) {
    for (Type t : c.getGenericInterfaces()) {
      if (t instanceof ParameterizedType p && p.getRawType() == Req.class) {
        Type arg = p.getActualTypeArguments()[0];
        if (arg instanceof Class<?> rc) {
          return rc;
        }
      }
    }
    return null;
  }

  /** The id of a message type; unregistered types are a programming error. */
  public int idOf(Class<?> type) {
    Integer id = ids.get(type);
    if (id == null) {
      throw new IllegalArgumentException(type.getName() + " is not a registered message");
    }
    return id;
  }

  /** The declared response type of a request type, or null for messages that are not requests. */
  public Class<?> responseTypeOf(Message req) {
    return responseTypes.get(req.getClass());
  }

  RecordCodec<?> codec(int id) {
    RecordCodec<?> c = id >= 0 && id < byId.length ? byId[id] : null;
    if (c == null) {
      throw new MalformedMessageException("unknown message type " + id);
    }
    return c;
  }

  RecordCodec<?> codec(Class<?> type) {
    return byId[idOf(type)];
  }

  /** Every registered message type, for tests. */
  public List<Class<?>> types() {
    return ids.keySet().stream().sorted((a, b) -> ids.get(a) - ids.get(b)).toList();
  }
}
