package org.flowfs.client.api;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import java.nio.ByteBuffer;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.flowfs.client.Caller;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.datarep.DatarepRegistry;
import org.flowfs.common.rpc.NetRuntime;

/**
 * The typed, noncontiguous Java API of FlowFS (the MPI-IO model of seeds 002 and 004): opens
 * {@link FlowFile}s, which read and write through {@link View}s with memory datatypes and
 * datareps, independently or collectively with a {@link Group}.
 *
 * <pre>{@code
 * try (FlowIo io = FlowIo.connect(FlowFsConfig.load(Path.of("/var/lib/flowfs/embedded/flowfs.conf")));
 *      FlowFile f = io.open("/matrix", EnumSet.of(AccessMode.CREATE, AccessMode.READ_WRITE), Hints.NONE)) {
 *   f.setView(View.of(0, Request.DOUBLE, Request.resized(0, 64, Request.DOUBLE)));
 *   f.write(Memory.of(buffer, 1000, Request.DOUBLE));   // every 8th double of the file
 * }
 * }</pre>
 *
 * <p>It holds the client's {@link DatarepRegistry}: datareps registered here are known to the
 * files this object opens, and only to them. Conversions of asynchronous operations run on its
 * executor ({@code flowfs-api-N} threads).
 *
 * <p>Thread safe. Closing it closes nothing that it did not create: the client and its network
 * runtime if it connected itself, and its executor.
 */
public final class FlowIo implements AutoCloseable {
  private static final int CREATE_MODE = 0644;

  private final FileSystemClient client;
  private final NetRuntime ownNet;
  private final boolean ownsClient;
  private final Caller caller;
  private final DatarepRegistry datareps = new DatarepRegistry();
  private final ExecutorService executor;
  private final ByteBufAllocator alloc = PooledByteBufAllocator.DEFAULT;
  private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();

  private FlowIo(FileSystemClient client, NetRuntime ownNet, boolean ownsClient, Caller caller) {
    this.client = client;
    this.ownNet = ownNet;
    this.ownsClient = ownsClient;
    this.caller = caller;
    AtomicInteger n = new AtomicInteger();
    this.executor = Executors.newFixedThreadPool(Math.max(2, Runtime.getRuntime().availableProcessors()), r -> {
      Thread t = new Thread(r, "flowfs-api-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
  }

  /** Connects a client of its own to the file system {@code config} describes. */
  public static FlowIo connect(FlowFsConfig config) {
    NetRuntime net = NetRuntime.create("flowfs-api-net", 2);
    try {
      return new FlowIo(new FileSystemClient(config, net), net, true, processCaller());
    } catch (RuntimeException e) {
      net.close();
      throw e;
    }
  }

  /** Works over an existing client (which stays the caller's to close), as this process's user. */
  public static FlowIo over(FileSystemClient client) {
    return over(client, processCaller());
  }

  /** Works over an existing client, creating files as {@code caller}. */
  public static FlowIo over(FileSystemClient client, Caller caller) {
    return new FlowIo(Objects.requireNonNull(client, "client"), null, false, Objects.requireNonNull(caller, "caller"));
  }

  /** The user and group of this process (root if the platform does not say). */
  static Caller processCaller() {
    try {
      com.sun.security.auth.module.UnixSystem u = new com.sun.security.auth.module.UnixSystem();
      return new Caller((int) u.getUid(), (int) u.getGid(), (int) ProcessHandle.current().pid());
    } catch (RuntimeException | LinkageError e) {
      return Caller.ROOT;
    }
  }

  /** The client underneath. */
  public FileSystemClient client() {
    return client;
  }

  /** The datareps of this client: {@code native}, {@code external32} and the ones registered here. */
  public DatarepRegistry datareps() {
    return datareps;
  }

  ExecutorService executor() {
    return executor;
  }

  ByteBufAllocator alloc() {
    return alloc;
  }

  /** {@link #open(String, Set, Hints)} with {@code modes} (none: READ_ONLY) and no hints. */
  public FlowFile open(String path, AccessMode... modes) {
    return open(path, modes.length == 0 ? EnumSet.noneOf(AccessMode.class) : EnumSet.of(modes[0], modes), Hints.NONE);
  }

  /**
   * Opens (and with {@link AccessMode#CREATE} creates) a file on its own (MPI_File_open over a
   * group of one). Hints it does not know or cannot use are ignored and reported by {@link
   * FlowFile#ignoredHints()}.
   *
   * @throws FsException {@code ENOENT} without CREATE for a missing file, {@code EEXIST} with
   *     EXCLUSIVE for an existing one, {@code EISDIR}, ...
   * @throws IllegalArgumentException if the modes are not a valid combination
   */
  public FlowFile open(String path, Set<AccessMode> modes, Hints hints) {
    return open(Group.self(), path, modes, hints);
  }

  /**
   * Opens a file collectively: every member of {@code group} calls this with the same path, modes
   * and hints. Rank 0 creates the file if asked; the others open it after; all fail together if
   * any fails. The file's collective operations then run over {@code group}.
   */
  public FlowFile open(Group group, String path, Set<AccessMode> modes, Hints hints) {
    Set<AccessMode> m = AccessMode.check(EnumSet.copyOf(modes.isEmpty() ? EnumSet.of(AccessMode.READ_ONLY) : modes));
    Objects.requireNonNull(hints, "hints");
    if (group.size() == 1) {
      return openAlone(group, path, m, hints, false);
    }
    FlowFile f = null;
    RuntimeException failure = null;
    if (group.rank() == 0) {
      try {
        f = openAlone(group, path, m, hints, false);
      } catch (RuntimeException e) {
        failure = e;
      }
    }
    boolean created = checkAll(group, failure, f != null && f.created(), "rank 0 could not open " + path);
    if (group.rank() != 0) {
      Set<AccessMode> later = EnumSet.copyOf(m);
      later.remove(AccessMode.EXCLUSIVE);
      try {
        f = openAlone(group, path, later, hints, created);
      } catch (RuntimeException e) {
        failure = e;
      }
    }
    try {
      checkAll(group, failure, false, "a member could not open " + path);
    } catch (RuntimeException e) {
      if (f != null) {
        client.release(fileOf(f));
      }
      throw e;
    }
    return f;
  }

  private static OpenFile fileOf(FlowFile f) {
    return f.openFile();
  }

  /**
   * Shares whether every member succeeded (and whether rank 0 created the file); throws at every
   * member if one did not. Returns whether rank 0 created the file.
   */
  private static boolean checkAll(Group group, RuntimeException mine, boolean created, String what) {
    int code = mine == null ? (created ? -1 : 0) : mine instanceof FsException fe ? fe.errno().code() : Errno.EINVAL.code();
    byte[][] all = group.allgather(ByteBuffer.allocate(4).putInt(code).array());
    if (mine != null) {
      throw mine;
    }
    for (byte[] a : all) {
      int c = ByteBuffer.wrap(a).getInt();
      if (c > 0) {
        throw new FsException(Errno.ofCode(c), what);
      }
    }
    return ByteBuffer.wrap(all[0]).getInt() == -1;
  }

  /** Opens (or creates) the file for this member; {@code groupCreated}: rank 0 just created it. */
  private FlowFile openAlone(Group group, String path, Set<AccessMode> m, Hints hints, boolean groupCreated) {
    int flags = AccessMode.posixFlags(m);
    int ioServers = client.config().ioServers().size();
    OpenFile of = null;
    boolean created = false;
    Tuning t = null;
    if (m.contains(AccessMode.CREATE)) {
      t = new Tuning().apply(hints, true, ioServers);
      if (m.contains(AccessMode.EXCLUSIVE)) {
        of = client.create(path, CREATE_MODE, flags, caller, t.dist(), t.stripingFactor);
        created = true;
      } else {
        try {
          of = client.open(path, flags);
        } catch (FsException e) {
          if (e.errno() != Errno.ENOENT) {
            throw e;
          }
          try {
            of = client.create(path, CREATE_MODE, flags, caller, t.dist(), t.stripingFactor);
            created = true;
          } catch (FsException race) {
            if (race.errno() != Errno.EEXIST) {
              throw race;
            }
            of = client.open(path, flags);
          }
        }
      }
    } else {
      of = client.open(path, flags);
    }
    if (!created) {
      t = new Tuning().apply(hints, groupCreated, ioServers);
      t.stripingFactor = 0; // applied by whoever created the file, if anyone
      t.stripingUnit = 0;
    }
    try {
      return new FlowFile(this, of, path, m, group, t, created);
    } catch (RuntimeException e) {
      client.release(of);
      throw e;
    }
  }

  /** Deletes a file (MPI_File_delete). */
  public void delete(String path) {
    client.unlink(path);
  }

  @Override
  public void close() {
    if (closed.getAndSet(true)) {
      return;
    }
    executor.shutdown();
    try {
      executor.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (ownsClient) {
      client.close();
      ownNet.close();
    }
  }
}
