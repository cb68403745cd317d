package org.flowfs.common;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * A POSIX access control list (POSIX.1e draft 17, as Linux keeps it) in the form the kernel passes
 * through extended attributes: {@value #ACCESS} on any object, {@value #DEFAULT} on directories.
 * The metadata server applies the rules Linux file systems apply (ext4, XFS): an access ACL and
 * the mode's permission bits say the same ({@link #modeBits}, {@link #chmod}), and a new object
 * takes its directory's default ACL ({@link #inherit}). Permission checks against it are the
 * kernel's ({@code FUSE_POSIX_ACL}).
 *
 * <p>The attribute's form: a little-endian header {@code u32 version} (2), then per entry {@code
 * u16 tag, u16 perm, u32 id}, entries ordered by tag and, within the named tags, by id. Immutable.
 *
 * @param entries in the order stored
 */
public record PosixAcl(List<Entry> entries) {
  public static final String ACCESS = "system.posix_acl_access";
  public static final String DEFAULT = "system.posix_acl_default";

  static final int VERSION = 2;
  static final int USER_OBJ = 0x01;
  static final int USER = 0x02;
  static final int GROUP_OBJ = 0x04;
  static final int GROUP = 0x08;
  static final int MASK = 0x10;
  static final int OTHER = 0x20;
  /** The id of entries that name no user or group. */
  static final int UNDEFINED_ID = -1;
  private static final int HEADER = 4;
  private static final int ENTRY = 8;

  /** One entry: what {@code tag} names ({@code id} for USER and GROUP) may do, {@code perm} rwx bits. */
  public record Entry(int tag, int perm, int id) {}

  public PosixAcl {
    entries = List.copyOf(entries);
  }

  /** Whether {@code name} is one of the two attributes that hold ACLs. */
  public static boolean isAclName(String name) {
    return ACCESS.equals(name) || DEFAULT.equals(name);
  }

  /**
   * Parses an ACL attribute's value and checks it as the kernel does ({@code posix_acl_valid}):
   * exactly one owner, owning group and other entry, a mask when there are named entries, no id
   * twice. @throws FsException EINVAL for anything else
   */
  public static PosixAcl parse(byte[] value) {
    if (value == null || value.length < HEADER || (value.length - HEADER) % ENTRY != 0) {
      throw new FsException(Errno.EINVAL, "an ACL of " + (value == null ? 0 : value.length) + " bytes");
    }
    ByteBuffer b = ByteBuffer.wrap(value).order(ByteOrder.LITTLE_ENDIAN);
    if (b.getInt() != VERSION) {
      throw new FsException(Errno.EINVAL, "ACL version " + b.getInt(0));
    }
    List<Entry> out = new ArrayList<>((value.length - HEADER) / ENTRY);
    while (b.hasRemaining()) {
      int tag = Short.toUnsignedInt(b.getShort());
      int perm = Short.toUnsignedInt(b.getShort());
      int id = b.getInt();
      out.add(new Entry(tag, perm, tag == USER || tag == GROUP ? id : UNDEFINED_ID));
    }
    PosixAcl acl = new PosixAcl(out);
    acl.check();
    return acl;
  }

  private void check() {
    int last = -1;
    int named = 0;
    for (Entry e : entries) {
      if ((e.perm & ~7) != 0) {
        throw new FsException(Errno.EINVAL, "ACL permission bits " + e.perm);
      }
      int order = switch (e.tag) {
        case USER_OBJ -> 0;
        case USER -> 1;
        case GROUP_OBJ -> 2;
        case GROUP -> 3;
        case MASK -> 4;
        case OTHER -> 5;
        default -> throw new FsException(Errno.EINVAL, "ACL tag " + e.tag);
      };
      boolean repeatable = e.tag == USER || e.tag == GROUP;
      if (order < last || (order == last && !repeatable)) {
        throw new FsException(Errno.EINVAL, "ACL entries out of order or repeated");
      }
      named += repeatable ? 1 : 0;
      last = order;
    }
    if (!has(USER_OBJ) || !has(GROUP_OBJ) || !has(OTHER) || (named > 0 && !has(MASK))) {
      throw new FsException(Errno.EINVAL, "an ACL needs owner, group and other entries, and a mask with named entries");
    }
  }

  private boolean has(int tag) {
    return find(tag) != null;
  }

  private Entry find(int tag) {
    for (Entry e : entries) {
      if (e.tag == tag) {
        return e;
      }
    }
    return null;
  }

  /** The attribute's value. */
  public byte[] bytes() {
    ByteBuffer b = ByteBuffer.allocate(HEADER + ENTRY * entries.size()).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(VERSION);
    for (Entry e : entries) {
      b.putShort((short) e.tag).putShort((short) e.perm).putInt(e.id);
    }
    return b.array();
  }

  /**
   * The permission bits (0777) this ACL gives the mode: owner from the owner entry, group from the
   * mask (or the owning group's entry when there is no mask), other from the other entry.
   */
  public int modeBits() {
    Entry mask = find(MASK);
    Entry group = mask != null ? mask : find(GROUP_OBJ);
    return find(USER_OBJ).perm << 6 | group.perm << 3 | find(OTHER).perm;
  }

  /**
   * Whether this access ACL of an object owned by {@code ownerUid} and group {@code ownerGid} gives
   * {@code want} (rwx bits) to user {@code uid}, a member of the groups {@code inGroup} accepts
   * (POSIX.1e's access check, as the kernel's {@code posix_acl_permission}): the owner entry for
   * the owner, a named user entry, then the group entries that match (one must give all of
   * {@code want}), else the other entry; named and group entries within the mask.
   */
  public boolean permits(int want, int uid, java.util.function.IntPredicate inGroup, int ownerUid, int ownerGid) {
    want &= 7;
    Entry mask = find(MASK);
    int limit = mask == null ? 7 : mask.perm;
    if (uid == ownerUid) {
      return (find(USER_OBJ).perm & want) == want;
    }
    for (Entry e : entries) {
      if (e.tag == USER && e.id == uid) {
        return (e.perm & limit & want) == want;
      }
    }
    boolean matched = false;
    for (Entry e : entries) {
      boolean member = (e.tag == GROUP_OBJ && inGroup.test(ownerGid)) || (e.tag == GROUP && inGroup.test(e.id));
      if (member) {
        if ((e.perm & limit & want) == want) {
          return true;
        }
        matched = true;
      }
    }
    return !matched && (find(OTHER).perm & want) == want;
  }

  /** Whether the mode's permission bits say all this ACL says: it has the three base entries only. */
  public boolean equivalentToMode() {
    return entries.size() == 3;
  }

  /**
   * This ACL after a {@code chmod} to {@code mode}: the owner, other and mask (or, without a mask,
   * owning group) entries take the mode's bits ({@code posix_acl_chmod}).
   */
  public PosixAcl chmod(int mode) {
    boolean masked = has(MASK);
    List<Entry> out = new ArrayList<>(entries.size());
    for (Entry e : entries) {
      int perm = switch (e.tag) {
        case USER_OBJ -> mode >> 6 & 7;
        case MASK -> mode >> 3 & 7;
        case GROUP_OBJ -> masked ? e.perm : mode >> 3 & 7;
        case OTHER -> mode & 7;
        default -> e.perm;
      };
      out.add(new Entry(e.tag, perm, e.id));
    }
    return new PosixAcl(out);
  }

  /**
   * What a new object made with {@code mode} (permission bits and the set-ID and sticky bits,
   * before any umask: a default ACL replaces the umask) gets in a directory with this default ACL
   * ({@code posix_acl_create}): its mode, and its access ACL (null when the mode says it all).
   * A new directory also takes this ACL as its own default ACL.
   */
  public Inherited inherit(int mode) {
    Entry mask = find(MASK);
    List<Entry> out = new ArrayList<>(entries.size());
    int bits = mode & 0777;
    for (Entry e : entries) {
      int perm = e.perm;
      switch (e.tag) {
        case USER_OBJ -> {
          perm &= mode >> 6 & 7;
          bits &= perm << 6 | ~0700;
        }
        case OTHER -> {
          perm &= mode & 7;
          bits &= perm | ~07;
        }
        case MASK -> {
          perm &= mode >> 3 & 7;
          bits &= perm << 3 | ~070;
        }
        case GROUP_OBJ -> {
          if (mask == null) {
            perm &= mode >> 3 & 7;
            bits &= perm << 3 | ~070;
          }
        }
        default -> { }
      }
      out.add(new Entry(e.tag, perm, e.id));
    }
    PosixAcl acl = new PosixAcl(out);
    return new Inherited((mode & ~0777) | bits, acl.equivalentToMode() ? null : acl);
  }

  /** A new object's mode and access ACL (null: none) from its directory's default ACL. */
  public record Inherited(int mode, PosixAcl access) {}
}
