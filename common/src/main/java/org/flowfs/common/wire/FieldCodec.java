package org.flowfs.common.wire;

import io.netty.buffer.ByteBuf;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Encodes and decodes one field of a wire record. Built once per record component from its Java
 * type; reference-typed fields may be null (encoded with a presence marker or a length + 1).
 */
abstract class FieldCodec {
  abstract void write(ByteBuf out, Object value);

  abstract Object read(ByteBuf in);

  static FieldCodec of(Type type, String where) {
    if (type instanceof Class<?> c) {
      if (c == long.class || c == Long.class) {
        return LONG;
      }
      if (c == int.class || c == Integer.class) {
        return INT;
      }
      if (c == short.class || c == Short.class) {
        return SHORT;
      }
      if (c == byte.class || c == Byte.class) {
        return BYTE;
      }
      if (c == boolean.class || c == Boolean.class) {
        return BOOL;
      }
      if (c == double.class || c == Double.class) {
        return DOUBLE;
      }
      if (c == String.class) {
        return STRING;
      }
      if (c == byte[].class) {
        return BYTES;
      }
      if (c == long[].class) {
        return LONGS;
      }
      if (c.isEnum()) {
        return new EnumCodec(c.getEnumConstants());
      }
      if (c.isRecord()) {
        return new NestedCodec(RecordCodec.of(c.asSubclass(Record.class)));
      }
    }
    if (type instanceof ParameterizedType p && p.getRawType() == List.class) {
      return new ListCodec(of(p.getActualTypeArguments()[0], where + "[]"));
    }
    if (type instanceof ParameterizedType p && p.getRawType() == Map.class
        && p.getActualTypeArguments()[0] == String.class) {
      return new MapCodec(of(p.getActualTypeArguments()[1], where + "{}"));
    }
    throw new IllegalArgumentException("no wire encoding for " + type + " at " + where);
  }

  // ---- varints: unsigned LEB128 -------------------------------------------------------------

  static void writeVarLong(ByteBuf out, long v) {
    while ((v & ~0x7FL) != 0) {
      out.writeByte((int) ((v & 0x7F) | 0x80));
      v >>>= 7;
    }
    out.writeByte((int) v);
  }

  static long readVarLong(ByteBuf in) {
    long v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      byte b = in.readByte();
      if (shift == 63 && (b & 0x7E) != 0) {
        throw new MalformedMessageException("varint overflows 64 bits");
      }
      v |= (long) (b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        return v;
      }
    }
    throw new MalformedMessageException("varint longer than 10 bytes");
  }

  /** Reads a length or count that must fit in what is left of the frame, or -1 for null. */
  static int readLength(ByteBuf in, int unit) {
    long n = readVarLong(in) - 1;
    if (n < -1 || n > in.readableBytes() / unit) { // not n * unit: that can overflow
      throw new MalformedMessageException("length " + n + " exceeds the frame");
    }
    return (int) n;
  }

  // ---- the codecs -----------------------------------------------------------------------------

  static final FieldCodec LONG = new FieldCodec() {
    void write(ByteBuf out, Object v) {
      out.writeLong((Long) v);
    }

    Object read(ByteBuf in) {
      return in.readLong();
    }
  };
  static final FieldCodec INT = new FieldCodec() {
    void write(ByteBuf out, Object v) {
      out.writeInt((Integer) v);
    }

    Object read(ByteBuf in) {
      return in.readInt();
    }
  };
  static final FieldCodec SHORT = new FieldCodec() {
    void write(ByteBuf out, Object v) {
      out.writeShort((Short) v);
    }

    Object read(ByteBuf in) {
      return in.readShort();
    }
  };
  static final FieldCodec BYTE = new FieldCodec() {
    void write(ByteBuf out, Object v) {
      out.writeByte((Byte) v);
    }

    Object read(ByteBuf in) {
      return in.readByte();
    }
  };
  static final FieldCodec BOOL = new FieldCodec() {
    void write(ByteBuf out, Object v) {
      out.writeBoolean((Boolean) v);
    }

    Object read(ByteBuf in) {
      byte b = in.readByte();
      if (b != 0 && b != 1) {
        throw new MalformedMessageException("boolean byte " + b);
      }
      return b == 1;
    }
  };
  static final FieldCodec DOUBLE = new FieldCodec() {
    void write(ByteBuf out, Object v) {
      out.writeDouble((Double) v);
    }

    Object read(ByteBuf in) {
      return in.readDouble();
    }
  };
  static final FieldCodec STRING = new FieldCodec() {
    void write(ByteBuf out, Object v) {
      if (v == null) {
        out.writeByte(0);
        return;
      }
      byte[] b = ((String) v).getBytes(StandardCharsets.UTF_8);
      writeVarLong(out, b.length + 1L);
      out.writeBytes(b);
    }

    Object read(ByteBuf in) {
      int n = readLength(in, 1);
      if (n < 0) {
        return null;
      }
      String s = in.toString(in.readerIndex(), n, StandardCharsets.UTF_8);
      in.skipBytes(n);
      return s;
    }
  };
  static final FieldCodec BYTES = new FieldCodec() {
    void write(ByteBuf out, Object v) {
      if (v == null) {
        out.writeByte(0);
        return;
      }
      byte[] b = (byte[]) v;
      writeVarLong(out, b.length + 1L);
      out.writeBytes(b);
    }

    Object read(ByteBuf in) {
      int n = readLength(in, 1);
      if (n < 0) {
        return null;
      }
      byte[] b = new byte[n];
      in.readBytes(b);
      return b;
    }
  };
  static final FieldCodec LONGS = new FieldCodec() {
    void write(ByteBuf out, Object v) {
      if (v == null) {
        out.writeByte(0);
        return;
      }
      long[] a = (long[]) v;
      writeVarLong(out, a.length + 1L);
      for (long x : a) {
        out.writeLong(x);
      }
    }

    Object read(ByteBuf in) {
      int n = readLength(in, 8);
      if (n < 0) {
        return null;
      }
      long[] a = new long[n];
      for (int i = 0; i < n; i++) {
        a[i] = in.readLong();
      }
      return a;
    }
  };

  private static final class EnumCodec extends FieldCodec {
    private final Object[] constants;

    EnumCodec(Object[] constants) {
      this.constants = constants;
    }

    void write(ByteBuf out, Object v) {
      out.writeByte(v == null ? 0 : ((Enum<?>) v).ordinal() + 1);
    }

    Object read(ByteBuf in) {
      int b = in.readUnsignedByte();
      if (b == 0) {
        return null;
      }
      if (b > constants.length) {
        throw new MalformedMessageException("enum value " + (b - 1) + " out of range");
      }
      return constants[b - 1];
    }
  }

  private static final class NestedCodec extends FieldCodec {
    private final RecordCodec<?> codec;

    NestedCodec(RecordCodec<?> codec) {
      if (codec.hasPayload()) {
        throw new IllegalArgumentException("a nested record cannot carry a payload");
      }
      this.codec = codec;
    }

    void write(ByteBuf out, Object v) {
      if (v == null) {
        out.writeByte(0);
      } else {
        out.writeByte(1);
        codec.encodeFields(v, out);
      }
    }

    Object read(ByteBuf in) {
      byte present = in.readByte();
      if (present == 0) {
        return null;
      }
      if (present != 1) {
        throw new MalformedMessageException("presence byte " + present);
      }
      return codec.decode(in);
    }
  }

  private static final class ListCodec extends FieldCodec {
    private final FieldCodec element;

    ListCodec(FieldCodec element) {
      this.element = element;
    }

    void write(ByteBuf out, Object v) {
      if (v == null) {
        out.writeByte(0);
        return;
      }
      List<?> l = (List<?>) v;
      writeVarLong(out, l.size() + 1L);
      for (Object o : l) {
        element.write(out, o);
      }
    }

    Object read(ByteBuf in) {
      int n = readLength(in, 1);
      if (n < 0) {
        return null;
      }
      List<Object> l = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        l.add(element.read(in));
      }
      return Collections.unmodifiableList(l);
    }
  }

  private static final class MapCodec extends FieldCodec {
    private final FieldCodec value;

    MapCodec(FieldCodec value) {
      this.value = value;
    }

    void write(ByteBuf out, Object v) {
      if (v == null) {
        out.writeByte(0);
        return;
      }
      Map<?, ?> m = (Map<?, ?>) v;
      writeVarLong(out, m.size() + 1L);
      for (Map.Entry<?, ?> e : m.entrySet()) {
        STRING.write(out, e.getKey());
        value.write(out, e.getValue());
      }
    }

    Object read(ByteBuf in) {
      int n = readLength(in, 2);
      if (n < 0) {
        return null;
      }
      Map<String, Object> m = new LinkedHashMap<>();
      for (int i = 0; i < n; i++) {
        m.put((String) STRING.read(in), value.read(in));
      }
      return Collections.unmodifiableMap(m);
    }
  }
}
