package org.flowfs.client.api;

import java.util.LinkedHashMap;
import java.util.Map;
import org.flowfs.common.DistSpec;
import org.flowfs.common.dist.SimpleStripe;

/**
 * The hints of one open, parsed: what they set, and which were ignored and why. Unknown keys and
 * values that cannot be used are ignored, never an error.
 */
final class Tuning {
  static final long DEFAULT_CB_BUFFER = 16L << 20;
  static final long DEFAULT_DATAREP_BUFFER = 8L << 20;
  static final long DEFAULT_IND_RD_BUFFER = 4L << 20;
  static final long MAX_BUFFER = 1L << 30;

  /** 0: the file system's default. */
  int stripingFactor;
  /** 0: the file system's default. */
  long stripingUnit;
  long cbBuffer = DEFAULT_CB_BUFFER;
  /** 0: automatic. */
  int cbNodes;
  long datarepBuffer = DEFAULT_DATAREP_BUFFER;
  boolean dsRead;
  long indRdBuffer = DEFAULT_IND_RD_BUFFER;
  final Map<String, String> ignored = new LinkedHashMap<>();

  /** A copy of the runtime values, without the ignored ones. */
  Tuning runtimeCopy() {
    Tuning t = new Tuning();
    t.cbBuffer = cbBuffer;
    t.cbNodes = cbNodes;
    t.datarepBuffer = datarepBuffer;
    t.dsRead = dsRead;
    t.indRdBuffer = indRdBuffer;
    return t;
  }

  /** Parses {@code hints} over these values; striping hints only when {@code creating}. */
  Tuning apply(Hints hints, boolean creating, int ioServers) {
    hints.asMap().forEach((k, v) -> {
      switch (k) {
        case Hints.STRIPING_FACTOR -> {
          long n = positive(k, v, Integer.MAX_VALUE);
          if (n > 0 && !creating) {
            ignored.put(k, "the file exists: its layout was fixed when it was created");
          } else if (n > ioServers) {
            ignored.put(k, v + " > " + ioServers + " I/O servers: " + ioServers + " used");
            stripingFactor = ioServers;
          } else if (n > 0) {
            stripingFactor = (int) n;
          }
        }
        case Hints.STRIPING_UNIT -> {
          long n = positive(k, v, MAX_BUFFER);
          if (n > 0 && !creating) {
            ignored.put(k, "the file exists: its layout was fixed when it was created");
          } else if (n > 0) {
            stripingUnit = n;
          }
        }
        case Hints.CB_BUFFER_SIZE -> {
          long n = positive(k, v, MAX_BUFFER);
          if (n > 0) {
            cbBuffer = n;
          }
        }
        case Hints.CB_NODES -> {
          long n = positive(k, v, Integer.MAX_VALUE);
          if (n > 0) {
            cbNodes = (int) n;
          }
        }
        case Hints.DATAREP_BUFFER_SIZE -> {
          long n = positive(k, v, MAX_BUFFER);
          if (n > 0) {
            datarepBuffer = n;
          }
        }
        case Hints.DS_READ -> {
          switch (v.trim()) {
            case "enable" -> dsRead = true;
            case "disable" -> dsRead = false;
            default -> ignored.put(k, "'" + v + "' is not enable or disable");
          }
        }
        case Hints.IND_RD_BUFFER_SIZE -> {
          long n = positive(k, v, MAX_BUFFER);
          if (n > 0) {
            indRdBuffer = n;
          }
        }
        default -> ignored.put(k, "unknown hint");
      }
    });
    return this;
  }

  /** The value as a number in {@code 1..max}, or 0 after noting why it is ignored. */
  private long positive(String key, String value, long max) {
    try {
      long n = Long.parseLong(value.trim());
      if (n >= 1 && n <= max) {
        return n;
      }
    } catch (NumberFormatException e) {
      // noted below
    }
    ignored.put(key, "'" + value + "' is not a number in 1.." + max);
    return 0;
  }

  /** The distribution a created file gets: null for the file system's default. */
  DistSpec dist() {
    return stripingUnit > 0 ? new SimpleStripe(stripingUnit).spec() : null;
  }

  /** The runtime values as hints (striping ones are added from the layout). */
  Map<String, String> effective(int aggregators) {
    Map<String, String> m = new LinkedHashMap<>();
    m.put(Hints.CB_BUFFER_SIZE, Long.toString(cbBuffer));
    m.put(Hints.CB_NODES, Integer.toString(aggregators));
    m.put(Hints.DATAREP_BUFFER_SIZE, Long.toString(datarepBuffer));
    m.put(Hints.DS_READ, dsRead ? "enable" : "disable");
    m.put(Hints.IND_RD_BUFFER_SIZE, Long.toString(indRdBuffer));
    return m;
  }
}
