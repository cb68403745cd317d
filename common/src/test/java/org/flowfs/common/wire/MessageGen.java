package org.flowfs.common.wire;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.flowfs.common.FsException;

/**
 * Random valid instances of wire records, built by reflection over their components: any record
 * type the codecs support, without knowing the messages. A candidate the compact constructor
 * refuses (IllegalArgumentException, FsException, or NullPointerException for a null it does not
 * accept) is dropped and generated again; values are biased towards the limits (0, -1, extremes,
 * names of 255 bytes) so that refusals are common enough to matter but rarely exhaust the retries.
 *
 * <p>Payload components are allocated from {@link ByteBufAllocator#DEFAULT}; the caller owns them.
 * Not thread safe (one per {@link Random}).
 */
final class MessageGen {
  private static final int ATTEMPTS = 10_000;
  /** Code points of names: ASCII but '/' and NUL, and some of 2, 3 and 4 UTF-8 bytes. */
  private static final int[] EXOTIC = {0xE9, 0x3A9, 0x4E2D, 0x6587, 0x1F600, 0x10FFFF, 0xFFFD, 0x7F, 0x1};

  private final Random r;

  MessageGen(Random r) {
    this.r = r;
  }

  /** A valid instance of record {@code type}. */
  <T> T instance(Class<T> type) {
    if (!type.isRecord()) {
      throw new IllegalArgumentException(type + " is not a record");
    }
    for (int i = 0; i < ATTEMPTS; i++) {
      T t = attempt(type);
      if (t != null) {
        return t;
      }
    }
    throw new AssertionError("no valid " + type.getSimpleName() + " in " + ATTEMPTS + " attempts");
  }

  private <T> T attempt(Class<T> type) {
    RecordComponent[] comps = type.getRecordComponents();
    Object[] args = new Object[comps.length];
    Class<?>[] types = new Class<?>[comps.length];
    for (int i = 0; i < comps.length; i++) {
      types[i] = comps[i].getType();
      args[i] = value(comps[i].getGenericType());
    }
    try {
      Constructor<T> c = type.getDeclaredConstructor(types);
      return c.newInstance(args);
    } catch (InvocationTargetException e) {
      for (Object a : args) {
        if (a instanceof ByteBuf b) {
          b.release();
        }
      }
      Throwable c = e.getCause();
      if (c instanceof IllegalArgumentException || c instanceof FsException || c instanceof NullPointerException) {
        return null;
      }
      throw new AssertionError(type.getSimpleName() + " constructor failed unexpectedly", c);
    } catch (ReflectiveOperationException e) {
      throw new AssertionError(e);
    }
  }

  private Object value(Type t) {
    if (t instanceof Class<?> c) {
      return value(c);
    }
    if (t instanceof ParameterizedType p && p.getRawType() == List.class) {
      if (r.nextInt(10) == 0) {
        return null;
      }
      Type e = p.getActualTypeArguments()[0];
      int n = r.nextInt(8) == 0 ? r.nextInt(64) : r.nextInt(6);
      List<Object> l = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        l.add(element(e));
      }
      return l;
    }
    if (t instanceof ParameterizedType p && p.getRawType() == Map.class) {
      if (r.nextInt(10) == 0) {
        return null;
      }
      Type v = p.getActualTypeArguments()[1];
      int n = r.nextInt(6);
      Map<Object, Object> m = new LinkedHashMap<>();
      for (int i = 0; i < n; i++) {
        m.put(name(), element(v));
      }
      return m;
    }
    throw new IllegalArgumentException("cannot generate " + t);
  }

  /** An element of a list or a value of a map (boxed numbers are never null: they have no null encoding). */
  private Object element(Type t) {
    return value(t);
  }

  private Object value(Class<?> c) {
    if (c == long.class || c == Long.class) {
      return aLong();
    }
    if (c == int.class || c == Integer.class) {
      return anInt();
    }
    if (c == short.class || c == Short.class) {
      return (short) anInt();
    }
    if (c == byte.class || c == Byte.class) {
      return (byte) anInt();
    }
    if (c == boolean.class || c == Boolean.class) {
      return r.nextBoolean();
    }
    if (c == double.class || c == Double.class) {
      double[] special = {0.0, -0.0, Double.NaN, Double.MAX_VALUE, Double.MIN_VALUE, Double.NEGATIVE_INFINITY};
      return r.nextInt(4) == 0 ? special[r.nextInt(special.length)] : r.nextGaussian() * 1e6;
    }
    if (c == ByteBuf.class) {
      return payload();
    }
    if (r.nextInt(10) == 0) {
      return null; // every reference type has a null encoding
    }
    if (c == String.class) {
      return string();
    }
    if (c == byte[].class) {
      byte[] b = new byte[r.nextInt(8) == 0 ? r.nextInt(3000) : r.nextInt(40)];
      r.nextBytes(b);
      return b;
    }
    if (c == long[].class) {
      long[] a = new long[r.nextInt(8) == 0 ? r.nextInt(300) : r.nextInt(8)];
      for (int i = 0; i < a.length; i++) {
        a[i] = aLong();
      }
      return a;
    }
    if (c.isEnum()) {
      Object[] k = c.getEnumConstants();
      return k[r.nextInt(k.length)];
    }
    if (c.isRecord()) {
      return instance(c);
    }
    throw new IllegalArgumentException("cannot generate " + c);
  }

  private long aLong() {
    switch (r.nextInt(5)) {
      case 0:
        long[] edges = {0, 1, -1, Long.MIN_VALUE, Long.MAX_VALUE, 1L << 48, (1L << 48) - 1, Integer.MAX_VALUE + 1L};
        return edges[r.nextInt(edges.length)];
      case 1:
        return r.nextLong();
      case 2:
        return r.nextInt(1 << 20);
      default:
        return r.nextLong() & Long.MAX_VALUE;
    }
  }

  private int anInt() {
    switch (r.nextInt(4)) {
      case 0:
        int[] edges = {0, 1, -1, Integer.MIN_VALUE, Integer.MAX_VALUE, 07777, 4096, 65536};
        return edges[r.nextInt(edges.length)];
      case 1:
        return r.nextInt();
      default:
        return r.nextInt(4096);
    }
  }

  private String string() {
    switch (r.nextInt(10)) {
      case 0:
        return "";
      case 1:
      case 2:
        return anyText(r.nextInt(8) == 0 ? r.nextInt(5000) : r.nextInt(40));
      default:
        return name();
    }
  }

  /** A valid directory entry name: 1..255 bytes of UTF-8, no '/' or NUL; sometimes exactly 255 bytes. */
  String name() {
    int budget = switch (r.nextInt(10)) {
      case 0 -> 255;
      case 1 -> 1 + r.nextInt(255);
      default -> 1 + r.nextInt(24);
    };
    StringBuilder sb = new StringBuilder();
    int bytes = 0;
    while (bytes < budget) {
      int cp = r.nextInt(4) == 0 ? EXOTIC[r.nextInt(EXOTIC.length)] : 0x20 + r.nextInt(0x5F);
      if (cp == '/') {
        cp = '_';
      }
      int n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
      if (bytes + n > budget) {
        cp = 'z';
        n = 1;
      }
      sb.appendCodePoint(cp);
      bytes += n;
    }
    String s = sb.toString();
    return s.equals(".") || s.equals("..") ? "dot" : s;
  }

  /** Any valid Unicode text, '/' and NUL included (no lone surrogates: those have no UTF-8 form). */
  private String anyText(int codePoints) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < codePoints; i++) {
      int cp;
      do {
        cp = r.nextInt(4) == 0 ? r.nextInt(0x110000) : r.nextInt(0x80);
      } while (cp >= 0xD800 && cp <= 0xDFFF);
      sb.appendCodePoint(cp);
    }
    return sb.toString();
  }

  /** A pooled buffer of random bytes, sometimes with a non-zero reader index. */
  private ByteBuf payload() {
    int skip = r.nextInt(4) == 0 ? r.nextInt(16) : 0;
    int n = r.nextInt(6) == 0 ? r.nextInt(70_000) : r.nextInt(64);
    byte[] b = new byte[skip + n];
    r.nextBytes(b);
    ByteBuf buf = ByteBufAllocator.DEFAULT.buffer(b.length);
    buf.writeBytes(b);
    buf.skipBytes(skip);
    return buf;
  }
}
