package org.flowfs.client;

import java.util.Map;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;

/** The JSON texts of the client's virtual extended attributes, for scripts. */
final class Json {
  private Json() {}

  /** {@code {"distribution":"simple_stripe","params":[65536],"datafiles":[{"server":0,"handle":"0001000000000005"}],"head_bytes":65536}} */
  static String layout(Layout l) {
    StringBuilder sb = new StringBuilder("{\"distribution\":\"").append(l.dist().name()).append("\",\"params\":[");
    for (int i = 0; i < l.dist().params().size(); i++) {
      sb.append(i == 0 ? "" : ",").append(l.dist().params().get(i));
    }
    sb.append("],\"datafiles\":[");
    for (int i = 0; i < l.datafiles().size(); i++) {
      Handle h = l.datafiles().get(i);
      sb.append(i == 0 ? "" : ",").append("{\"server\":").append(h.ioServer()).append(",\"handle\":\"").append(h.hex()).append("\"}");
    }
    return sb.append("],\"head_bytes\":").append(l.headBytes()).append('}').toString();
  }

  /** {@code {"name":value,...}} */
  static String counters(Map<String, Long> counters) {
    StringBuilder sb = new StringBuilder("{");
    counters.forEach((k, v) -> sb.append(sb.length() == 1 ? "" : ",").append('"').append(k).append("\":").append(v));
    return sb.append('}').toString();
  }
}
