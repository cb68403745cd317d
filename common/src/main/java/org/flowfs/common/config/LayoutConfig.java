package org.flowfs.common.config;

import java.util.Set;

/**
 * How new files are laid out, unless their directory says otherwise.
 *
 * @param distribution the distribution name
 * @param stripSize strip size of {@code simple_stripe}
 * @param servers datafiles per file; 0 means one on every I/O server
 * @param headBytes bytes at the start of each new regular file kept with its metadata on the
 *     metadata server ({@link org.flowfs.common.Layout#headBytes()}); 0 for none
 */
public record LayoutConfig(String distribution, long stripSize, int servers, long headBytes) {

  static LayoutConfig from(ConfigSource s) {
    return new LayoutConfig(
        s.choice("layout.distribution", "simple_stripe", Set.of(org.flowfs.common.dist.SimpleStripe.NAME, org.flowfs.common.dist.Basic.NAME)),
        s.size("layout.strip-size", 64 * 1024, 4096, 1L << 30),
        s.integer("layout.servers", 0, 0, 1024),
        s.size("layout.head-bytes", 64 * 1024, 0, org.flowfs.common.Layout.MAX_HEAD));
  }
}
