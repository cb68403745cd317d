package org.flowfs.common.datarep;

import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.flowfs.common.request.Elementary;

/**
 * The data representations one client knows, by name (MPI keeps them per process; here each
 * registry is its own namespace, so there is no global state). A new registry holds {@value
 * Datarep#NATIVE} and {@value Datarep#EXTERNAL32}; {@link #register} adds user representations
 * (MPI_REGISTER_DATAREP). Representations cannot be removed or replaced.
 *
 * <p>Thread safe.
 */
public final class DatarepRegistry {
  /** The longest datarep name (MPI's {@code MPI_MAX_DATAREP_STRING} is at least 64). */
  public static final int MAX_NAME = 64;

  private final ConcurrentMap<String, Datarep> reps = new ConcurrentHashMap<>();

  /** A registry with the standard representations {@value Datarep#NATIVE} and {@value Datarep#EXTERNAL32}. */
  public DatarepRegistry() {
    reps.put(Datarep.NATIVE, NativeDatarep.INSTANCE);
    reps.put(Datarep.EXTERNAL32, External32.INSTANCE);
  }

  /**
   * Registers a user representation (MPI_REGISTER_DATAREP). A null conversion function means no
   * conversion in that direction (MPI_CONVERSION_FN_NULL): the bytes move as they are, which is
   * only allowed when every file extent equals the native size.
   *
   * @param name the name views use, 1..{@value #MAX_NAME} characters
   * @param read file to memory form, or null
   * @param write memory to file form, or null
   * @param extent the file extent of each predefined type
   * @param extraState passed to every call of the three functions (may be null)
   * @return the new representation
   * @throws DuplicateDatarepException if {@code name} is already registered here
   */
  public <S> Datarep register(String name, ConversionFunction<S> read, ConversionFunction<S> write,
      ExtentFunction<S> extent, S extraState) {
    Objects.requireNonNull(extent, "extent function");
    UserDatarep<S> rep = new UserDatarep<>(checkName(name), read, write, extent, extraState);
    if (read == null || write == null) {
      for (Elementary e : Elementary.values()) {
        if (rep.fileExtent(e) != e.size()) {
          throw new IllegalArgumentException("datarep " + name + " without a conversion function must keep native sizes ("
              + e.typeName() + ": " + rep.fileExtent(e) + ")");
        }
      }
    }
    return add(rep);
  }

  /**
   * Registers a representation implemented directly.
   *
   * @throws DuplicateDatarepException if its name is already registered here
   */
  public Datarep register(Datarep rep) {
    checkName(rep.name());
    return add(rep);
  }

  private Datarep add(Datarep rep) {
    if (reps.putIfAbsent(rep.name(), rep) != null) {
      throw new DuplicateDatarepException(rep.name());
    }
    return rep;
  }

  private static String checkName(String name) {
    if (name == null || name.isEmpty() || name.length() > MAX_NAME) {
      throw new IllegalArgumentException("a datarep name has 1.." + MAX_NAME + " characters: " + name);
    }
    return name;
  }

  /**
   * The representation called {@code name}.
   *
   * @throws IllegalArgumentException if none is (MPI's {@code MPI_ERR_UNSUPPORTED_DATAREP})
   */
  public Datarep get(String name) {
    Datarep r = reps.get(name);
    if (r == null) {
      throw new IllegalArgumentException("unknown datarep '" + name + "' (known: " + names() + ")");
    }
    return r;
  }

  /** Whether {@code name} is registered. */
  public boolean contains(String name) {
    return reps.containsKey(name);
  }

  /** The registered names, sorted. */
  public Set<String> names() {
    return new TreeSet<>(reps.keySet());
  }
}
