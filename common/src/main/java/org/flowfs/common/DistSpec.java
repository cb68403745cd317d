package org.flowfs.common;

import java.util.List;

/**
 * A distribution by name and parameters, as a file's metadata stores it (seed 003's {@code dist}
 * and {@code dparm}). {@code org.flowfs.common.dist.Distributions} turns it into a
 * {@code Distribution}.
 */
public record DistSpec(String name, List<Long> params) {
  public static final int MAX_PARAMS = 1024;

  public DistSpec {
    if (name == null || name.isEmpty() || name.length() > 64) {
      throw new IllegalArgumentException("distribution name");
    }
    params = List.copyOf(params);
    if (params.size() > MAX_PARAMS) {
      throw new IllegalArgumentException("too many distribution parameters");
    }
  }

  public static DistSpec of(String name, long... params) {
    Long[] boxed = new Long[params.length];
    for (int i = 0; i < params.length; i++) {
      boxed[i] = params[i];
    }
    return new DistSpec(name, List.of(boxed));
  }
}
