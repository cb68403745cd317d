package org.flowfs.fuse;

import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;
import org.flowfs.common.Attr;

/**
 * The kernel's nodes of files with more than one name, so that a change through one name shows
 * through the others at once.
 *
 * <p>libfuse 2's high-level API gives the kernel a node per name, not per file: the names of a
 * hard-linked file are separate inodes to the kernel, each with its own cached attributes,
 * trusted for the attribute timeout. Without help, {@code ln a b; truncate -s 100 b; stat a}
 * showed a's old size and link count for up to a second, as if a and b were different files.
 *
 * <p>The nodes are learned from the requests the loop processes ({@link KernelRequest}): a getattr or
 * setattr of a file with more than one link names its node, and a link names the node of the file
 * it links. After a change of such a file (a setattr, a write, a link, an unlink or a rename over
 * one of its names) the attributes the kernel cached under its other nodes are dropped ({@link
 * KernelAttrs}): the next stat through them asks this client. A node only ever looked up (never
 * the subject of a request) is not known, and keeps its attributes for the timeout as before.
 *
 * <p>The nodes of at most {@link #MAX_FILES} files are kept; past that they are forgotten and
 * learned again. libfuse numbers nodes upwards and does not reuse a number before it wraps, so a
 * node the kernel forgot costs a notification the kernel refuses. Thread safe.
 */
final class LinkNodes {
  static final int MAX_FILES = 1 << 16;

  private final KernelAttrs kernel;
  /** By inode number (the file's handle): the nodes known to name it. */
  private final ConcurrentHashMap<Long, long[]> byIno = new ConcurrentHashMap<>();

  LinkNodes(KernelAttrs kernel) {
    this.kernel = kernel;
  }

  /** The node of the request being processed this class acts on: a getattr's, setattr's, write's, or the file a link linked; else 0. */
  private static long node(KernelRequest r) {
    return switch (r.opcode()) {
      case FuseWire.FUSE_GETATTR, FuseWire.FUSE_SETATTR, FuseWire.FUSE_WRITE -> r.node();
      case FuseWire.FUSE_LINK -> r.linked();
      default -> 0;
    };
  }

  /**
   * The attributes {@code a} answer the request being processed (a getattr, or the getattr that
   * answers a setattr): learns the request's node when the file has more than one name; after a
   * setattr, drops what the kernel cached under its other nodes.
   */
  void answered(Attr a) {
    KernelRequest r = KernelRequest.current();
    long node = node(r);
    if (node == 0 || r.opcode() == FuseWire.FUSE_LINK || !a.isRegular()) {
      return;
    }
    long ino = a.handle().id();
    if (a.nlink() > 1) {
      learn(ino, node);
    }
    if (r.opcode() == FuseWire.FUSE_SETATTR) {
      changed(ino);
    }
    if (a.nlink() == 1 && any()) {
      byIno.remove(ino); // one name left: nothing to keep in step
    }
  }

  /**
   * The link being processed made {@code target}, now with its new link count: the node it linked
   * is learned, and every node of it dropped.
   */
  void linked(Attr target) {
    long node = KernelRequest.current().linked();
    if (node == 0) {
      return;
    }
    long ino = target.handle().id();
    learn(ino, node);
    drop(ino, 0);
  }

  /** File {@code ino} changed by the request being processed: its other nodes' attributes are dropped. */
  void changed(long ino) {
    if (any()) {
      drop(ino, node(KernelRequest.current())); // (a link drops every node itself: linked)
    }
  }

  /** Whether any node is known: else no change needs {@link #changed}. */
  boolean any() {
    return !byIno.isEmpty();
  }

  private void learn(long ino, long node) {
    if (byIno.size() >= MAX_FILES) {
      byIno.clear();
    }
    byIno.compute(ino, (k, nodes) -> {
      if (nodes == null) {
        return new long[] {node};
      }
      for (long n : nodes) {
        if (n == node) {
          return nodes;
        }
      }
      long[] more = Arrays.copyOf(nodes, nodes.length + 1);
      more[nodes.length] = node;
      return more;
    });
  }

  private void drop(long ino, long except) {
    long[] nodes = byIno.get(ino);
    if (nodes == null) {
      return;
    }
    for (long n : nodes) {
      if (n != except) {
        kernel.drop(n);
      }
    }
  }
}
