package org.flowfs.common.dist;

import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;

/**
 * The distributions by name: a file's metadata stores a {@link DistSpec}, this turns it back.
 *
 * <ul>
 *   <li>{@value SimpleStripe#NAME}: {@link SimpleStripe}, parameter the strip size (default
 *       {@value SimpleStripe#DEFAULT_STRIP_SIZE});
 *   <li>{@value Basic#NAME}: {@link Basic}, no parameters;
 *   <li>{@value VarStrip#NAME}: {@link VarStrip}, parameters the strip sizes.
 * </ul>
 *
 * <p>The table of built-ins is immutable; this class has no state and is thread safe.
 */
public final class Distributions {
  private static final Map<String, Function<List<Long>, Distribution>> BY_NAME =
      Map.of(
          SimpleStripe.NAME,
          p -> {
            if (p.size() > 1) {
              throw new IllegalArgumentException("at most one parameter, the strip size");
            }
            return new SimpleStripe(p.isEmpty() ? SimpleStripe.DEFAULT_STRIP_SIZE : p.get(0));
          },
          Basic.NAME,
          p -> {
            if (!p.isEmpty()) {
              throw new IllegalArgumentException("no parameters");
            }
            return new Basic();
          },
          VarStrip.NAME,
          VarStrip::new);

  private Distributions() {}

  /** The distribution a spec names, or EINVAL for an unknown name or bad parameters. */
  public static Distribution of(DistSpec spec) {
    Function<List<Long>, Distribution> f = BY_NAME.get(spec.name());
    if (f == null) {
      throw new FsException(Errno.EINVAL, "unknown distribution '" + spec.name() + "'");
    }
    try {
      return f.apply(spec.params());
    } catch (IllegalArgumentException | IndexOutOfBoundsException | NullPointerException e) {
      throw new FsException(
          Errno.EINVAL, "bad parameters for distribution '" + spec.name() + "': " + e.getMessage());
    }
  }

  /** Whether a distribution of this name is registered. */
  public static boolean isKnown(String name) {
    return BY_NAME.containsKey(name);
  }
}
