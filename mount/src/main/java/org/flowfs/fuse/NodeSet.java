package org.flowfs.fuse;

/**
 * A set of kernel node numbers (non-zero longs), open addressing with linear probing and
 * backward-shift deletion: 8 bytes a slot, no object per member, since it holds one member for
 * every file the kernel has cached pages of (hundreds of thousands after a big tree was read).
 * Synchronized: every FUSE worker adds to it.
 */
final class NodeSet {
  private static final int MIN_CAPACITY = 1 << 10;
  private long[] slots = new long[MIN_CAPACITY];
  private int size;

  /** Adds {@code node} (non-zero); true if it was not there. */
  synchronized boolean add(long node) {
    int mask = slots.length - 1;
    int i = slot(node, mask);
    for (long s; (s = slots[i]) != 0; i = (i + 1) & mask) {
      if (s == node) {
        return false;
      }
    }
    slots[i] = node;
    if (++size > slots.length / 2) {
      resize(slots.length * 2);
    }
    return true;
  }

  /** Removes {@code node}; true if it was there. */
  synchronized boolean remove(long node) {
    int mask = slots.length - 1;
    int i = slot(node, mask);
    for (long s; (s = slots[i]) != node; i = (i + 1) & mask) {
      if (s == 0) {
        return false;
      }
    }
    // backward shift: move up each later member of the run whose home lies at or before the hole
    int hole = i;
    for (int j = (i + 1) & mask; slots[j] != 0; j = (j + 1) & mask) {
      int home = slot(slots[j], mask);
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        slots[hole] = slots[j];
        hole = j;
      }
    }
    slots[hole] = 0;
    size--;
    if (slots.length > MIN_CAPACITY && size < slots.length / 8) {
      resize(slots.length / 2);
    }
    return true;
  }

  synchronized boolean contains(long node) {
    int mask = slots.length - 1;
    for (int i = slot(node, mask); slots[i] != 0; i = (i + 1) & mask) {
      if (slots[i] == node) {
        return true;
      }
    }
    return false;
  }

  synchronized int size() {
    return size;
  }

  private void resize(int capacity) {
    long[] old = slots;
    slots = new long[capacity];
    int mask = capacity - 1;
    for (long s : old) {
      if (s != 0) {
        int i = slot(s, mask);
        while (slots[i] != 0) {
          i = (i + 1) & mask;
        }
        slots[i] = s;
      }
    }
  }

  private static int slot(long node, int mask) {
    long h = node * 0x9E3779B97F4A7C15L; // node numbers count upwards: spread them
    return (int) (h >>> 32) & mask;
  }
}
