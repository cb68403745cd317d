package org.flowfs.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.flowfs.common.RecordLocks.Range;
import org.junit.jupiter.api.Test;

/** One owner's ranges as {@code posix_lock_file} keeps them: replace, split, merge, punch out. */
class RecordLocksTest {
  private static final int R = RecordLocks.READ;
  private static final int W = RecordLocks.WRITE;
  private static final int U = RecordLocks.UNLOCK;
  private static final long EOF = RecordLocks.EOF;

  @Test
  void aLockInsideAnother_ofTheOtherType_splitsIt_andAnUnlockPunchesAHole() {
    List<Range> l = RecordLocks.apply(List.of(), R, 0, 99);
    l = RecordLocks.apply(l, W, 10, 19);
    assertEquals(List.of(new Range(0, 9, R), new Range(10, 19, W), new Range(20, 99, R)), l);
    l = RecordLocks.apply(l, U, 15, 49);
    assertEquals(List.of(new Range(0, 9, R), new Range(10, 14, W), new Range(50, 99, R)), l);
    l = RecordLocks.apply(l, U, 0, EOF);
    assertEquals(List.of(), l);
  }

  @Test
  void neighboursOfOneType_merge_andToTheEndOfTheFile_staysOpen() {
    List<Range> l = RecordLocks.apply(List.of(), W, 0, 9);
    l = RecordLocks.apply(l, W, 10, 19);
    l = RecordLocks.apply(l, W, 30, EOF);
    assertEquals(List.of(new Range(0, 19, W), new Range(30, EOF, W)), l);
    l = RecordLocks.apply(l, W, 15, 40);
    assertEquals(List.of(new Range(0, EOF, W)), l);
    l = RecordLocks.apply(l, R, 5, 5); // converting a byte of it
    assertEquals(List.of(new Range(0, 4, W), new Range(5, 5, R), new Range(6, EOF, W)), l);
    assertEquals(List.of(new Range(0, 4, W)), RecordLocks.apply(l, U, 5, EOF));
  }

  @Test
  void conflicts_needAnOverlap_andAWriter() {
    Range r = new Range(10, 19, R);
    assertTrue(r.conflicts(W, 19, 30));
    assertFalse(r.conflicts(R, 0, EOF), "readers share");
    assertFalse(r.conflicts(W, 20, 30), "next to it");
    assertTrue(new Range(10, EOF, W).conflicts(R, Long.MAX_VALUE - 1, EOF));
  }

  @Test
  void badRanges_areEinval() {
    assertEquals(Errno.EINVAL, assertThrows(FsException.class, () -> RecordLocks.apply(List.of(), W, 10, 9)).errno());
    assertEquals(Errno.EINVAL, assertThrows(FsException.class, () -> RecordLocks.apply(List.of(), W, -1, 9)).errno());
    assertEquals(Errno.EINVAL, assertThrows(FsException.class, () -> RecordLocks.apply(List.of(), 7, 0, 9)).errno());
  }
}
