package org.flowfs.common.wire;

import io.netty.buffer.ByteBuf;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.RecordComponent;

/**
 * The wire form of one record type, derived from its components: the record declaration is the
 * single place that states field order, and it drives both encode and decode. A component of type
 * {@link ByteBuf} named {@code payload} must come last; it is written as a length here and its
 * bytes follow the frame's other fields without a copy (see {@link FrameEncoder}).
 *
 * <p>Decoding runs the record's canonical constructor, so its compact-constructor checks (limits,
 * ranges) apply to every decoded message; a failing check is a {@link MalformedMessageException}.
 * Instances are immutable and thread safe.
 */
final class RecordCodec<T> {
  private static final ClassValue<RecordCodec<?>> CODECS = new ClassValue<>() {
    @Override
    protected RecordCodec<?> computeValue(Class<?> type) {
      return new RecordCodec<>(type);
    }
  };

  private final Class<T> type;
  private final FieldCodec[] fields;
  private final MethodHandle[] getters;
  private final MethodHandle constructor;
  private final int payloadIndex;

  @SuppressWarnings("unchecked")
  static <T> RecordCodec<T> of(Class<T> type) {
    return (RecordCodec<T>) CODECS.get(type);
  }

  private RecordCodec(Class<T> type) {
    if (!type.isRecord()) {
      throw new IllegalArgumentException(type + " is not a record");
    }
    this.type = type;
    RecordComponent[] comps = type.getRecordComponents();
    fields = new FieldCodec[comps.length];
    getters = new MethodHandle[comps.length];
    Class<?>[] ctorTypes = new Class<?>[comps.length];
    int payload = -1;
    MethodHandles.Lookup lookup = MethodHandles.publicLookup();
    try {
      for (int i = 0; i < comps.length; i++) {
        RecordComponent c = comps[i];
        ctorTypes[i] = c.getType();
        getters[i] = lookup.unreflect(c.getAccessor()).asType(MethodType.methodType(Object.class, Object.class));
        if (c.getType() == ByteBuf.class) {
          if (i != comps.length - 1 || !c.getName().equals("payload") || !HasPayload.class.isAssignableFrom(type)) {
            throw new IllegalArgumentException(type.getName() + ": a ByteBuf must be the last component, "
                + "named 'payload', of a record implementing HasPayload");
          }
          payload = i;
        } else {
          fields[i] = FieldCodec.of(c.getGenericType(), type.getSimpleName() + "." + c.getName());
        }
      }
      constructor = lookup.findConstructor(type, MethodType.methodType(void.class, ctorTypes))
          .asSpreader(Object[].class, comps.length)
          .asType(MethodType.methodType(Object.class, Object[].class));
    } catch (ReflectiveOperationException e) {
      throw new IllegalArgumentException(type.getName() + " must be a public record with public accessors", e);
    }
    payloadIndex = payload;
  }

  Class<T> type() {
    return type;
  }

  boolean hasPayload() {
    return payloadIndex >= 0;
  }

  /** Writes every field but the payload's bytes (its length only). */
  void encodeFields(Object value, ByteBuf out) {
    try {
      for (int i = 0; i < fields.length; i++) {
        Object v = getters[i].invokeExact(value);
        if (i == payloadIndex) {
          out.writeInt(((ByteBuf) v).readableBytes());
        } else {
          fields[i].write(out, v);
        }
      }
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  /** The payload of a value, or null when the type has none. */
  ByteBuf payload(Object value) {
    if (payloadIndex < 0) {
      return null;
    }
    try {
      Object payload = getters[payloadIndex].invokeExact(value);
      return (ByteBuf) payload;
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  /**
   * Reads one value; a payload becomes a retained slice of {@code in}, owned by the caller.
   *
   * @throws MalformedMessageException if the bytes do not form a valid value
   */
  T decode(ByteBuf in) {
    return decode(in, null);
  }

  /**
   * Reads one value whose payload of {@code n} bytes (its length field read from {@code in}) is
   * {@code payloads.take(in, n)}, owned by the caller; null: the payload's bytes follow in {@code in}.
   */
  @SuppressWarnings("unchecked")
  T decode(ByteBuf in, PayloadSource payloads) {
    Object[] args = new Object[fields.length];
    ByteBuf payload = null;
    try {
      for (int i = 0; i < fields.length; i++) {
        if (i == payloadIndex) {
          int n = in.readInt();
          if (payloads != null) {
            payload = payloads.take(in, n);
            args[i] = payload;
            continue;
          }
          if (n < 0 || n > in.readableBytes()) {
            throw new MalformedMessageException("payload length " + n + " exceeds the frame");
          }
          payload = in.readRetainedSlice(n);
          args[i] = payload;
        } else {
          args[i] = fields[i].read(in);
        }
      }
      return (T) constructor.invokeExact(args);
    } catch (MalformedMessageException e) {
      release(payload);
      throw e;
    } catch (IndexOutOfBoundsException e) {
      release(payload);
      throw new MalformedMessageException(type.getSimpleName() + " is truncated");
    } catch (RuntimeException e) {
      release(payload);
      throw new MalformedMessageException(type.getSimpleName() + ": " + e.getMessage(), e);
    } catch (Throwable t) {
      release(payload);
      throw new MalformedMessageException(type.getSimpleName() + ": " + t, t);
    }
  }

  /** Where a payload comes from when its bytes are not in the frame. */
  interface PayloadSource {
    ByteBuf take(ByteBuf in, int length);
  }

  private static void release(ByteBuf b) {
    if (b != null) {
      b.release();
    }
  }
}
