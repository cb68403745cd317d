package org.flowfs.common;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/** Named monotonic counters, cheap to bump from many threads; read as a snapshot. */
public final class Counters {
  private final ConcurrentHashMap<String, LongAdder> adders = new ConcurrentHashMap<>();

  public LongAdder counter(String name) {
    return adders.computeIfAbsent(name, n -> new LongAdder());
  }

  public void add(String name, long delta) {
    counter(name).add(delta);
  }

  public void increment(String name) {
    counter(name).increment();
  }

  public long get(String name) {
    LongAdder a = adders.get(name);
    return a == null ? 0 : a.sum();
  }

  /** A sorted copy of every counter's current value. */
  public Map<String, Long> snapshot() {
    Map<String, Long> m = new TreeMap<>();
    adders.forEach((k, v) -> m.put(k, v.sum()));
    return m;
  }
}
