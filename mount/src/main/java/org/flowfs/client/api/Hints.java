package org.flowfs.client.api;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Key/value hints for opening a file (MPI's {@code MPI_Info}). A hint never makes an operation
 * fail: hints this implementation does not know, or whose value it cannot use, are ignored and
 * reported by {@link FlowFile#ignoredHints()}; {@link FlowFile#hints()} gives the values in
 * effect. Known hints:
 *
 * <table>
 *   <caption>hints</caption>
 *   <tr><th>key</th><th>meaning</th><th>default</th></tr>
 *   <tr><td>{@value #STRIPING_FACTOR}</td><td>I/O servers a created file is striped over</td>
 *       <td>{@code layout.servers}</td></tr>
 *   <tr><td>{@value #STRIPING_UNIT}</td><td>strip size in bytes of a created file
 *       ({@code simple_stripe})</td><td>{@code layout.strip-size}</td></tr>
 *   <tr><td>{@value #CB_BUFFER_SIZE}</td><td>bytes an aggregator moves per round of a collective
 *       operation</td><td>16 MiB</td></tr>
 *   <tr><td>{@value #CB_NODES}</td><td>aggregators of collective operations</td><td>the file's
 *       server count, at most the group size</td></tr>
 *   <tr><td>{@value #DATAREP_BUFFER_SIZE}</td><td>bytes converted per chunk by a converting
 *       datarep</td><td>8 MiB</td></tr>
 *   <tr><td>{@value #DS_READ}</td><td>{@code enable}: independent reads of a noncontiguous view
 *       read the file range its pieces span in contiguous windows and pick the pieces out
 *       (data sieving: more bytes, far fewer pieces for the servers); {@code disable}: the flows
 *       carry exactly the view's bytes</td><td>{@code disable}</td></tr>
 *   <tr><td>{@value #IND_RD_BUFFER_SIZE}</td><td>bytes per data-sieving window</td>
 *       <td>4 MiB</td></tr>
 * </table>
 *
 * Striping hints act only when the open creates the file. Immutable and thread safe.
 */
public final class Hints {
  public static final String STRIPING_FACTOR = "striping_factor";
  public static final String STRIPING_UNIT = "striping_unit";
  public static final String CB_BUFFER_SIZE = "cb_buffer_size";
  public static final String CB_NODES = "cb_nodes";
  public static final String DATAREP_BUFFER_SIZE = "flowfs_datarep_buffer_size";
  public static final String DS_READ = "romio_ds_read";
  public static final String IND_RD_BUFFER_SIZE = "ind_rd_buffer_size";

  /** No hints. */
  public static final Hints NONE = new Hints(Map.of());

  private final Map<String, String> map;

  private Hints(Map<String, String> map) {
    this.map = Collections.unmodifiableMap(new LinkedHashMap<>(map));
  }

  /** Hints from alternating keys and values: {@code Hints.of("striping_factor", "4")}. */
  public static Hints of(String... keysAndValues) {
    if (keysAndValues.length % 2 != 0) {
      throw new IllegalArgumentException("keys and values come in pairs");
    }
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < keysAndValues.length; i += 2) {
      m.put(Objects.requireNonNull(keysAndValues[i], "key"), Objects.requireNonNull(keysAndValues[i + 1], "value"));
    }
    return new Hints(m);
  }

  /** Hints from a map (copied). */
  public static Hints of(Map<String, String> map) {
    return new Hints(map);
  }

  /** These hints and {@code key = value} (replacing an earlier value). */
  public Hints with(String key, String value) {
    Map<String, String> m = new LinkedHashMap<>(map);
    m.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
    return new Hints(m);
  }

  public Optional<String> get(String key) {
    return Optional.ofNullable(map.get(key));
  }

  /** The hints as an unmodifiable map, in the order they were given. */
  public Map<String, String> asMap() {
    return map;
  }

  public boolean isEmpty() {
    return map.isEmpty();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Hints h && h.map.equals(map);
  }

  @Override
  public int hashCode() {
    return map.hashCode();
  }

  @Override
  public String toString() {
    return map.toString();
  }
}
