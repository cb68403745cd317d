package org.flowfs.common;

import java.util.BitSet;

/**
 * A set of CPUs by number, as Linux writes them ({@code taskset -c}, {@code Cpus_allowed_list},
 * systemd's {@code CPUAffinity=}): {@code "1"}, {@code "0,2"}, {@code "2-3,6"}. Immutable; the
 * empty set is written {@code ""}.
 */
public final class CpuSet {
  /** CPUs a set can name: the size of the kernel's {@code cpu_set_t}. */
  public static final int MAX_CPUS = 1024;
  public static final CpuSet EMPTY = new CpuSet(new BitSet());

  private final BitSet cpus;

  private CpuSet(BitSet cpus) {
    this.cpus = cpus;
  }

  /** The set a list names; {@link IllegalArgumentException} says what is wrong with it. */
  public static CpuSet parse(String list) {
    BitSet b = new BitSet();
    String s = list.strip();
    if (s.isEmpty()) {
      return EMPTY;
    }
    for (String part : s.split(",", -1)) {
      String p = part.strip();
      int dash = p.indexOf('-');
      int lo = number(dash < 0 ? p : p.substring(0, dash), list);
      int hi = dash < 0 ? lo : number(p.substring(dash + 1), list);
      if (hi < lo) {
        throw new IllegalArgumentException("'" + p + "' is a range that ends before it starts");
      }
      b.set(lo, hi + 1);
    }
    return new CpuSet(b);
  }

  private static int number(String n, String list) {
    String t = n.strip();
    if (t.isEmpty() || !t.chars().allMatch(Character::isDigit) || t.length() > 4) {
      throw new IllegalArgumentException("'" + list + "' is not a CPU list such as '1', '0,2' or '2-3,6'");
    }
    int cpu = Integer.parseInt(t);
    if (cpu >= MAX_CPUS) {
      throw new IllegalArgumentException("CPU " + cpu + " is beyond the " + MAX_CPUS + " a set can name");
    }
    return cpu;
  }

  /** The set of the CPUs whose bits are set in a kernel {@code cpu_set_t} (64 CPUs a word). */
  public static CpuSet ofMask(long[] words) {
    return new CpuSet(BitSet.valueOf(words));
  }

  /** This set as a kernel {@code cpu_set_t}: {@link #MAX_CPUS} bits, 64 a word. */
  public long[] mask() {
    long[] w = new long[MAX_CPUS / 64];
    long[] have = cpus.toLongArray();
    System.arraycopy(have, 0, w, 0, have.length);
    return w;
  }

  public boolean isEmpty() {
    return cpus.isEmpty();
  }

  public int size() {
    return cpus.cardinality();
  }

  public boolean contains(int cpu) {
    return cpus.get(cpu);
  }

  /** The CPUs of this set that {@code other} lacks. */
  public CpuSet without(CpuSet other) {
    BitSet b = (BitSet) cpus.clone();
    b.andNot(other.cpus);
    return new CpuSet(b);
  }

  /** The highest CPU of a set that is not empty. */
  public int last() {
    return cpus.length() - 1;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof CpuSet c && c.cpus.equals(cpus);
  }

  @Override
  public int hashCode() {
    return cpus.hashCode();
  }

  /** The set as a list of CPUs and ranges, the way {@link #parse} reads it. */
  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder();
    for (int lo = cpus.nextSetBit(0); lo >= 0; ) {
      int hi = cpus.nextClearBit(lo) - 1;
      if (sb.length() > 0) {
        sb.append(',');
      }
      sb.append(lo);
      if (hi > lo) {
        sb.append('-').append(hi);
      }
      lo = cpus.nextSetBit(hi + 1);
    }
    return sb.toString();
  }
}
