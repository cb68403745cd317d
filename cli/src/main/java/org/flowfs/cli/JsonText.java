package org.flowfs.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JSON the tools print with {@code --json}, and reads back from the mount's virtual extended
 * attributes: maps (kept in insertion order), lists, strings, numbers, booleans and null. Parsed
 * numbers are {@code Long} when integral, else {@code Double}.
 */
public final class JsonText {
  private JsonText() {}

  public static String write(Object v) {
    StringBuilder sb = new StringBuilder();
    write(sb, v);
    return sb.toString();
  }

  private static void write(StringBuilder sb, Object v) {
    if (v == null) {
      sb.append("null");
    } else if (v instanceof String s) {
      quote(sb, s);
    } else if (v instanceof Double d) {
      sb.append(d.isNaN() || d.isInfinite() ? "null" : String.format(java.util.Locale.ROOT, "%.3f", d));
    } else if (v instanceof Number || v instanceof Boolean) {
      sb.append(v);
    } else if (v instanceof Map<?, ?> m) {
      sb.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : m.entrySet()) {
        sb.append(first ? "" : ",");
        first = false;
        quote(sb, String.valueOf(e.getKey()));
        sb.append(':');
        write(sb, e.getValue());
      }
      sb.append('}');
    } else if (v instanceof Iterable<?> l) {
      sb.append('[');
      boolean first = true;
      for (Object o : l) {
        sb.append(first ? "" : ",");
        first = false;
        write(sb, o);
      }
      sb.append(']');
    } else {
      quote(sb, v.toString());
    }
  }

  private static void quote(StringBuilder sb, String s) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    sb.append('"');
  }

  /** Parses one JSON value; {@link IllegalArgumentException} names the offset of a syntax error. */
  public static Object parse(String text) {
    Parser p = new Parser(text);
    Object v = p.value();
    p.blank();
    if (p.i != text.length()) {
      throw p.fail("trailing characters");
    }
    return v;
  }

  /** {@link #parse} of a text that must be an object. */
  @SuppressWarnings("unchecked")
  public static Map<String, Object> object(String text) {
    Object v = parse(text);
    if (!(v instanceof Map)) {
      throw new IllegalArgumentException("not a JSON object: " + text);
    }
    return (Map<String, Object>) v;
  }

  private static final class Parser {
    final String s;
    int i;

    Parser(String s) {
      this.s = s;
    }

    IllegalArgumentException fail(String why) {
      return new IllegalArgumentException("JSON: " + why + " at offset " + i);
    }

    void blank() {
      while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
        i++;
      }
    }

    void expect(char c) {
      blank();
      if (i >= s.length() || s.charAt(i) != c) {
        throw fail("expected '" + c + "'");
      }
      i++;
    }

    Object value() {
      blank();
      if (i >= s.length()) {
        throw fail("unexpected end");
      }
      char c = s.charAt(i);
      switch (c) {
        case '{': {
          i++;
          Map<String, Object> m = new LinkedHashMap<>();
          blank();
          if (i < s.length() && s.charAt(i) == '}') {
            i++;
            return m;
          }
          do {
            blank();
            String k = string();
            expect(':');
            m.put(k, value());
            blank();
          } while (i < s.length() && s.charAt(i) == ',' && ++i > 0);
          expect('}');
          return m;
        }
        case '[': {
          i++;
          List<Object> l = new ArrayList<>();
          blank();
          if (i < s.length() && s.charAt(i) == ']') {
            i++;
            return l;
          }
          do {
            l.add(value());
            blank();
          } while (i < s.length() && s.charAt(i) == ',' && ++i > 0);
          expect(']');
          return l;
        }
        case '"':
          return string();
        default:
          if (s.startsWith("true", i)) {
            i += 4;
            return Boolean.TRUE;
          }
          if (s.startsWith("false", i)) {
            i += 5;
            return Boolean.FALSE;
          }
          if (s.startsWith("null", i)) {
            i += 4;
            return null;
          }
          return number();
      }
    }

    String string() {
      if (i >= s.length() || s.charAt(i) != '"') {
        throw fail("expected a string");
      }
      i++;
      StringBuilder sb = new StringBuilder();
      while (i < s.length()) {
        char c = s.charAt(i++);
        if (c == '"') {
          return sb.toString();
        }
        if (c != '\\') {
          sb.append(c);
          continue;
        }
        if (i >= s.length()) {
          break;
        }
        char e = s.charAt(i++);
        switch (e) {
          case 'n' -> sb.append('\n');
          case 't' -> sb.append('\t');
          case 'r' -> sb.append('\r');
          case 'b' -> sb.append('\b');
          case 'f' -> sb.append('\f');
          case 'u' -> {
            if (i + 4 > s.length()) {
              throw fail("short \\u escape");
            }
            sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
            i += 4;
          }
          default -> sb.append(e);
        }
      }
      throw fail("unterminated string");
    }

    Object number() {
      int start = i;
      while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
        i++;
      }
      String t = s.substring(start, i);
      if (t.isEmpty()) {
        throw fail("unexpected character '" + s.charAt(i) + "'");
      }
      try {
        return t.matches("-?\\d+") ? (Object) Long.parseLong(t) : (Object) Double.parseDouble(t);
      } catch (NumberFormatException e) {
        throw fail("bad number '" + t + "'");
      }
    }
  }
}
