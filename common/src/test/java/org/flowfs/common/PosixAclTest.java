package org.flowfs.common;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import org.flowfs.common.PosixAcl.Entry;
import org.junit.jupiter.api.Test;

/** The ACL rules against what Linux (ext4, {@code setfacl}/{@code getfacl}) does with the same ACLs. */
class PosixAclTest {
  private static final int ME = 12003;
  private static final int STAFF = 12002;

  /** {@code u::rw-,u:12003:rwx,g::r-x,g:12002:-w-,m::rw-,o::---}, as setfacl hands it to the kernel. */
  private static PosixAcl named() {
    return new PosixAcl(List.of(
        new Entry(PosixAcl.USER_OBJ, 6, PosixAcl.UNDEFINED_ID),
        new Entry(PosixAcl.USER, 7, ME),
        new Entry(PosixAcl.GROUP_OBJ, 5, PosixAcl.UNDEFINED_ID),
        new Entry(PosixAcl.GROUP, 2, STAFF),
        new Entry(PosixAcl.MASK, 6, PosixAcl.UNDEFINED_ID),
        new Entry(PosixAcl.OTHER, 0, PosixAcl.UNDEFINED_ID)));
  }

  private static PosixAcl base(int mode) {
    return new PosixAcl(List.of(
        new Entry(PosixAcl.USER_OBJ, mode >> 6 & 7, PosixAcl.UNDEFINED_ID),
        new Entry(PosixAcl.GROUP_OBJ, mode >> 3 & 7, PosixAcl.UNDEFINED_ID),
        new Entry(PosixAcl.OTHER, mode & 7, PosixAcl.UNDEFINED_ID)));
  }

  @Test
  void bytes_areTheKernelsXattrForm_andParseBack() {
    byte[] b = named().bytes();
    ByteBuffer x = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    assertEquals(4 + 6 * 8, b.length);
    assertEquals(2, x.getInt());
    assertEquals(1, x.getShort()); // ACL_USER_OBJ
    assertEquals(6, x.getShort());
    assertEquals(-1, x.getInt());
    assertEquals(2, x.getShort()); // ACL_USER
    assertEquals(7, x.getShort());
    assertEquals(ME, x.getInt());
    assertEquals(named(), PosixAcl.parse(b));
    assertArrayEquals(b, PosixAcl.parse(b).bytes());
  }

  @Test
  void parse_refusesWhatTheKernelRefuses() {
    assertEquals(Errno.EINVAL, assertThrows(FsException.class, () -> PosixAcl.parse(new byte[3])).errno());
    byte[] wrongVersion = named().bytes();
    wrongVersion[0] = 1;
    assertEquals(Errno.EINVAL, assertThrows(FsException.class, () -> PosixAcl.parse(wrongVersion)).errno());
    byte[] cut = java.util.Arrays.copyOf(named().bytes(), 4 + 8 * 5 + 3);
    assertEquals(Errno.EINVAL, assertThrows(FsException.class, () -> PosixAcl.parse(cut)).errno());
    // named entries without a mask; no other entry; out of order; a repeated owner entry
    PosixAcl noMask = new PosixAcl(List.of(named().entries().get(0), named().entries().get(1),
        named().entries().get(2), named().entries().get(5)));
    PosixAcl noOther = new PosixAcl(named().entries().subList(0, 5));
    PosixAcl disordered = new PosixAcl(List.of(named().entries().get(2), named().entries().get(0),
        named().entries().get(5)));
    PosixAcl twice = new PosixAcl(List.of(named().entries().get(0), named().entries().get(0),
        named().entries().get(2), named().entries().get(5)));
    for (PosixAcl bad : List.of(noMask, noOther, disordered, twice)) {
      assertEquals(Errno.EINVAL, assertThrows(FsException.class, () -> PosixAcl.parse(bad.bytes())).errno(), bad::toString);
    }
  }

  @Test
  void modeBits_takeTheMaskForTheGroupClass() {
    assertEquals(0660, named().modeBits()); // setfacl -m ... on a 0600 file: ls shows -rw-rw----
    assertEquals(0640, base(0640).modeBits());
    assertTrue(base(0640).equivalentToMode());
    assertFalse(named().equivalentToMode());
  }

  @Test
  void chmod_setsTheMaskNotTheOwningGroup() {
    // chmod 640 of the file above: getfacl shows user:12003:rwx #effective:r--, group::r-x, mask::r--
    PosixAcl c = named().chmod(0640);
    assertEquals(List.of(6, 7, 5, 2, 4, 0), c.entries().stream().map(Entry::perm).toList());
    assertEquals(0640, c.modeBits());
    assertEquals(List.of(7, 1, 4), base(0640).chmod(0714).entries().stream().map(Entry::perm).toList());
  }

  @Test
  void inherit_masksTheDefaultAclWithTheCreateMode() {
    // setfacl -d -m u:12003:rwx,g::rx,o::-,m::rwx d; then (umask 077; touch d/file; mkdir d/sub)
    PosixAcl dflt = new PosixAcl(List.of(
        new Entry(PosixAcl.USER_OBJ, 7, PosixAcl.UNDEFINED_ID),
        new Entry(PosixAcl.USER, 7, ME),
        new Entry(PosixAcl.GROUP_OBJ, 5, PosixAcl.UNDEFINED_ID),
        new Entry(PosixAcl.MASK, 7, PosixAcl.UNDEFINED_ID),
        new Entry(PosixAcl.OTHER, 0, PosixAcl.UNDEFINED_ID)));
    PosixAcl.Inherited file = dflt.inherit(0666);
    assertEquals(0660, file.mode());
    assertEquals(List.of(6, 7, 5, 6, 0), file.access().entries().stream().map(Entry::perm).toList());
    PosixAcl.Inherited dir = dflt.inherit(02777);
    assertEquals(02770, dir.mode());
    assertEquals(dflt, dir.access());
    // a default ACL of the three base entries gives no access ACL, only the mode
    PosixAcl.Inherited plain = base(0750).inherit(0666);
    assertEquals(0640, plain.mode());
    assertNull(plain.access());
  }

  @Test
  void permits_asPosixAclPermission() {
    PosixAcl acl = named();
    int owner = 500;
    int group = 600;
    assertTrue(acl.permits(6, owner, g -> false, owner, group));
    assertFalse(acl.permits(1, owner, g -> false, owner, group));
    assertTrue(acl.permits(6, ME, g -> false, owner, group)); // u:12003:rwx within mask rw-
    assertFalse(acl.permits(1, ME, g -> false, owner, group)); // x is masked
    assertTrue(acl.permits(4, 700, g -> g == group, owner, group)); // the owning group's r-x
    assertTrue(acl.permits(2, 700, g -> g == STAFF, owner, group)); // g:12002:-w-
    assertFalse(acl.permits(6, 700, g -> g == STAFF || g == group, owner, group)); // no one entry gives rw
    assertFalse(acl.permits(4, 700, g -> g == STAFF, owner, group)); // a group matched: not other's
    assertFalse(acl.permits(4, 700, g -> false, owner, group)); // other ---
  }
}
