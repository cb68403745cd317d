package org.flowfs.common.dist;

import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;

/** The distributions by name: a file's metadata stores a {@link DistSpec}, this turns it back. */
public final class Distributions {
  private static final Map<String, Function<List<Long>, Distribution>> BY_NAME =
      Map.of(
          SimpleStripe.NAME,
          p -> new SimpleStripe(p.isEmpty() ? SimpleStripe.DEFAULT_STRIP_SIZE : p.get(0)));

  private Distributions() {}

  /** The distribution a spec names, or EINVAL for an unknown name or bad parameters. */
  public static Distribution of(DistSpec spec) {
    Function<List<Long>, Distribution> f = BY_NAME.get(spec.name());
    if (f == null) {
      throw new FsException(Errno.EINVAL, "unknown distribution '" + spec.name() + "'");
    }
    try {
      return f.apply(spec.params());
    } catch (IllegalArgumentException | IndexOutOfBoundsException e) {
      throw new FsException(
          Errno.EINVAL, "bad parameters for distribution '" + spec.name() + "': " + e.getMessage());
    }
  }

  public static boolean isKnown(String name) {
    return BY_NAME.containsKey(name);
  }
}
