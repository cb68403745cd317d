package org.flowfs.meta;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.flowfs.common.DistSpec;
import org.flowfs.common.FileType;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.junit.jupiter.api.Test;

/** The stored form of objects round-trips every field of every type. */
class InodeCodecTest {

  @Property(tries = 200)
  void encode_decode_roundTrips(@ForAll("inodes") Inode n) {
    Inode back = InodeCodec.decode(n.handle, InodeCodec.encode(n));
    assertEquals(n.toAttr(), back.toAttr());
    assertEquals(n.type == FileType.SYMLINK ? n.target : null, back.target);
    assertEquals(n.isDir() ? n.parent : 0, back.parent);
    assertEquals(n.verifier, back.verifier);
  }

  @Provide
  Arbitrary<Inode> inodes() {
    Arbitrary<Integer> ints = Arbitraries.oneOf(Arbitraries.integers(), Arbitraries.of(0, -1, Integer.MAX_VALUE, Integer.MIN_VALUE));
    Arbitrary<Long> longs = Arbitraries.oneOf(Arbitraries.longs(), Arbitraries.of(0L, -1L, Long.MAX_VALUE, Long.MIN_VALUE));
    Arbitrary<Long> sizes = Arbitraries.longs().between(0, Long.MAX_VALUE);
    Arbitrary<Layout> layouts = Combinators.combine(
        Arbitraries.strings().ofMinLength(1).ofMaxLength(64),
        longs.list().ofMaxSize(8),
        Arbitraries.longs().filter(l -> l != 0).list().ofMinSize(1).ofMaxSize(40),
        Arbitraries.oneOf(Arbitraries.longs().between(0, Layout.MAX_HEAD), Arbitraries.of(0L, 1L, Layout.MAX_HEAD)))
        .as((name, params, ids, head) -> new Layout(new DistSpec(name, params), ids.stream().map(Handle::new).toList(), head));
    return Combinators.combine(
        Arbitraries.of(FileType.class),
        Arbitraries.integers().between(0, 07777),
        ints, ints,
        Arbitraries.integers().between(0, Integer.MAX_VALUE),
        sizes,
        longs.list().ofSize(3),
        ints)
        .flatAs((type, mode, uid, gid, nlink, size, times, rdev) -> Combinators.combine(
            layouts.injectNull(0.3),
            Arbitraries.strings().ofMinLength(1).ofMaxLength(300),
            Arbitraries.longs().filter(l -> l != 0))
            .as((layout, target, parent) -> {
              Inode n = new Inode(Handle.of(0, 1 + Math.floorMod(parent, 1000)).id(), type);
              n.mode = mode;
              n.uid = uid;
              n.gid = gid;
              n.nlink = nlink;
              n.size = size;
              n.atimeNs = times.get(0);
              n.mtimeNs = times.get(1);
              n.ctimeNs = times.get(2);
              n.rdev = rdev;
              n.layout = type == FileType.REGULAR ? layout : null;
              n.target = type == FileType.SYMLINK ? target : null;
              n.parent = type == FileType.DIRECTORY ? parent : 0;
              n.verifier = Math.floorMod(parent, 3) == 0 ? 0 : parent * 31; // most records have none
              return n;
            }));
  }

  @Test
  void encode_smallFileIsCompact() {
    Inode n = new Inode(Handle.of(0, 5).id(), FileType.REGULAR);
    n.mode = 0644;
    n.uid = 1000;
    n.gid = 1000;
    n.nlink = 1;
    n.layout = new Layout(DistSpec.of("simple_stripe", 65536), List.of(Handle.of(1, 1), Handle.of(2, 1), Handle.of(3, 1), Handle.of(4, 1)));
    int bytes = InodeCodec.encode(n).length;
    assertTrue(bytes < 100, bytes + " bytes");
  }

  /** A file as the codec wrote it before layouts had heads (layout kind 1). */
  private static final String RECORD_BEFORE_HEADS = "0101a403e80764010a0000000000000001000000000000000200000000000000"
      + "0300010d73696d706c655f73747269706501808008010001000000000007";

  private static Inode fileBeforeHeads(long headBytes) {
    Inode n = new Inode(Handle.of(0, 5).id(), FileType.REGULAR);
    n.mode = 0644;
    n.uid = 1000;
    n.gid = 100;
    n.nlink = 1;
    n.size = 10;
    n.atimeNs = 1;
    n.mtimeNs = 2;
    n.ctimeNs = 3;
    n.layout = new Layout(DistSpec.of("simple_stripe", 65536), List.of(Handle.of(1, 7)), headBytes);
    return n;
  }

  @Test
  void decode_recordWrittenBeforeHeads_readsAsNoHead() {
    Inode n = fileBeforeHeads(0);
    Inode back = InodeCodec.decode(n.handle, HexFormat.of().parseHex(RECORD_BEFORE_HEADS));
    assertEquals(n.toAttr(), back.toAttr());
    assertEquals(0, back.layout.headBytes());
  }

  @Test
  void encode_layoutWithoutHead_writesTheRecordOfBefore() {
    assertEquals(RECORD_BEFORE_HEADS, HexFormat.of().formatHex(InodeCodec.encode(fileBeforeHeads(0))));
  }

  @Test
  void encode_layoutWithHead_keepsIt() {
    Inode n = fileBeforeHeads(64 * 1024);
    byte[] b = InodeCodec.encode(n);
    assertNotEquals(RECORD_BEFORE_HEADS, HexFormat.of().formatHex(b));
    assertEquals(64 * 1024, InodeCodec.decode(n.handle, b).layout.headBytes());
  }

  @Test
  void decode_unknownLayoutKind_refused() {
    Inode n = fileBeforeHeads(0);
    byte[] b = InodeCodec.encode(n);
    int kind = 1 + 1 + 2 + 2 + 1 + 1 + 1 + 3 * 8 + 1; // format, type, mode, uid, gid, nlink, size, times, rdev
    assertEquals(1, b[kind]);
    b[kind] = 3;
    assertThrows(IllegalStateException.class, () -> InodeCodec.decode(n.handle, b));
  }

  @Test
  void decode_unknownFormat_refused() {
    Inode n = new Inode(7, FileType.FIFO);
    byte[] b = InodeCodec.encode(n);
    b[0] = 99;
    assertThrows(IllegalStateException.class, () -> InodeCodec.decode(7, b));
  }

  @Test
  void typeCodes_areStableAndDistinct() {
    List<Byte> codes = new ArrayList<>();
    for (FileType t : FileType.values()) {
      codes.add(InodeCodec.code(t));
      assertEquals(t, InodeCodec.type(InodeCodec.code(t)));
    }
    assertEquals(codes.size(), codes.stream().distinct().count());
    assertEquals(1, InodeCodec.code(FileType.REGULAR));
    assertEquals(2, InodeCodec.code(FileType.DIRECTORY));
  }
}
