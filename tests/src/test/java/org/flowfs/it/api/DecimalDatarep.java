package org.flowfs.it.api;

import io.netty.buffer.ByteBuf;
import java.nio.charset.StandardCharsets;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.flowfs.common.datarep.Datarep;
import org.flowfs.common.datarep.DatarepRegistry;
import org.flowfs.common.datarep.NativeOrder;
import org.flowfs.common.datarep.Typemap;
import org.flowfs.common.request.Elementary;

/**
 * A user datarep for the tests: 32-bit ints stored as fixed-width decimal text, 11 bytes each
 * ({@code "        -42"}). Its extra state records every conversion call.
 */
final class DecimalDatarep {
  static final int WIDTH = 11;

  /** One call of a conversion function. */
  record Call(boolean write, int count, long position) {}

  /** The extra state: the calls, in order. */
  static final class Log {
    final Queue<Call> calls = new ConcurrentLinkedQueue<>();
  }

  private DecimalDatarep() {}

  static Datarep register(DatarepRegistry registry, String name, Log log) {
    return registry.register(name, DecimalDatarep::read, DecimalDatarep::write, DecimalDatarep::extent, log);
  }

  static long extent(Elementary type, Log log) {
    return type == Elementary.INT32 ? WIDTH : type.size();
  }

  static void write(ByteBuf user, org.flowfs.common.request.Request type, int count, ByteBuf file, long position, Log log) {
    log.calls.add(new Call(true, count, position));
    Typemap.forEach(type, position, count, (off, e) -> {
      if (e != Elementary.INT32) {
        throw new IllegalArgumentException("decimal stores int32 only, not " + e.typeName());
      }
      String s = String.format("%" + WIDTH + "d", NativeOrder.getInt(user, (int) off));
      file.writeBytes(s.getBytes(StandardCharsets.US_ASCII));
      return true;
    });
  }

  static void read(ByteBuf user, org.flowfs.common.request.Request type, int count, ByteBuf file, long position, Log log) {
    log.calls.add(new Call(false, count, position));
    Typemap.forEach(type, position, count, (off, e) -> {
      CharSequence s = file.readCharSequence(WIDTH, StandardCharsets.US_ASCII);
      NativeOrder.setInt(user, (int) off, Integer.parseInt(s.toString().trim()));
      return true;
    });
  }
}
