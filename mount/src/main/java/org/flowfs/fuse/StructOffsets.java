package org.flowfs.fuse;

import jnr.ffi.Runtime;
import jnr.ffi.Struct;

/** Reads a jnr struct member's byte offset, which jnr only shows to subclasses of {@link Struct}. */
final class StructOffsets extends Struct {
  private StructOffsets(Runtime rt) {
    super(rt);
  }

  static long offsetOf(Object member) {
    return ((AbstractMember) member).offset();
  }
}
