package org.flowfs.it;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Handle;
import org.flowfs.common.request.Request;
import org.flowfs.common.wire.Envelope;
import org.flowfs.common.wire.FrameDecoder;
import org.flowfs.common.wire.Frames;
import org.flowfs.common.wire.IoOp;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.MessageRegistry;
import org.flowfs.common.wire.MetaOp;
import org.flowfs.common.wire.Req;
import org.flowfs.common.wire.RequestSpec;

/**
 * Hostile inputs for a server port, as bytes: random bytes, frames with bad length fields,
 * versions, kinds and type ids, truncated frames, and frames of real message types whose fields
 * are written at the wire level with values a correct client would never send (negative offsets,
 * huge counts, handle 0 and handles of other servers, names with '/' or NUL, invalid UTF-8, lists
 * that claim more elements than the frame holds, absurd request trees). The field encoding is
 * written here from the wire format's description (varint lengths + 1, presence bytes), not
 * through the codecs, so values the records' constructors refuse can be sent too.
 *
 * <p>Most fields get a plausible value and some a hostile one, so a good share of the frames
 * decode and reach the handlers: {@link #expect} says, by decoding the frame with the real decoder,
 * what the server must do with it. Not thread safe: one per thread.
 */
final class HostileFrames {
  static final MessageRegistry REG = MessageRegistry.DEFAULT;

  /** The server kinds, and what each serves. */
  enum Role {
    META,
    IO;

    boolean serves(Class<?> type) {
      if (!Req.class.isAssignableFrom(type)) {
        return false;
      }
      if (type == org.flowfs.common.wire.CommonOp.PingReq.class || type == org.flowfs.common.wire.CommonOp.StatsReq.class) {
        return true;
      }
      return this == META ? MetaOp.class.isAssignableFrom(type) : IoOp.class.isAssignableFrom(type);
    }
  }

  /** What a server must do with a frame sent after the handshake. */
  enum Expect {
    /** Answer it (with its response or an errno) and keep the connection. */
    ANSWER,
    /** Drop it and keep the connection (I/O servers drop flow frames for flows they do not know). */
    DROP,
    /** Close the connection. */
    CLOSE
  }

  private final Random r;
  private final Role role;
  private final int maxFrame;
  private final List<Handle> handles;
  private final List<Handle> dirs;
  private final int ioServers;
  private final List<Class<?>> requestTypes;
  private final List<Class<?>> allTypes;
  private final List<Class<?>> readOnly;

  /**
   * @param handles handles of objects the fuzzer may damage (its own files, or their datafiles)
   * @param dirs directories the fuzzer may create in (metadata server only)
   */
  HostileFrames(Random r, Role role, int maxFrame, List<Handle> handles, List<Handle> dirs, int ioServers) {
    this.r = r;
    this.role = role;
    this.maxFrame = maxFrame;
    this.handles = handles;
    this.dirs = dirs;
    this.ioServers = ioServers;
    // every type, but those a server answers only after a timeout (tested on their own) or only
    // after walking everything it stores
    this.allTypes = REG.types().stream()
        .filter(t -> t != IoOp.EagerWriteReq.class && !t.getSimpleName().startsWith("Fsck")).toList();
    List<Class<?>> req = new ArrayList<>();
    for (Class<?> t : this.allTypes) {
      // fsck walks the whole namespace: an operator's request, too slow to send thousands of
      if (role.serves(t)) {
        // requests that sync a disk or list every datafile come a tenth as often as the others:
        // slow, and no more interesting
        boolean syncs = t == IoOp.SyncReq.class || t == IoOp.PrecreateReq.class || t == MetaOp.MetaSyncReq.class
            || t == IoOp.ListReq.class;
        for (int i = syncs ? 9 : 0; i < 10; i++) {
          req.add(t);
        }
      }
    }
    this.requestTypes = req;
    List<Class<?>> ro = new ArrayList<>();
    for (Class<?> t : req) {
      String n = t.getSimpleName();
      if (n.startsWith("Lookup") || n.startsWith("Getattr") || n.startsWith("Readlink") || n.startsWith("Readdir")
          || n.startsWith("Getxattr") || n.startsWith("Listxattr") || n.endsWith("StatfsReq") || n.startsWith("Ping")
          || n.startsWith("Stats") || n.equals("ReadReq") || n.equals("SizesReq") || n.equals("ListReq")) {
        ro.add(t);
      }
    }
    this.readOnly = ro;
  }

  // ---- whole inputs -------------------------------------------------------------------------

  /** Random bytes, sometimes behind a plausible length field. */
  byte[] randomBytes() {
    int n = r.nextInt(8) == 0 ? r.nextInt(4096) : r.nextInt(64);
    byte[] b = new byte[n];
    r.nextBytes(b);
    if (n >= 4 && r.nextBoolean()) {
      int len = r.nextBoolean() ? n - 4 : r.nextInt(n + 64);
      b[0] = (byte) (len >>> 24);
      b[1] = (byte) (len >>> 16);
      b[2] = (byte) (len >>> 8);
      b[3] = (byte) len;
    }
    return b;
  }

  /** A length field the server must refuse at once (or wait for, if below the limit), then a few bytes. */
  byte[] oversizedLength() {
    long[] lengths = {0xFFFFFFFFL, 0x80000000L, 0x7FFFFFFFL, maxFrame, maxFrame - 3L, maxFrame + 1L, 1L << 30,
        Frames.HEADER + 1_000_000L};
    long len = lengths[r.nextInt(lengths.length)];
    ByteBuf b = Unpooled.buffer();
    b.writeInt((int) len).writeByte(Frames.VERSION).writeByte(0).writeShort(anyType()).writeLong(r.nextLong());
    b.writeZero(r.nextInt(32));
    return bytes(b);
  }

  /** A frame with a type id nobody registered, a wrong version, or a wrong kind. */
  byte[] badHeader() {
    int version = Frames.VERSION;
    int kind = 0;
    int type = REG.idOf(requestTypes.get(r.nextInt(requestTypes.size())));
    switch (r.nextInt(3)) {
      case 0 -> type = unknownType();
      case 1 -> version = pick(0, 2, 3, 0x7F, 0xFF);
      default -> kind = 3 + r.nextInt(253);
    }
    ByteBuf b = Unpooled.buffer();
    b.writeInt(0).writeByte(version).writeByte(kind).writeShort(type).writeLong(r.nextLong());
    b.writeBytes(randomBody(r.nextInt(48)));
    b.setInt(0, b.readableBytes() - 4);
    return bytes(b);
  }

  /** A frame of a real request type, cut short (the length field says less, or the bytes stop). */
  byte[] truncated(boolean keepLengthField) {
    byte[] whole = request(0, r.nextLong() & 0xFFFF);
    if (whole.length <= Frames.LENGTH_FIELD + 1) {
      return whole;
    }
    int keep = Frames.LENGTH_FIELD + r.nextInt(whole.length - Frames.LENGTH_FIELD - 1);
    byte[] cut = java.util.Arrays.copyOf(whole, keep);
    if (!keepLengthField) {
      int len = keep - Frames.LENGTH_FIELD;
      cut[0] = (byte) (len >>> 24);
      cut[1] = (byte) (len >>> 16);
      cut[2] = (byte) (len >>> 8);
      cut[3] = (byte) len;
    }
    return cut;
  }

  /**
   * A valid frame of a read-only type with a few bytes changed after the length field. (Read-only:
   * a flipped bit in a handle of a modifying request could hit another member's file, which a
   * member may do, but which would spoil the test's own check on its bystander.)
   */
  byte[] mutated(long id) {
    byte[] b = frame(readOnly.get(r.nextInt(readOnly.size())), 0, id, 0);
    int flips = 1 + r.nextInt(4);
    for (int i = 0; i < flips && b.length > Frames.LENGTH_FIELD; i++) {
      int at = Frames.LENGTH_FIELD + r.nextInt(b.length - Frames.LENGTH_FIELD);
      b[at] = r.nextInt(3) == 0 ? (byte) (b[at] ^ (1 << r.nextInt(8))) : (byte) r.nextInt(256);
    }
    return b;
  }

  /**
   * A frame of a request type this server serves (or, rarely, any other type or kind), fields
   * mostly plausible, some hostile. {@code hostility} 0..100: the chance in percent of a field
   * being hostile.
   */
  byte[] request(int hostility, long id) {
    Class<?> type;
    int kind = 0;
    int roll = r.nextInt(100);
    if (roll < 3) {
      type = allTypes.get(r.nextInt(allTypes.size()));
    } else if (roll < 5) {
      type = requestTypes.get(r.nextInt(requestTypes.size()));
      kind = 1 + r.nextInt(2);
    } else {
      type = requestTypes.get(r.nextInt(requestTypes.size()));
    }
    return frame(type, kind, id, hostility);
  }

  /** A frame of {@code type}, kind {@code kind}, fields generated with {@code hostility}. */
  byte[] frame(Class<?> type, int kind, long id, int hostility) {
    ByteBuf b = Unpooled.buffer();
    b.writeInt(0).writeByte(Frames.VERSION).writeByte(kind).writeShort(REG.idOf(type)).writeLong(id);
    writeRecord(b, type, hostility, 0);
    b.setInt(0, b.readableBytes() - 4);
    return bytes(b);
  }

  /** What the server must do with {@code frame} once the connection is authenticated. */
  Expect expect(byte[] frame) {
    if (frame.length < Frames.LENGTH_FIELD) {
      return Expect.CLOSE; // never completes: treated as the end of the connection
    }
    long len = ((frame[0] & 0xFFL) << 24) | ((frame[1] & 0xFF) << 16) | ((frame[2] & 0xFF) << 8) | (frame[3] & 0xFF);
    if (len + Frames.LENGTH_FIELD != frame.length || frame.length > maxFrame) {
      return Expect.CLOSE;
    }
    ByteBuf body = Unpooled.wrappedBuffer(frame, Frames.LENGTH_FIELD, frame.length - Frames.LENGTH_FIELD);
    Envelope env;
    try {
      env = new FrameDecoder(REG, maxFrame).decodeFrame(body);
    } catch (RuntimeException e) {
      return Expect.CLOSE;
    } finally {
      body.release();
    }
    env.release();
    Message m = env.message();
    if (env.kind() == Envelope.Kind.REQUEST) {
      return role.serves(m.getClass()) ? Expect.ANSWER : Expect.CLOSE;
    }
    // one-way frames: the metadata server takes none; an I/O server drops flow frames it has no
    // flow for, and closes on eager data no write waits for
    if (role == Role.IO && !(m instanceof IoOp.EagerData)) {
      return Expect.DROP;
    }
    return Expect.CLOSE;
  }

  // ---- fields -------------------------------------------------------------------------------

  private void writeRecord(ByteBuf b, Class<?> type, int hostility, int depth) {
    if (type == Handle.class) {
      b.writeLong(handleId(hostility));
      return;
    }
    if (type == RequestSpec.class) {
      writeRequestSpec(b, hostility);
      return;
    }
    if (type == DistSpec.class) {
      writeDist(b, hostility);
      return;
    }
    for (RecordComponent c : type.getRecordComponents()) {
      writeField(b, type, c.getName(), c.getGenericType(), hostility, depth);
    }
  }

  private void writeField(ByteBuf b, Class<?> owner, String name, Type t, int hostility, int depth) {
    boolean bad = r.nextInt(100) < hostility;
    if (t instanceof Class<?> c) {
      if (c == long.class || c == Long.class) {
        // a reservation of a hostile size is refused (ENOSPC) when larger than the disk's free
        // space, but one that fits takes it for as long as the file lives: such lengths would fill
        // the test machine's disk. FileBStreamStoreTest refuses the oversized ones.
        boolean fills = owner == IoOp.AllocateReq.class && name.equals("length");
        b.writeLong(bad && !fills ? hostileLong() : plausibleLong(owner, name));
      } else if (c == int.class || c == Integer.class) {
        b.writeInt(bad ? hostileInt() : plausibleInt(owner, name));
      } else if (c == short.class || c == Short.class) {
        b.writeShort(r.nextInt());
      } else if (c == byte.class || c == Byte.class) {
        b.writeByte(r.nextInt());
      } else if (c == boolean.class || c == Boolean.class) {
        b.writeByte(bad ? pick(2, 0x80, 0xFF) : r.nextInt(2));
      } else if (c == double.class || c == Double.class) {
        b.writeDouble(r.nextDouble());
      } else if (c == String.class) {
        writeString(b, bad, name);
      } else if (c == byte[].class) {
        writeBytesField(b, bad, owner);
      } else if (c == long[].class) {
        writeLongs(b, bad);
      } else if (c == ByteBuf.class) {
        writePayload(b, bad);
      } else if (c.isEnum()) {
        int n = c.getEnumConstants().length;
        b.writeByte(bad ? pick(0, n + 1, 0xFF) : 1 + r.nextInt(n));
      } else if (c.isRecord()) {
        if (bad && r.nextInt(3) == 0) {
          b.writeByte(pick(0, 2, 0xFF)); // null, or a presence byte that is neither 0 nor 1
        } else {
          b.writeByte(1);
          writeRecord(b, c, hostility, depth + 1);
        }
      } else {
        throw new IllegalArgumentException("no generator for " + c);
      }
      return;
    }
    if (t instanceof ParameterizedType p && p.getRawType() == List.class) {
      Type e = p.getActualTypeArguments()[0];
      if (bad && r.nextBoolean()) {
        // claims more elements than the frame can hold, or a count past any limit
        writeVarLong(b, pickLong(1L << 31, 0xFFFFFFFFL, Long.MAX_VALUE, 65538, 1L << 40));
        b.writeBytes(randomBody(r.nextInt(16)));
        return;
      }
      int n = bad ? pick(65537, 70000) : r.nextInt(6);
      if (e == Handle.class && n > 10000) {
        writeVarLong(b, n + 1L);
        for (int i = 0; i < n; i++) {
          b.writeByte(1).writeLong(handleId(hostility));
        }
        return;
      }
      n = Math.min(n, 8);
      writeVarLong(b, n + 1L);
      for (int i = 0; i < n; i++) {
        writeField(b, owner, name + "[]", e, hostility, depth + 1);
      }
      return;
    }
    if (t instanceof ParameterizedType p && p.getRawType() == Map.class) {
      int n = r.nextInt(4);
      writeVarLong(b, n + 1L);
      for (int i = 0; i < n; i++) {
        writeString(b, bad, "key");
        writeField(b, owner, name + "{}", p.getActualTypeArguments()[1], hostility, depth + 1);
      }
      return;
    }
    throw new IllegalArgumentException("no generator for " + t);
  }

  private long handleId(int hostility) {
    if (r.nextInt(100) >= hostility && !handles.isEmpty()) {
      List<Handle> from = !dirs.isEmpty() && r.nextBoolean() ? dirs : handles;
      return from.get(r.nextInt(from.size())).id();
    }
    return switch (r.nextInt(9)) {
      case 0 -> 0; // reserved
      case 1 -> -1;
      case 2 -> Long.MIN_VALUE;
      case 3 -> Handle.of(0xFFFF, Handle.LOCAL_MASK).id(); // a server nobody runs
      case 4 -> Handle.of(200 + r.nextInt(1000), 1 + r.nextInt(1000)).id();
      case 5 -> Handle.of(r.nextInt(1 + ioServers), (1L << 40) + r.nextInt(1 << 20)).id(); // never issued
      case 6 -> Handle.of(role == Role.META ? 1 : 0, 1 + r.nextInt(4)).id(); // the other kind of server's
      case 7 -> r.nextLong();
      default -> (long) r.nextInt(1 + ioServers) << Handle.LOCAL_BITS; // local part 0
    };
  }

  private long plausibleLong(Class<?> owner, String name) {
    return switch (name) {
      case "aggregateSize" -> r.nextInt(4) == 0 ? 0 : r.nextInt(256 * 1024);
      case "fsize" -> r.nextInt(4) == 0 ? 0 : r.nextInt(128 * 1024);
      case "fileReqOffset", "offset" -> r.nextInt(4) == 0 ? 0 : r.nextInt(1 << 20);
      case "size" -> r.nextInt(1 << 20);
      case "tag" -> r.nextInt(1000);
      case "cursor" -> r.nextInt(100);
      default -> r.nextInt(1 << 16);
    };
  }

  private int plausibleInt(Class<?> owner, String name) {
    return switch (name) {
      case "count" -> 1 + r.nextInt(owner == IoOp.PrecreateReq.class ? 32 : 64);
      case "max" -> 1 + r.nextInt(r.nextInt(20) == 0 ? 4096 : 64);
      case "length" -> r.nextInt(65536);
      case "mode" -> pick(0644, 0755, 0600, 07777, 0);
      case "serverNr" -> r.nextInt(Math.max(1, ioServers));
      case "serverCount" -> ioServers;
      case "servers" -> r.nextInt(ioServers + 1);
      case "mask" -> r.nextInt(1024);
      case "errno" -> r.nextInt(150);
      default -> r.nextInt(4096);
    };
  }

  private long hostileLong() {
    return pickLong(-1, Long.MIN_VALUE, Long.MAX_VALUE, 1L << 62, (1L << 62) + 1, 1L << 40, Long.MAX_VALUE - 1,
        -(1L << 40), r.nextLong(), 0xFFFFFFFFL);
  }

  private int hostileInt() {
    return pick(-1, Integer.MIN_VALUE, Integer.MAX_VALUE, 0, 65536, 65537, 1 << 30, 4097, r.nextInt());
  }

  private void writeString(ByteBuf b, boolean bad, String name) {
    if (!bad) {
      byte[] s = name("key".equals(name) || "name".equals(name) && r.nextInt(3) == 0 ? "user." : "");
      writeVarLong(b, s.length + 1L);
      b.writeBytes(s);
      return;
    }
    switch (r.nextInt(10)) {
      case 0 -> b.writeByte(0); // null
      case 1 -> writeVarLong(b, 1); // empty
      case 2 -> { // a claimed length far past the frame
        writeVarLong(b, pickLong(1L << 31, 1L << 40, Long.MAX_VALUE, 0xFFFFFFFFL));
        b.writeBytes(name(""));
      }
      case 3 -> { // invalid UTF-8
        byte[] s = {(byte) 0xFF, (byte) 0xFE, 'a', (byte) 0xC0, (byte) 0x80, (byte) 0xED, (byte) 0xA0, (byte) 0x80};
        writeVarLong(b, s.length + 1L);
        b.writeBytes(s);
      }
      case 4 -> { // too long for a name
        byte[] s = new byte[pick(256, 1000, 4096, 5000)];
        java.util.Arrays.fill(s, (byte) 'x');
        writeVarLong(b, s.length + 1L);
        b.writeBytes(s);
      }
      case 5 -> { // a varint that overflows
        for (int i = 0; i < 10; i++) {
          b.writeByte(0xFF);
        }
        b.writeByte(0x01);
      }
      default -> {
        String[] evil = {"a/b", "/", "..", ".", "../../../etc/passwd", "a\0b", "\0", "x/..", "ok\0/", "//",
            "/tmp/x", "..\0"};
        byte[] s = evil[r.nextInt(evil.length)].getBytes(StandardCharsets.UTF_8);
        writeVarLong(b, s.length + 1L);
        b.writeBytes(s);
      }
    }
  }

  private byte[] name(String prefix) {
    int n = 1 + r.nextInt(r.nextInt(10) == 0 ? 250 - prefix.length() : 12);
    StringBuilder sb = new StringBuilder(prefix);
    for (int i = 0; i < n; i++) {
      sb.append((char) ('a' + r.nextInt(26)));
    }
    return sb.toString().getBytes(StandardCharsets.UTF_8);
  }

  private void writeBytesField(ByteBuf b, boolean bad, Class<?> owner) {
    if (bad) {
      if (r.nextBoolean()) {
        writeVarLong(b, pickLong(1L << 31, Long.MAX_VALUE, 70000, 0xFFFFFFFFL));
        b.writeBytes(randomBody(r.nextInt(16)));
      } else {
        int n = pick(65537, 100_000);
        writeVarLong(b, n + 1L);
        b.writeZero(n);
      }
      return;
    }
    int n = owner.getSimpleName().startsWith("Auth") ? 32 : r.nextInt(r.nextInt(10) == 0 ? 65536 : 64);
    writeVarLong(b, n + 1L);
    b.writeBytes(randomBody(n));
  }

  private void writeLongs(ByteBuf b, boolean bad) {
    if (bad) {
      writeVarLong(b, pickLong(1L << 31, Long.MAX_VALUE, 1L << 28, 0xFFFFFFFFL));
      b.writeBytes(randomBody(r.nextInt(64)));
      return;
    }
    int n = r.nextInt(5);
    writeVarLong(b, n + 1L);
    for (int i = 0; i < n; i++) {
      b.writeLong(r.nextInt(8) == 0 ? hostileLong() : r.nextInt(4096));
    }
  }

  private void writePayload(ByteBuf b, boolean bad) {
    if (bad) {
      switch (r.nextInt(3)) {
        case 0 -> b.writeInt(-1 - r.nextInt(1000));
        case 1 -> b.writeInt(maxFrame + r.nextInt(1000));
        default -> {
          b.writeInt(1000);
          b.writeBytes(randomBody(r.nextInt(999)));
        }
      }
      return;
    }
    int n = r.nextInt(8) == 0 ? r.nextInt(64 * 1024) : r.nextInt(4096);
    b.writeInt(n);
    b.writeBytes(randomBody(n));
  }

  private void writeDist(ByteBuf b, int hostility) {
    boolean bad = r.nextInt(100) < hostility;
    String name;
    List<Long> params = new ArrayList<>();
    if (!bad) {
      switch (r.nextInt(3)) {
        case 0 -> {
          name = "simple_stripe";
          params.add((long) pick(4096, 65536, 1 << 20));
        }
        case 1 -> name = "basic_dist";
        default -> {
          name = "var_strip";
          params.add(65536L);
          params.add(4096L);
        }
      }
    } else {
      switch (r.nextInt(7)) {
        case 0 -> {
          name = "simple_stripe";
          params.add(pickLong(0, -1, 1, Long.MAX_VALUE, Long.MIN_VALUE, 3));
        }
        case 1 -> {
          name = "var_strip";
          int n = pick(0, 1, 1024);
          for (int i = 0; i < n; i++) {
            params.add(pickLong(1, 0, -1, Long.MAX_VALUE / 2));
          }
        }
        case 2 -> name = pick2("", "nope", "x".repeat(65), "../dist", "basic_dist\0");
        case 3 -> {
          name = "simple_stripe";
          params.add(1L);
          params.add(2L);
        }
        case 4 -> {
          name = "basic_dist";
          params.add(7L);
        }
        case 5 -> {
          name = "simple_stripe";
          params.add(1L); // one-byte strips: the most work per byte
        }
        default -> {
          name = "var_strip";
          for (int i = 0; i < 1025; i++) {
            params.add(1L);
          }
        }
      }
    }
    byte[] n = name.getBytes(StandardCharsets.UTF_8);
    writeVarLong(b, n.length + 1L);
    b.writeBytes(n);
    writeVarLong(b, params.size() + 1L);
    for (long p : params) {
      b.writeLong(p);
    }
  }

  // ---- request trees (RequestSpec) --------------------------------------------------------------

  private void writeRequestSpec(ByteBuf b, int hostility) {
    if (r.nextInt(100) >= hostility) {
      writeNodes(b, plausibleRequest());
      return;
    }
    switch (r.nextInt(6)) {
      case 0 -> writeNodes(b, doublingChains(4 + r.nextInt(24), 4000)); // flattening that multiplies
      case 1 -> writeNodes(b, randomNodes(1 + r.nextInt(r.nextBoolean() ? 16 : 4096)));
      case 2 -> { // more nodes than allowed, or a count past the frame
        writeVarLong(b, r.nextBoolean() ? 4098 : (1L << 31));
        b.writeBytes(randomBody(r.nextInt(64)));
      }
      case 3 -> writeNodes(b, List.of()); // none
      case 4 -> writeNodes(b, deepChain(4096)); // as deep as allowed
      default -> { // a plausible tree tiled an absurd number of times
        List<RequestSpec.Node> nodes = new ArrayList<>(plausibleRequest());
        int last = nodes.size() - 1;
        nodes.add(new RequestSpec.Node(Request.Combiner.CONTIGUOUS, null, pickLong(1L << 40, Long.MAX_VALUE, 1L << 62), 0, 0,
            null, null, new long[] {last}, null, null, null, null));
        writeNodes(b, nodes);
      }
    }
  }

  private List<RequestSpec.Node> plausibleRequest() {
    Request q = switch (r.nextInt(6)) {
      case 0 -> Request.BYTE;
      case 1 -> Request.contiguous(1 + r.nextInt(4096), Request.BYTE);
      case 2 -> Request.vector(1 + r.nextInt(64), 1 + r.nextInt(16), 17 + r.nextInt(64), Request.INT32);
      case 3 -> Request.hindexed(new long[] {3, 1, 7}, new long[] {0, 100, 5000}, Request.BYTE);
      case 4 -> Request.struct(new long[] {1, 2}, new long[] {0, 64}, Request.INT64, Request.vector(4, 1, 2, Request.BYTE));
      default -> Request.resized(0, 1 << 16, Request.bytes(1 + r.nextInt(1 << 16)));
    };
    return RequestSpec.of(q).nodes();
  }

  /** Chains in which every node is a struct of two copies of the node before it. */
  private static List<RequestSpec.Node> doublingChains(int depth, int total) {
    List<RequestSpec.Node> nodes = new ArrayList<>();
    nodes.add(named());
    while (nodes.size() + depth < total) {
      int prev = 0;
      for (int i = 1; i <= depth; i++) {
        nodes.add(new RequestSpec.Node(Request.Combiner.STRUCT, null, 0, 0, 0, new long[] {1, 1},
            new long[] {0, 1L << Math.min(i + 1, 40)}, new long[] {prev, prev}, null, null, null, null));
        prev = nodes.size() - 1;
      }
    }
    return nodes;
  }

  private static List<RequestSpec.Node> deepChain(int n) {
    List<RequestSpec.Node> nodes = new ArrayList<>();
    nodes.add(named());
    for (int i = 1; i < n; i++) {
      nodes.add(new RequestSpec.Node(Request.Combiner.CONTIGUOUS, null, 1 + (i % 3), 0, 0, null, null,
          new long[] {i - 1}, null, null, null, null));
    }
    return nodes;
  }

  private List<RequestSpec.Node> randomNodes(int n) {
    List<RequestSpec.Node> nodes = new ArrayList<>();
    Request.Combiner[] all = Request.Combiner.values();
    for (int i = 0; i < n; i++) {
      Request.Combiner c = i == 0 || r.nextInt(4) == 0 ? Request.Combiner.NAMED : all[r.nextInt(all.length)];
      long[] parts = i == 0 ? null : new long[] {r.nextInt(8) == 0 ? pickLong(i, i + 1, -1, 1L << 40) : r.nextInt(i)};
      if (c == Request.Combiner.STRUCT && i > 0) {
        int k = 1 + r.nextInt(4);
        parts = new long[k];
        for (int j = 0; j < k; j++) {
          parts[j] = r.nextInt(i);
        }
      }
      int k = parts == null ? 1 : parts.length;
      nodes.add(new RequestSpec.Node(c,
          c == Request.Combiner.NAMED && r.nextInt(10) > 0 ? org.flowfs.common.request.Elementary.values()[r.nextInt(4)] : null,
          r.nextInt(4) == 0 ? hostileLong() : r.nextInt(1000),
          r.nextInt(4) == 0 ? hostileLong() : r.nextInt(100),
          r.nextInt(4) == 0 ? hostileLong() : r.nextInt(10000) - 100,
          r.nextBoolean() ? longs(k) : null, r.nextBoolean() ? longs(r.nextInt(3) == 0 ? 2 : k) : null, parts,
          r.nextInt(6) == 0 ? longs(1 + r.nextInt(3)) : null, r.nextInt(6) == 0 ? longs(1 + r.nextInt(3)) : null,
          r.nextInt(6) == 0 ? longs(1 + r.nextInt(3)) : null, null));
    }
    return nodes;
  }

  private long[] longs(int n) {
    long[] a = new long[n];
    for (int i = 0; i < n; i++) {
      a[i] = r.nextInt(5) == 0 ? hostileLong() : r.nextInt(1 << 20) - 1000;
    }
    return a;
  }

  private static RequestSpec.Node named() {
    return new RequestSpec.Node(Request.Combiner.NAMED, org.flowfs.common.request.Elementary.BYTE, 0, 0, 0, null, null,
        null, null, null, null, null);
  }

  /** Writes nodes field by field (so nodes no constructor would accept can be sent). */
  private void writeNodes(ByteBuf b, List<RequestSpec.Node> nodes) {
    writeVarLong(b, nodes.size() + 1L);
    for (RequestSpec.Node n : nodes) {
      b.writeByte(1); // present
      enumOrdinal(b, n.combiner());
      enumOrdinal(b, n.named());
      b.writeLong(n.count()).writeLong(n.blockLength()).writeLong(n.stride());
      for (long[] a : new long[][] {n.blockLengths(), n.displacements(), n.parts(), n.sizes(), n.subsizes(), n.starts()}) {
        if (a == null) {
          b.writeByte(0);
        } else {
          writeVarLong(b, a.length + 1L);
          for (long x : a) {
            b.writeLong(x);
          }
        }
      }
      enumOrdinal(b, n.order());
    }
  }

  private static void enumOrdinal(ByteBuf b, Enum<?> e) {
    b.writeByte(e == null ? 0 : e.ordinal() + 1);
  }

  // ---- bits -----------------------------------------------------------------------------------

  private int anyType() {
    return r.nextBoolean() ? REG.idOf(requestTypes.get(r.nextInt(requestTypes.size()))) : r.nextInt(0x10000);
  }

  private int unknownType() {
    for (;;) {
      int t = r.nextBoolean() ? r.nextInt(0x10000) : pick(0, 10, 99, 150, 199, 299, 300, 999, 0xFFFF);
      boolean known = false;
      for (Class<?> c : allTypes) {
        if (REG.idOf(c) == t) {
          known = true;
          break;
        }
      }
      if (!known) {
        return t;
      }
    }
  }

  private byte[] randomBody(int n) {
    byte[] b = new byte[n];
    r.nextBytes(b);
    return b;
  }

  private int pick(int... v) {
    return v[r.nextInt(v.length)];
  }

  private long pickLong(long... v) {
    return v[r.nextInt(v.length)];
  }

  @SafeVarargs
  private <T> T pick2(T... v) {
    return v[r.nextInt(v.length)];
  }

  static void writeVarLong(ByteBuf out, long v) {
    while ((v & ~0x7FL) != 0) {
      out.writeByte((int) ((v & 0x7F) | 0x80));
      v >>>= 7;
    }
    out.writeByte((int) v);
  }

  private static byte[] bytes(ByteBuf b) {
    try {
      byte[] out = new byte[b.readableBytes()];
      b.readBytes(out);
      return out;
    } finally {
      b.release();
    }
  }
}
