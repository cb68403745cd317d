package org.flowfs.common.wire;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.flowfs.common.request.Elementary;
import org.flowfs.common.request.Request;

/**
 * A {@link Request} on the wire: its nodes in post-order (every node after its parts), each naming
 * its parts by index, so decoding rebuilds the tree bottom-up through the request factories, which
 * check every parameter. Shared parts are sent once.
 */
public record RequestSpec(List<Node> nodes) {
  public static final int MAX_NODES = 4096;

  /** One request node: the combiner and its parameters; unused fields are 0 or null. */
  public record Node(Request.Combiner combiner, Elementary named, long count, long blockLength, long stride,
      long[] blockLengths, long[] displacements, long[] parts, long[] sizes, long[] subsizes, long[] starts,
      Request.Order order) {}

  public RequestSpec {
    nodes = List.copyOf(nodes);
    if (nodes.isEmpty() || nodes.size() > MAX_NODES) {
      throw new IllegalArgumentException("a request has 1.." + MAX_NODES + " nodes, not " + nodes.size());
    }
  }

  public static RequestSpec of(Request r) {
    List<Node> out = new ArrayList<>();
    add(r, out, new IdentityHashMap<>());
    return new RequestSpec(out);
  }

  private static int add(Request r, List<Node> out, Map<Request, Integer> seen) {
    Integer known = seen.get(r);
    if (known != null) {
      return known;
    }
    List<Request> types = r.combiner() == Request.Combiner.NAMED ? List.of() : r.types();
    long[] parts = new long[types.size()];
    for (int i = 0; i < parts.length; i++) {
      parts[i] = add(types.get(i), out, seen);
    }
    Request.Combiner c = r.combiner();
    boolean arrays = c == Request.Combiner.INDEXED || c == Request.Combiner.HINDEXED || c == Request.Combiner.STRUCT;
    boolean sub = c == Request.Combiner.SUBARRAY;
    out.add(new Node(c, r.named().orElse(null), r.count(), r.blockLength(), r.stride(),
        arrays ? r.blockLengths() : null, arrays || c == Request.Combiner.RESIZED ? r.displacements() : null, parts,
        sub ? r.sizes() : null, sub ? r.subsizes() : null, sub ? r.starts() : null, r.order().orElse(null)));
    seen.put(r, out.size() - 1);
    return out.size() - 1;
  }

  /**
   * Rebuilds the request.
   *
   * @throws IllegalArgumentException if a node is inconsistent (a malformed or hostile message)
   */
  public Request toRequest() {
    Request[] built = new Request[nodes.size()];
    long[] entries = new long[built.length];
    long budget = MAX_EXPANSION;
    for (Node n : nodes) {
      budget += length(n.blockLengths()) + length(n.displacements()) + length(n.parts()) + length(n.sizes());
    }
    long spent = 0;
    for (int i = 0; i < built.length; i++) {
      Node n = nodes.get(i);
      if (n.combiner() == null) {
        throw new IllegalArgumentException("node " + i + " has no combiner");
      }
      long[] parts = n.parts() == null ? new long[0] : n.parts();
      Request[] p = new Request[parts.length];
      for (int j = 0; j < parts.length; j++) {
        if (parts[j] < 0 || parts[j] >= i) {
          throw new IllegalArgumentException("node " + i + " names part " + parts[j]);
        }
        p[j] = built[(int) parts[j]];
      }
      // what building this node may cost, before building it: a request of a few kilobytes must
      // not make the receiver flatten parts into gigabytes
      entries[i] = entries(n, parts, entries);
      spent += entries[i];
      if (spent > budget) {
        throw new IllegalArgumentException("request too complex: its parts would be copied more than " + budget + " times");
      }
      built[i] = build(n, p);
    }
    return built[built.length - 1];
  }

  /**
   * Entries (blocks or parts) the walking form of a request may copy beyond what the message
   * itself holds: a few node lists of {@link #FLATTEN_LIMIT} entries.
   */
  public static final long MAX_EXPANSION = 1 << 20;
  /** How many entries the request factories copy into one flattened list at most. */
  static final long FLATTEN_LIMIT = 1 << 16;

  /**
   * An upper bound of the entries node {@code n} copies when built: its own lists, and for the
   * list-making combiners the flattened entries of its parts (which the factories inline up to
   * {@link #FLATTEN_LIMIT}). Loops (contiguous, vector, resized) refer to their part, not copy it.
   */
  private static long entries(Node n, long[] parts, long[] entries) {
    long own = 1 + length(n.blockLengths()) + length(n.displacements()) + length(n.sizes());
    switch (n.combiner()) {
      case STRUCT: {
        long inlined = 0;
        for (long part : parts) {
          inlined = Math.min(FLATTEN_LIMIT, inlined + entries[(int) part]);
        }
        return own + inlined;
      }
      case INDEXED:
      case HINDEXED: {
        long blocks = length(n.blockLengths());
        long per = parts.length == 0 ? 1 : entries[(int) parts[0]];
        long inlined = per == 0 || blocks <= FLATTEN_LIMIT / per ? blocks * per : FLATTEN_LIMIT;
        return own + Math.min(FLATTEN_LIMIT, inlined);
      }
      default:
        return own;
    }
  }

  private static long length(long[] a) {
    return a == null ? 0 : a.length;
  }

  private static Request build(Node n, Request[] p) {
    switch (n.combiner()) {
      case NAMED:
        if (n.named() == null) {
          throw new IllegalArgumentException("named node without a type");
        }
        return Request.of(n.named());
      case STRUCT:
        return Request.struct(need(n.blockLengths()), need(n.displacements()), List.of(p));
      default:
        break;
    }
    if (p.length != 1) {
      throw new IllegalArgumentException(n.combiner() + " takes one base type, not " + p.length);
    }
    Request base = p[0];
    return switch (n.combiner()) {
      case CONTIGUOUS -> Request.contiguous(n.count(), base);
      case VECTOR -> Request.vector(n.count(), n.blockLength(), n.stride(), base);
      case HVECTOR -> Request.hvector(n.count(), n.blockLength(), n.stride(), base);
      case INDEXED -> Request.indexed(need(n.blockLengths()), need(n.displacements()), base);
      case HINDEXED -> Request.hindexed(need(n.blockLengths()), need(n.displacements()), base);
      case SUBARRAY -> Request.subarray(need(n.sizes()), need(n.subsizes()), need(n.starts()),
          n.order() == null ? Request.Order.C : n.order(), base);
      case RESIZED -> {
        long[] d = need(n.displacements());
        if (d.length != 2) {
          throw new IllegalArgumentException("resized needs {lb, extent}");
        }
        yield Request.resized(d[0], d[1], base);
      }
      default -> throw new IllegalArgumentException("combiner " + n.combiner());
    };
  }

  private static long[] need(long[] a) {
    if (a == null) {
      throw new IllegalArgumentException("missing array");
    }
    return a;
  }
}
