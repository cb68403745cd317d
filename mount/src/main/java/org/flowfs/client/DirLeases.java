package org.flowfs.client;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.flowfs.common.Attr;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FileType;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.NamedThreads;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.MetaOp;
import org.flowfs.common.wire.MetaOp.BatchCreate;
import org.flowfs.common.wire.MetaOp.BatchRemove;
import org.flowfs.common.wire.MetaOp.BatchResult;
import org.flowfs.common.wire.MetaOp.CreateBatchReq;
import org.flowfs.common.wire.MetaOp.CreateBatchResp;
import org.flowfs.common.wire.MetaOp.DirLeaseReq;
import org.flowfs.common.wire.MetaOp.DirLeaseResp;
import org.flowfs.common.wire.MetaOp.RemoveReq;
import org.flowfs.common.wire.MetaOp.RemoveResult;
import org.flowfs.common.wire.MetaOp.RenameReq;
import org.flowfs.common.wire.MetaOp.Reserved;
import org.flowfs.common.wire.MetaOp.SetattrReq;
import org.flowfs.common.wire.Req;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This client's leases on directories it made ({@link MetaOp.DirLeaseReq}): under a lease, a
 * regular file is created here, with a handle and layout the metadata server reserved for it, and
 * its create, its head bytes and the size and times its close recorded go to the server later,
 * with other files', in one {@link MetaOp.CreateBatchReq}. A directory is made the same way (a
 * reserved handle, no layout). A small file or a directory then costs no round trip of its own:
 * {@code tar -x}, {@code mkdir -p} and a loop of creates wait for no server.
 *
 * <p><b>What holds.</b> Other clients see a file made here once it is in a batch the server
 * answered; the server holds back every request of theirs that touches a leased directory until
 * the holder sent what it holds and ended the lease (a recall), or the lease expired. So a close
 * here, then an open on another client, finds the file with its bytes (close-to-open). This
 * client's own requests never wait for its own lease: before one names a leased directory it ends
 * the lease, and before one names a file not yet in an answered batch it sends the batch and waits
 * for the answer ({@link #settle}). A lease is only taken on a directory whose every name this
 * client knows ({@link DirContents}) at the ctime the grant reports, or whose names the grant
 * lists ({@link #wantListed}), so a local create knows the name is free. Batches leave when {@link #BATCH} closed files wait, else {@link #LINGER_NANOS}
 * after a close; a file open longer than {@link #OPEN_NANOS} goes as a create alone (its close is
 * then an ordinary call); a lease nothing was created under for {@link #IDLE_NANOS} is ended.
 *
 * <p><b>Failures.</b> A create that fails in a batch (the server's disk is full, say) fails the
 * file's later flush, fsync and close on this client; a file already closed by then is lost and
 * logged as an error. A batch that is lost (the metadata server restarted, the connection
 * dropped before the answer, or the lease expired because this client stalled past its term)
 * ends the lease here, and each of its files is made again with a call of its own under its
 * reserved handle ({@link MetaOp.ReclaimReq}), open or not, so opens of it and bytes written
 * into its datafiles stay good.
 *
 * <p>Thread safe: a lease's state is guarded by the lease; answers are handled on one thread.
 */
final class DirLeases implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(DirLeases.class);
  /** The most names a lease remembers it made ({@link Lease#madeHere}). */
  static final int MADE = 65_536;
  /** The most names all leases remember they made, together. */
  static final int MADE_TOTAL = 262_144;
  /** Closed files that make a batch leave at once. */
  static final int BATCH = 64;
  /** Head bytes one batch carries at most (a frame is at most {@code rpc.max-frame}, 16 MiB by default). */
  static final int MAX_BATCH_BYTES = 4 << 20;
  /** How long a closed file waits for others to go with it. */
  static final long LINGER_NANOS = 5_000_000;
  /** A file open this long has its create sent alone (its bytes go with its close, as usual). */
  static final long OPEN_NANOS = 50_000_000;
  /** A lease nothing was created under for this long is ended. */
  static final long IDLE_NANOS = 20_000_000;
  /** How often, and how far apart, the files of a lost batch are tried again while the metadata server is away. */
  static final int RECOVER_ATTEMPTS = 20;
  static final long RECOVER_PAUSE_MS = 500;

  /** What the leases need of the client they serve: the metadata server and the caches. */
  interface Host {
    /** Sends a request to the metadata server, answered on any thread. */
    <R extends Message> CompletableFuture<R> send(Req<R> req);

    /** A create of a batch was made: {@code attr} is the file or directory now, and the directory's ctime was {@code parentWasNs} before. */
    void created(Handle dir, String name, Attr attr, long parentWasNs, long askedNanos);

    /** A create made here failed (or it is not known whether it was made): forget what was cached of it. */
    void failed(Handle dir, String name, Handle file);

    /**
     * Whether every name of {@code dir} is known here, at ctime {@code ctimeNs}, which the server
     * read for a grant asked for at {@code askedNanos}: they are trusted from then on.
     */
    boolean knownAt(Handle dir, long ctimeNs, long askedNanos);

    /** The ctime at which every name of {@code dir} is known here (0: not known): a grant lists the names if it is another. */
    long knownCtime(Handle dir);

    /** Every name of {@code dir} at ctime {@code ctimeNs}, as a grant asked for at {@code askedNanos} listed them. */
    void listed(Handle dir, List<String> names, long ctimeNs, long askedNanos);

    /**
     * Makes {@code create}, a file or directory of a batch that was lost (the metadata server
     * restarted, or the connection dropped before the answer), with calls of its own, under its
     * reserved handle and {@code layout} (null for a directory): finds it made already (then
     * applies its record and head, if it has them) or sends a {@link MetaOp.ReclaimReq}. Its
     * head bytes are {@code head} (may be null; not taken over). Returns the object's attributes.
     * Its calls name the file, so they must not {@link #settle} it: that waits for this.
     */
    Attr reclaim(Handle dir, BatchCreate create, Layout layout, ByteBuf head);

    /** Applies {@code record}, a leased directory's own changes whose batch was lost, with a call of its own. */
    void record(SetattrReq record);

    /**
     * An unlink (of a {@code directory}: an rmdir) of a batch was made: {@code r} says what it
     * removed and the directory's ctimes around it.
     */
    void unlinked(Handle dir, String name, RemoveResult r, boolean directory, long askedNanos);

    /**
     * Unlinks {@code name} in {@code dir} (removes it, a {@code directory}), an unlink of a batch
     * that was lost, with a call of its own; a name found gone already counts as done (the lost
     * batch may have been made).
     */
    void unlinkAgain(Handle dir, String name, boolean directory);

    /** The object {@code name} in {@code dir} is, as this client knows (cached); null when not known. */
    Handle known(Handle dir, String name);

    /** Whether this client knows that {@code dir} holds no {@code name} (its names are trusted, or a lookup found it free lately). */
    boolean free(Handle dir, String name);
  }

  /** A name unlinked (or an empty directory removed) under a lease whose batch was not answered yet. */
  private static final class Unlinked {
    final Lease lease;
    final String name;
    final Handle file;
    /** For a directory removed: this client's lease on it, which ends with it; else null. */
    final Lease child;
    /** A directory made under {@link #lease}, not leased itself ({@link BatchRemove#madeDir}). */
    final boolean made;
    /**
     * For a directory removed under {@link #child}: the batches sent under that lease before,
     * which the server takes in first.
     */
    final int childBatches;
    /** Answered, or made again, or given up: never exceptionally. */
    final CompletableFuture<Void> done = new CompletableFuture<>();
    // guarded by lease
    boolean sent;

    Unlinked(Lease lease, String name, Handle file, Lease child, boolean made, int childBatches) {
      this.lease = lease;
      this.name = name;
      this.file = file;
      this.child = child;
      this.made = made;
      this.childBatches = childBatches;
    }

    /** An rmdir: of a directory leased here ({@link #child}) or {@link #made} under the lease. */
    boolean directory() {
      return child != null || made;
    }

    /** What the batch carries of it. */
    BatchRemove remove() {
      return child != null ? BatchRemove.afterBatches(name, child.id, childBatches)
          : made ? BatchRemove.madeDir(name) : BatchRemove.unlink(name);
    }
  }

  /** A file or directory made under a lease whose batch was not answered yet. */
  private static final class Pending {
    final Lease lease;
    final String name;
    final FileType type;
    final Handle handle;
    /** The reserved layout (null for a directory). */
    final Layout layout;
    final int mode;
    final int uid;
    final int gid;
    final long madeNanos;
    /** Answered (exceptionally with the create's {@link FsException} when it failed). */
    final CompletableFuture<Void> done = new CompletableFuture<>();
    /** A directory's lease granted with its batch ({@link #leaseFiles}), set before {@link #done} completes. */
    volatile DirLeaseResp grant;
    // guarded by lease
    /** A directory this client wants to create in: its batch asks for a lease on it with these files. */
    int leaseFiles;
    boolean closed;
    boolean sent;
    SetattrReq record;
    long headOffset;
    ByteBuf head;

    /** Guarded by {@code lease}: its create as a batch carries it, with what its close recorded, if it was. */
    BatchCreate create(int withLeaseFiles) {
      int length = head == null ? 0 : head.readableBytes();
      return new BatchCreate(name, type == FileType.DIRECTORY, withLeaseFiles, handle, mode, uid, gid, record,
          headOffset, length);
    }

    Pending(Lease lease, String name, FileType type, Handle handle, Layout layout, int mode, int uid, int gid) {
      this.lease = lease;
      this.name = name;
      this.type = type;
      this.handle = handle;
      this.layout = layout;
      this.mode = mode;
      this.uid = uid;
      this.gid = gid;
      this.madeNanos = System.nanoTime();
    }
  }

  private final class Lease {
    final Handle dir;
    final long id;
    final CompletableFuture<Void> over = new CompletableFuture<>();
    // guarded by this
    final ArrayDeque<Reserved> reserved;
    final List<Pending> waiting = new ArrayList<>();
    int closedWaiting;
    /** A batch is out, answered when {@link #answer} completes; {@link #again}: send the next as soon as it is. */
    boolean out;
    /** Batches sent under this lease. */
    int batches;
    CompletableFuture<Void> answer = CompletableFuture.completedFuture(null);
    boolean again;
    /** Send every waiting file with the next batch, open or not. */
    boolean urgent;
    boolean recalled;
    boolean ending;
    boolean lingering;
    long lastCreateNanos = System.nanoTime();
    /** Files and directories made under this lease. */
    int made;
    /** Changes of the directory's own mode, owner and times made here, for the batch that empties {@link #waiting}. */
    DeferredAttrs dirAttrs;
    /** Names unlinked here and not sent yet, in order. */
    final List<Unlinked> unlinked = new ArrayList<>();
    /** Names unlinked here whose batch is not answered yet: not made here again before it is. */
    final java.util.Set<String> unlinking = new java.util.HashSet<>();
    /**
     * The names made under this lease (at most {@link #MADE}) and not unlinked, with their
     * objects. While the lease lives nobody else changes the directory (a request of another
     * client there waits for its end, and one of this client ends it first), so a name here has
     * that object ({@link #madeHere}); and nobody else can have reached one of these objects, so
     * a directory among them that is empty as far as this client knows is empty, and its rmdir
     * can go with a batch ({@link #rmdir}).
     */
    final Map<String, Handle> madeHere = new java.util.HashMap<>();

    /** Guarded by this: {@code name} was made here as {@code h}; remembered within {@link #MADE} and {@link #MADE_TOTAL}. */
    void made(String name, Handle h) {
      if (madeHere.size() < MADE && madeNames.get() < MADE_TOTAL && madeHere.put(name, h) == null) {
        madeNames.incrementAndGet();
      }
    }

    /** Guarded by this: {@code name} is not (or no longer) {@code h}, when {@code h} is not null. */
    void unmade(String name, Handle h) {
      if (h == null ? madeHere.remove(name) != null : madeHere.remove(name, h)) {
        madeNames.decrementAndGet();
      }
    }
    /**
     * The directory is removed in its parent's batch ({@link #rmdir}): nothing more is made or
     * unlinked in it, and the lease is not ended here: it ends with the directory.
     */
    boolean removed;

    Lease(Handle dir, long id, List<Reserved> reserved) {
      this.dir = dir;
      this.id = id;
      this.reserved = new ArrayDeque<>(reserved);
    }
  }

  private final Host host;
  private final int files;
  private final Duration timeout;
  private final Counters counters;
  private final Map<Handle, Lease> byDir = new ConcurrentHashMap<>();
  /** The names all leases remember they made ({@link Lease#madeHere}). */
  private final AtomicInteger madeNames = new AtomicInteger();
  private final Map<Handle, Pending> byFile = new ConcurrentHashMap<>();
  /** Files a name of was unlinked here, until their batch is answered. */
  private final Map<Handle, Unlinked> byUnlinked = new ConcurrentHashMap<>();
  /** Directories a lease was refused on, until when ({@link System#nanoTime}): not asked again before. */
  private final Map<Handle, Long> refused = new ConcurrentHashMap<>();
  /** How long a refusal stands (another client holds a lease there, or the directory is set-group-id). */
  static final long REFUSED_NANOS = 1_000_000_000;
  /**
   * Directories not asked for a lease with their names ({@link #wantListed}) before when: one
   * was refused there (another client holds a lease, or too many names), or recalled (another
   * client works there too: leases would pass to and fro).
   */
  private final Map<Handle, Long> noListing = new ConcurrentHashMap<>();
  /** How long a directory is not asked for a lease with its names after a refusal or a recall. */
  static final long NO_LISTING_NANOS = 30_000_000_000L;
  /**
   * Directories not asked for a lease before when: a rename there ended a lease under which at
   * most {@link #RENAMED_AFTER} objects were made. A job that writes each file under a temporary
   * name and renames it (an editor's save, a build's {@code tmp && mv}) ends the directory's lease at
   * every rename, and a lease taken again for the next file costs a grant and a batch more than
   * the create it saves.
   */
  private final Map<Handle, Long> renaming = new ConcurrentHashMap<>();
  /** How long a directory renamed in that way is not asked for a lease. */
  static final long RENAMING_NANOS = 1_000_000_000;
  /** The most objects a lease a rename ends may have seen made for its directory to be held off. */
  static final int RENAMED_AFTER = 2;
  /** Creates of their own in a directory whose names are not known here, within a while, before a lease with its names is asked for. */
  static final int LISTING_AFTER = 8;
  /** Those creates per directory, for about two seconds from the first. */
  private final Cache<Handle, AtomicInteger> unlisted =
      Caffeine.newBuilder().maximumSize(4096).expireAfterWrite(Duration.ofSeconds(2)).executor(Runnable::run).build();
  /** Leases asked for and not answered yet. */
  private final Map<Handle, CompletableFuture<Void>> asked = new ConcurrentHashMap<>();
  private final ScheduledExecutorService timer =
      Executors.newSingleThreadScheduledExecutor(new NamedThreads("flowfs-leases"));
  /** Makes the files of lost batches again, with calls that may wait for a restarting server. */
  private final java.util.concurrent.ExecutorService recovery =
      Executors.newSingleThreadExecutor(new NamedThreads(RECOVERY));
  private static final String RECOVERY = "flowfs-lease-recovery";

  private final long lingerNanos;
  private final long openNanos;
  private final long idleNanos;

  /** {@code files}: reserved per lease (0: no leases); {@code timeout}: the longest wait for an answer. */
  DirLeases(Host host, int files, Duration timeout, Counters counters) {
    this(host, files, timeout, counters, LINGER_NANOS, OPEN_NANOS, IDLE_NANOS);
  }

  /** With other periods than {@link #LINGER_NANOS}, {@link #OPEN_NANOS} and {@link #IDLE_NANOS} (tests). */
  DirLeases(Host host, int files, Duration timeout, Counters counters, long lingerNanos, long openNanos, long idleNanos) {
    this.lingerNanos = lingerNanos;
    this.host = host;
    this.files = files;
    this.timeout = timeout;
    this.counters = counters;
    this.openNanos = openNanos;
    this.idleNanos = idleNanos;
  }

  /** Nothing held, nothing asked for: no request needs {@link #settle}. */
  boolean idle() {
    return byDir.isEmpty() && byFile.isEmpty() && byUnlinked.isEmpty() && asked.isEmpty();
  }

  /** Whether {@code dir} is leased here. */
  boolean holds(Handle dir) {
    return byDir.containsKey(dir);
  }

  /**
   * Completes when the lease on {@code dir} ends, when {@code name} there is one this client made
   * under it ({@link Lease#madeHere}) as {@code h}: until then nobody else can reach {@code h}.
   * Null when it is not.
   */
  CompletableFuture<Void> madeUntil(Handle dir, String name, Handle h) {
    return underLive(dir, l -> h.equals(l.madeHere.get(name)) ? l.over : null);
  }

  /**
   * The object {@code name} in {@code dir} is, when this client leases {@code dir} and made that
   * name under the lease ({@link Lease#madeHere}); else null. A lookup there would end the lease.
   */
  Handle madeHere(Handle dir, String name) {
    return underLive(dir, l -> l.madeHere.get(name));
  }

  /** {@code f} of the lease on {@code dir}, under it, when one lives here; else null. */
  private <T> T underLive(Handle dir, java.util.function.Function<Lease, T> f) {
    Lease l = byDir.get(dir);
    if (l == null) {
      return null;
    }
    synchronized (l) {
      return l.over.isDone() ? null : f.apply(l);
    }
  }

  // ---- taking a lease -------------------------------------------------------------------------

  /**
   * Asks for a lease on {@code dir}, unless one is held or asked for; the answer comes later. The
   * caller knows every name of {@code dir}.
   */
  void want(Handle dir) {
    ask(dir, false);
  }

  /**
   * Asks for a lease on {@code dir}, whose names this client does not know, with the names
   * ({@link DirLeaseReq#names()}): a directory it did not make, or whose names it forgot. Not
   * when one was refused or recalled there within {@link #NO_LISTING_NANOS}.
   */
  void wantListed(Handle dir) {
    if (!standing(noListing, dir)) {
      ask(dir, true);
    }
  }

  /**
   * A create or an unlink in {@code dir}, whose names this client does not know, is about to be a
   * call of its own: after {@link #LISTING_AFTER} of them within a couple of seconds, a lease with
   * the names is asked for ({@link #wantListed}), and this change waits for it. A job writing (or
   * removing) many files in a directory it did not make does so under a lease too; a lone create
   * does not pay for a listing.
   */
  void unlisted(Handle dir) {
    if (files == 0) {
      return;
    }
    if (unlisted.get(dir, k -> new AtomicInteger()).incrementAndGet() >= LISTING_AFTER) {
      unlisted.invalidate(dir);
      wantListed(dir);
    }
  }

  /** Whether a mark of {@code dir} in {@code marks} stands now (an old one is taken out). */
  private static boolean standing(Map<Handle, Long> marks, Handle dir) {
    Long until = marks.get(dir);
    if (until == null) {
      return false;
    }
    if (System.nanoTime() - until < 0) {
      return true;
    }
    marks.remove(dir, until);
    return false;
  }

  private void ask(Handle dir, boolean withNames) {
    if (files == 0 || byDir.containsKey(dir) || standing(refused, dir)) {
      return;
    }
    if (standing(renaming, dir)) {
      counters.increment("lease.held-off");
      return;
    }
    CompletableFuture<Void> mine = new CompletableFuture<>();
    if (asked.putIfAbsent(dir, mine) != null) {
      return;
    }
    counters.increment(withNames ? "lease.asked-listed" : "lease.asked");
    Pending made = withNames ? null : byFile.get(dir); // a directory made here: the server knows it once its batch is answered
    long askedNanos = System.nanoTime();
    CompletableFuture<DirLeaseResp> grant;
    if (made == null) {
      // the names known here, at the ctime they are at: a grant at another brings the names, unless
      // another client works there too (then the lease is given back, and the names forgotten)
      long known = withNames || standing(noListing, dir) ? 0 : host.knownCtime(dir);
      grant = host.send(new DirLeaseReq(dir, files, withNames, known));
    } else {
      synchronized (made.lease) {
        if (!made.sent) {
          made.leaseFiles = files; // its batch, sent now, asks for the lease: one round trip, not two
        }
      }
      grant = send(made).thenCompose(v -> {
        DirLeaseResp inBatch = made.grant;
        if (inBatch != null) {
          counters.increment("lease.granted-in-batch");
          return CompletableFuture.completedFuture(inBatch);
        }
        return host.send(new DirLeaseReq(dir, files)); // sent before, refused with it, or made again
      });
    }
    grant.whenCompleteAsync((r, err) -> {
      try {
        granted(dir, r, err, askedNanos, withNames);
      } finally {
        asked.remove(dir, mine);
        mine.complete(null);
      }
    }, timer);
  }

  private void granted(Handle dir, DirLeaseResp r, Throwable err, long askedNanos, boolean withNames) {
    boolean listed = err == null && r.names() != null; // asked for, or the names known here are not the names now
    if (err != null || r.lease() == 0) {
      counters.increment("lease.refused");
      mark(refused, dir, REFUSED_NANOS);
      if (withNames) {
        mark(noListing, dir, NO_LISTING_NANOS); // too many names, or another client holds a lease there
      }
      return;
    }
    if (listed) {
      if (!withNames) {
        counters.increment("lease.relisted"); // the names known here were at another ctime
      }
      host.listed(dir, r.names(), r.ctimeNs(), askedNanos);
    }
    Lease l = new Lease(dir, r.lease(), r.reserved());
    synchronized (l) {
      if (!host.knownAt(dir, r.ctimeNs(), askedNanos)) {
        // the directory changed in between (another client, or a change of this one answered
        // since): its names are not all known, give the lease back at once
        counters.increment("lease.stale");
        l.ending = true;
        sendLocked(l);
        return;
      }
      byDir.put(dir, l);
    }
    counters.increment("lease.granted");
    timer.schedule(() -> watch(l), idleNanos, TimeUnit.NANOSECONDS);
  }

  /** Marks {@code dir} in {@code marks} for {@code nanos} from now (bounded: a full map marks nothing more). */
  private static void mark(Map<Handle, Long> marks, Handle dir, long nanos) {
    if (marks.size() < 10_000) {
      marks.put(dir, System.nanoTime() + nanos);
    }
  }

  /** Waits for a lease asked for on {@code dir}, if one is. */
  private void awaitAsked(Handle dir) {
    CompletableFuture<Void> a = asked.get(dir);
    if (a != null) {
      await(a, timeout);
    }
  }

  // ---- creating under a lease -----------------------------------------------------------------

  /**
   * Creates regular file {@code name} in {@code dir} here, under this client's lease on it, if it
   * holds one that is not recalled and has a file reserved, and {@code admit} (run under the
   * lease, so no other create here comes between) says the name is free; else null, and the
   * create must be a call of its own.
   */
  Attr create(Handle dir, String name, int mode, int uid, int gid, long nowNs, BooleanSupplier admit) {
    return make(FileType.REGULAR, dir, name, mode, uid, gid, nowNs, admit);
  }

  /**
   * {@link #create}, or with {@code type} DIRECTORY makes a directory the same way: it takes a
   * reserved handle (its datafiles go back to the server's pools) and goes with the next batch,
   * closed from the start (nothing is written into a directory). Until that batch is answered, a
   * request naming it sends the batch first ({@link #settle}); a lease on it ({@link #want}) is
   * asked for with that batch, when it has not left yet, and granted in its answer.
   */
  Attr make(FileType type, Handle dir, String name, int mode, int uid, int gid, long nowNs, BooleanSupplier admit) {
    if (files == 0) {
      return null;
    }
    awaitAsked(dir);
    for (int attempt = 0; ; attempt++) {
      Lease l = byDir.get(dir);
      if (l == null) {
        return null;
      }
      CompletableFuture<Void> topUp;
      synchronized (l) {
        if (l.ending || l.recalled || l.removed) {
          return null;
        }
        if (l.dirAttrs == null && !l.reserved.isEmpty()) {
          return made(l, type, name, mode, uid, gid, nowNs, admit);
        }
        if (attempt > 2) {
          counters.increment(l.dirAttrs != null ? "lease.dir-attrs-first" : "lease.reserve-empty");
          return null;
        }
        if (l.dirAttrs != null) {
          l.urgent = true; // the directory's own changes go before a create made after them
        }
        sendLocked(l); // more are reserved with a batch: wait for the one out now (then this one)
        topUp = l.answer;
      }
      try {
        await(topUp, timeout);
      } catch (FsException e) {
        return null;
      }
    }
  }

  /** Guarded by {@code l}, which has a file reserved. */
  private Attr made(Lease l, FileType type, String name, int mode, int uid, int gid, long nowNs, BooleanSupplier admit) {
    if (l.unlinking.contains(name) || !admit.getAsBoolean()) {
      return null; // a name unlinked here and not answered yet: the create is a call, after the batch
    }
    boolean dir = type == FileType.DIRECTORY;
    Reserved r = l.reserved.poll();
    Pending p = new Pending(l, name, type, r.handle(), dir ? null : r.layout(), mode, uid, gid);
    l.waiting.add(p);
    byFile.put(p.handle, p);
    l.lastCreateNanos = p.madeNanos;
    l.made++;
    counters.increment(dir ? "lease.mkdirs" : "lease.creates");
    l.made(name, p.handle);
    if (dir) {
      closeLocked(l, p, null, 0, null);
    }
    if (l.reserved.size() < files / 4) {
      sendLocked(l); // top up before the reserve runs out (after the batch out now, if one is)
    }
    return dir ? new Attr(r.handle(), type, mode, uid, gid, 2, Attr.DIR_SIZE, nowNs, nowNs, nowNs, 0, null)
        : new Attr(r.handle(), type, mode, uid, gid, 1, 0, nowNs, nowNs, nowNs, 0, r.layout());
  }

  // ---- unlinking under a lease ----------------------------------------------------------------

  /**
   * Unlinks {@code name}, a regular file or symbolic link with one link, object {@code file}, in
   * {@code dir} here, under this client's lease on it, if it holds one that is not recalled or
   * ending, and {@code admit} (run under the lease) takes the name out of the names known: the
   * remove goes to the server with the next batch, after the creates made before it. False when
   * the unlink must be a call of its own: no lease, changes of the directory's own attributes
   * waiting, the name unlinked here already and not answered, or a file made here that is still
   * open (its close is to come).
   */
  boolean unlink(Handle dir, String name, Handle file, BooleanSupplier admit) {
    if (files == 0) {
      return false;
    }
    awaitAsked(dir);
    Lease l = byDir.get(dir);
    if (l == null || !roomToUnlink(l)) {
      return false;
    }
    synchronized (l) {
      return unlinkLocked(l, name, file, admit, null, false, 0);
    }
  }

  /**
   * Guarded by {@code l}: the unlink of {@code name} goes with the next batch; an rmdir when
   * {@code child} (the directory's lease here) is not null or {@code made} (made under {@code l}).
   */
  private boolean unlinkLocked(Lease l, String name, Handle file, BooleanSupplier admit, Lease child, boolean made,
      int childBatches) {
    if (l.over.isDone() || l.ending || l.recalled || l.removed || l.dirAttrs != null
        || l.unlinked.size() >= MetaOp.MAX_LEASE_FILES || l.unlinking.contains(name) || byUnlinked.containsKey(file)) {
      return false;
    }
    Pending p = byFile.get(file);
    if (p != null && (p.lease != l || !p.closed)) {
      return false;
    }
    if (!admit.getAsBoolean()) {
      return false;
    }
    Unlinked u = new Unlinked(l, name, file, child, made, childBatches);
    l.unmade(name, null);
    l.unlinked.add(u);
    l.unlinking.add(name);
    byUnlinked.put(file, u);
    l.lastCreateNanos = System.nanoTime();
    counters.increment(made ? "lease.rmdirs-made" : child == null ? "lease.unlinks" : "lease.rmdirs");
    queuedLocked(l);
    return true;
  }

  /**
   * Waits while {@code l} holds as many unlinks as a batch takes (the batch out is slow to be
   * answered): an unlink that became a call of its own would end the lease. False when it still
   * does after three answers, or a wait fails.
   */
  private boolean roomToUnlink(Lease l) {
    return betweenAnswers(l, x -> {
      if (x.unlinked.size() < MetaOp.MAX_LEASE_FILES) {
        return true;
      }
      counters.increment("lease.unlinks-full");
      sendLocked(x);
      return null;
    });
  }

  /**
   * Runs {@code step} under {@code l} until it decides (true or false); when it does not (null),
   * it has sent what it waits for, and it runs again once the batch out now is answered. False
   * after three such answers, or when a wait fails.
   */
  private boolean betweenAnswers(Lease l, java.util.function.Function<Lease, Boolean> step) {
    for (int attempt = 0; attempt <= 3; attempt++) {
      CompletableFuture<Void> out;
      synchronized (l) {
        Boolean decided = step.apply(l);
        if (decided != null) {
          return decided;
        }
        out = l.answer;
      }
      try {
        await(out, timeout);
      } catch (FsException e) {
        return false;
      }
    }
    return false;
  }

  /**
   * Removes directory {@code name}, object {@code child}, from {@code dir} here, when this client
   * leases both: what the directory's lease holds is sent first (its lease goes on, so no other
   * client makes anything in it meanwhile), then the remove goes with the parent's next batch,
   * naming the directory's lease, which ends with it, and how many batches went under that lease:
   * the server takes those in before it removes the directory ({@link BatchRemove#dirBatches}),
   * so the rmdir waits for no answer of the directory's. Or, when this client leases {@code
   * dir} only and made {@code child} under that lease ({@link Lease#madeHere}), the remove goes
   * with the next batch as one of a directory made there ({@link BatchRemove#madeDir}): nobody
   * else can have made anything in it. {@code admit} (run under the parent's lease) says the
   * directory is empty and takes the name out of the names known. False when the rmdir must be a
   * call of its own.
   */
  boolean rmdir(Handle dir, String name, Handle child, BooleanSupplier admit) {
    if (files == 0) {
      return false;
    }
    awaitAsked(dir);
    Lease l = byDir.get(dir);
    Lease c = byDir.get(child);
    if (l == null || c == l || !roomToUnlink(l)) {
      return false;
    }
    if (c == null) {
      synchronized (l) {
        // a lease on it asked for (and granted after this) would let another client in: the
        // server refuses the remove then (ESTALE), and it is made again with a call of its own
        return child.equals(l.madeHere.get(name)) && !asked.containsKey(child)
            && unlinkLocked(l, name, child, admit, null, true, 0);
      }
    }
    int sent = sentAll(c); // nothing more under it; not ended by the watcher
    if (sent < 0) {
      return false;
    }
    boolean queued;
    synchronized (l) {
      queued = unlinkLocked(l, name, child, admit, c, false, sent);
    }
    if (!queued) {
      synchronized (c) {
        c.removed = false;
      }
    }
    return queued;
  }

  /**
   * A change of the mode, owner or times of directory {@code dir}, leased here: kept with the
   * lease and sent with its next batch (or its end), rather than ending the lease for a call of
   * its own ({@code tar -x} sets the times, owner and mode of every directory it made once it is
   * done with it). Creates here that are not answered yet are sent first, and waited for: the
   * server applies the change after them, and what this client shows of the directory must not
   * move with their answers after it. Returns false when the change must be a call of its own:
   * not leased here (or ending), other bits than MODE, UID, GID, ATIME, MTIME and KILL_SUID, or a
   * set-ID mode (a set-group-ID directory is not leased).
   */
  boolean deferAttrs(Handle dir, int mask, int mode, int uid, int gid, long atimeNs, long mtimeNs) {
    Lease l = byDir.get(dir);
    if (l == null || !DeferredAttrs.deferrable(mask, mode)) {
      return false;
    }
    return whenDrained(l, x -> {
      x.dirAttrs = (x.dirAttrs == null ? DeferredAttrs.NONE : x.dirAttrs).and(mask, mode, uid, gid, atimeNs, mtimeNs);
      counters.increment("lease.dir-attrs");
    });
  }

  /**
   * Sends the creates and unlinks live lease {@code l} holds and waits for the answers until it
   * holds none, then runs {@code then} under the lease and
   * returns true; false, with nothing run, when the lease ends, is recalled or goes with its
   * directory's rmdir first, or after three rounds, or when a wait fails.
   */
  private boolean whenDrained(Lease l, java.util.function.Consumer<Lease> then) {
    return betweenAnswers(l, x -> {
      if (x.over.isDone() || x.ending || x.recalled || x.removed) {
        return false;
      }
      if (x.waiting.isEmpty() && x.unlinked.isEmpty() && !x.out) {
        then.accept(x);
        return true;
      }
      urgeLocked(x);
      return null;
    });
  }

  /**
   * Sends what live lease {@code l} holds (its directory's own changes too) and marks it {@link
   * Lease#removed}, without waiting for the answer; waits only while a batch is out and more is
   * held. Returns the batches sent under the lease, or -1 when it ends, is recalled or goes with
   * its directory's rmdir first, or after three rounds, or when a wait fails.
   */
  private int sentAll(Lease l) {
    boolean removed = betweenAnswers(l, x -> {
      if (x.over.isDone() || x.ending || x.recalled || x.removed) {
        return false;
      }
      if (!x.out && (!x.waiting.isEmpty() || !x.unlinked.isEmpty() || x.dirAttrs != null)) {
        urgeLocked(x);
      }
      if (x.waiting.isEmpty() && x.unlinked.isEmpty() && x.dirAttrs == null) {
        x.removed = true;
        return true;
      }
      return null; // more than a batch takes, or one is out: after its answer
    });
    if (!removed) {
      return -1;
    }
    synchronized (l) {
      return l.batches; // final: a removed lease sends nothing more
    }
  }

  /**
   * The close (or flush) of file {@code h}: when it was made here and is not sent yet, its change
   * {@code record} (null: none) and its head bytes ({@code head}, may be null; taken over) go with
   * its create, and this returns true. False when the file is not one waiting here, or already
   * carries a close: the caller {@link #settle}s it and records as usual.
   */
  boolean absorb(Handle h, SetattrReq record, long headOffset, ByteBuf head) {
    Pending p = byFile.get(h);
    if (p == null) {
      return false;
    }
    Lease l = p.lease;
    synchronized (l) {
      if (p.sent || p.closed) {
        return false;
      }
      closeLocked(l, p, record, headOffset, head);
      return true;
    }
  }

  /** Guarded by {@code l}: {@code p} goes with a batch that leaves at {@link #BATCH} closed files or after the linger. */
  private void closeLocked(Lease l, Pending p, SetattrReq record, long headOffset, ByteBuf head) {
    p.closed = true;
    p.record = record;
    p.headOffset = headOffset;
    p.head = head;
    l.closedWaiting++;
    queuedLocked(l);
  }

  /** Guarded by {@code l}: a closed file or an unlink joined the batch, which leaves at {@link #BATCH} of them or after the linger. */
  private void queuedLocked(Lease l) {
    if (l.closedWaiting + l.unlinked.size() >= BATCH) {
      sendLocked(l);
    } else if (!l.lingering) {
      l.lingering = true;
      timer.schedule(() -> linger(l), lingerNanos, TimeUnit.NANOSECONDS);
    }
  }

  /**
   * The last open of file {@code h} on this client was released: when it was made here and is
   * not sent yet, it goes with the next batch, closed (with what a flush gave it, if anything).
   */
  void released(Handle h) {
    absorb(h, null, 0, null);
  }

  private void linger(Lease l) {
    synchronized (l) {
      l.lingering = false;
      sendLocked(l);
    }
  }

  /** Every half idle period while the lease lasts: sends files open too long, ends an idle lease. */
  private void watch(Lease l) {
    synchronized (l) {
      if (l.over.isDone()) {
        return;
      }
      long now = System.nanoTime();
      boolean old = !l.waiting.isEmpty() && now - l.waiting.get(0).madeNanos >= openNanos;
      if (l.waiting.isEmpty() && l.unlinked.isEmpty() && !l.out && !l.removed && now - l.lastCreateNanos >= idleNanos) {
        counters.increment("lease.idle-ended");
        l.ending = true;
      }
      if (old || l.ending) {
        sendLocked(l);
      }
    }
    timer.schedule(() -> watch(l), idleNanos / 2, TimeUnit.NANOSECONDS);
  }

  // ---- batches --------------------------------------------------------------------------------

  /** Sends the next batch of {@code l}, unless one is out (then it follows that one's answer). */
  private void sendLocked(Lease l) {
    if (l.over.isDone() || l.removed && !l.ending) {
      return; // (a lease removed with its directory holds nothing more, and ends with the rmdir)
    }
    if (l.out) {
      l.again = true;
      return;
    }
    boolean all = l.urgent || l.recalled || l.ending;
    long now = System.nanoTime();
    List<Pending> go = new ArrayList<>();
    long bytes = 0;
    boolean full = false;
    for (Iterator<Pending> it = l.waiting.iterator(); it.hasNext() && go.size() < MetaOp.MAX_LEASE_FILES; ) {
      Pending p = it.next();
      int length = p.head == null ? 0 : p.head.readableBytes();
      if (!go.isEmpty() && bytes + length > MAX_BATCH_BYTES) {
        full = true; // the rest in the next batch, once this one is answered
        break;
      }
      if (all || p.closed || now - p.madeNanos >= openNanos) {
        bytes += length;
        it.remove();
        p.sent = true;
        if (p.closed) {
          l.closedWaiting--;
        }
        go.add(p);
      }
    }
    // the unlinks go after the creates, up to one of a file made here that is not in this batch
    List<Unlinked> gone = new ArrayList<>();
    for (Iterator<Unlinked> it = l.unlinked.iterator(); it.hasNext() && gone.size() < MetaOp.MAX_LEASE_FILES; ) {
      Unlinked u = it.next();
      Pending made = byFile.get(u.file);
      if (made != null && made.lease == l && !made.sent) {
        break;
      }
      it.remove();
      u.sent = true;
      gone.add(u);
    }
    boolean empty = l.waiting.isEmpty() && l.unlinked.isEmpty();
    if (empty) {
      l.urgent = false;
    }
    boolean end = (l.recalled || l.ending) && empty;
    int more = end || l.recalled ? 0 : Math.max(0, files - l.reserved.size());
    // the directory's own changes go after every create and unlink made before them
    boolean withRecord = l.dirAttrs != null && empty;
    if (go.isEmpty() && gone.isEmpty() && !end && !withRecord && more < Math.max(1, files / 2)) {
      return;
    }
    SetattrReq record = withRecord ? takeDirAttrs(l) : null;
    List<BatchCreate> creates = new ArrayList<>(go.size());
    CompositeByteBuf heads = Unpooled.compositeBuffer(Math.max(1, go.size()));
    for (Pending p : go) {
      creates.add(p.create(p.leaseFiles));
      if (p.head != null) {
        heads.addComponent(true, p.head.retain()); // kept until answered: a lost batch is made again
      }
    }
    List<BatchRemove> removes = new ArrayList<>(gone.size());
    gone.forEach(u -> removes.add(u.remove()));
    l.out = true;
    l.again = full || !l.unlinked.isEmpty();
    CompletableFuture<Void> answer = new CompletableFuture<>();
    l.answer = answer;
    long askedNanos = System.nanoTime();
    counters.increment("lease.batches");
    l.batches++;
    CompletableFuture<CreateBatchResp> f;
    try {
      f = host.send(new CreateBatchReq(l.dir, l.id, creates, removes, record, end, more, heads));
    } catch (RuntimeException e) {
      f = CompletableFuture.failedFuture(e);
    }
    SetattrReq sentRecord = record;
    f.whenCompleteAsync((r, err) -> {
      try {
        answered(l, go, gone, sentRecord, end, r, err, askedNanos);
      } finally {
        answer.complete(null);
      }
    }, timer);
  }

  /** Guarded by {@code l}: the directory's own changes kept with it, as a record of the directory, taken; null if none. */
  private static SetattrReq takeDirAttrs(Lease l) {
    DeferredAttrs d = l.dirAttrs;
    l.dirAttrs = null;
    return d == null ? null : d.change(l.dir);
  }

  private void answered(Lease l, List<Pending> go, List<Unlinked> gone, SetattrReq record, boolean end,
      CreateBatchResp r, Throwable err, long askedNanos) {
    if (err == null && (r.results().size() != go.size() || r.removed().size() != gone.size())) {
      err = new FsException(Errno.EIO, "a batch of " + go.size() + " creates and " + gone.size() + " unlinks answered with "
          + r.results().size() + " and " + r.removed().size());
    }
    boolean stale = err == null && r.results().stream().anyMatch(b -> b.errno() == Errno.ESTALE.code());
    for (int i = 0; err == null && !stale && i < gone.size(); i++) {
      // an rmdir's ESTALE is of the removed directory's lease (or one on it); an unlink's, of this one
      stale = !gone.get(i).directory() && r.removed().get(i).errno() == Errno.ESTALE.code();
    }
    if (err != null || stale) {
      Throwable t = err == null ? null : Errno.unwrap(err);
      FsException e = t == null ? new FsException(Errno.ESTALE, "the lease on " + l.dir.hex() + " is not known to the metadata server")
          : t instanceof FsException fe ? fe : new FsException(Errno.from(t), String.valueOf(t.getMessage()));
      LOG.warn("a batch of {} creates in directory {} failed: {}; the lease there is given up, its files are made "
          + "one by one", go.size(), l.dir.hex(), e.getMessage());
      List<Pending> lost = new ArrayList<>();
      List<Unlinked> lostUnlinks = new ArrayList<>();
      SetattrReq later = null; // the directory's changes made since this batch left
      synchronized (l) {
        l.out = false;
        lost.addAll(l.waiting);
        l.waiting.clear();
        lostUnlinks.addAll(l.unlinked);
        l.unlinked.clear();
        later = takeDirAttrs(l);
        l.ending = true;
        over(l);
      }
      if (err != null) {
        lost.addAll(0, go);
      } else {
        List<Pending> rest = lost;
        lost = new ArrayList<>();
        for (int i = 0; i < go.size(); i++) {
          if (r.results().get(i).errno() == Errno.ESTALE.code()) {
            lost.add(go.get(i));
          } else {
            done(l, go.get(i), r.results().get(i), askedNanos);
          }
        }
        lost.addAll(rest);
      }
      List<Unlinked> unlinksLost = new ArrayList<>();
      for (int i = 0; i < gone.size(); i++) {
        if (err != null || r.removed().get(i).errno() == Errno.ESTALE.code()) {
          unlinksLost.add(gone.get(i));
        } else {
          unlinkDone(l, gone.get(i), r.removed().get(i), askedNanos);
        }
      }
      unlinksLost.addAll(lostUnlinks);
      synchronized (l) {
        lost.forEach(p -> p.sent = false); // not made: a close of one still open is kept with it again
      }
      List<Pending> again = lost;
      recovery.execute(() -> again.forEach(p -> recover(p, e))); // calls of their own: not on this thread
      recovery.execute(() -> unlinksLost.forEach(u -> unlinkAgain(u, e))); // after the files made again
      for (SetattrReq changes : java.util.Arrays.asList(record, later)) {
        if (changes != null) {
          recovery.execute(() -> reapply(changes, e)); // after the files made again before them
        }
      }
      return;
    }
    for (int i = 0; i < go.size(); i++) {
      done(l, go.get(i), r.results().get(i), askedNanos);
    }
    for (int i = 0; i < gone.size(); i++) {
      unlinkDone(l, gone.get(i), r.removed().get(i), askedNanos);
    }
    synchronized (l) {
      l.out = false;
      l.reserved.addAll(r.reserved());
      if (r.recalled() && !l.recalled) {
        counters.increment("lease.recalled");
        l.recalled = true;
        if (!l.ending) { // (a lease given back at once, stale, is recalled by this client's own create meanwhile)
          mark(noListing, l.dir, NO_LISTING_NANOS); // another client works there too: its names, once forgotten, are not asked for soon
        }
      }
      if (end) {
        over(l);
        return;
      }
      if (l.again || l.recalled || l.ending || l.urgent || l.closedWaiting + l.unlinked.size() >= BATCH) {
        sendLocked(l);
      }
    }
  }

  /** The answer {@code b} to the create of {@code p}. */
  private void done(Lease l, Pending p, BatchResult b, long askedNanos) {
    if (b.attr() != null) {
      releaseHead(p);
      byFile.remove(p.handle, p);
      host.created(l.dir, p.name, b.attr(), b.parentWasNs(), askedNanos);
      p.grant = b.lease();
      p.done.complete(null);
    } else {
      fail(p, new FsException(Errno.ofCode(b.errno()), "create of " + p.name + " in a batch"));
    }
  }

  /** The answer {@code r} to unlink {@code u}. */
  private void unlinkDone(Lease l, Unlinked u, RemoveResult r, long askedNanos) {
    if (r.handle() == null && u.directory() && r.errno() == Errno.ESTALE.code()) {
      // the directory's lease ended before its rmdir arrived (another request of this client
      // ended it), or a directory made here is leased now: removed with a call of its own, which
      // waits for that lease and sees what is in it now
      FsException e = new FsException(Errno.ESTALE, (u.made ? "a lease on " : "the lease on ") + u.file.hex()
          + (u.made ? " stood at its rmdir" : " ended before its rmdir"));
      recovery.execute(() -> unlinkAgain(u, e));
      return;
    }
    if (r.handle() == null && u.child != null && r.errno() == Errno.ENOTEMPTY.code()) {
      // the directory's last batches were not all taken in (the server waits a lease term at
      // most), or failed: once what they held is made again here, removed with a call of its own
      counters.increment("lease.rmdir-again");
      afterUnlinksOf(u.child, () -> unlinkAgain(u, new FsException(Errno.ENOTEMPTY, "the rmdir of " + u.name
          + " came before its directory's unlinks")));
      return;
    }
    if (r.handle() != null) {
      if (u.child != null) {
        synchronized (u.child) {
          over(u.child); // the server ended it with the directory
        }
      }
      host.unlinked(l.dir, u.name, r, u.directory(), askedNanos);
    } else {
      counters.increment("lease.unlink-failed");
      LOG.warn("unlink of {} in directory {} in a batch failed: {}", u.name, l.dir.hex(), Errno.ofCode(r.errno()));
      host.failed(l.dir, u.name, u.file);
    }
    unlinkOver(u);
  }

  /** Runs {@code then} on the recovery thread once every unlink made under {@code l} is answered or made again. */
  private void afterUnlinksOf(Lease l, Runnable then) {
    unlinksOf(l).thenRun(() -> recovery.execute(then));
  }

  /** Done when every unlink made under {@code l} now is answered or made again. */
  private CompletableFuture<Void> unlinksOf(Lease l) {
    List<CompletableFuture<Void>> pending = new ArrayList<>();
    for (Unlinked x : byUnlinked.values()) {
      if (x.lease == l) {
        pending.add(x.done);
      }
    }
    return CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new));
  }

  /** An unlink whose batch was lost ({@code e}) is made with a call of its own. */
  private void unlinkAgain(Unlinked u, FsException e) {
    counters.increment("lease.unlinked-again");
    Lease c = u.child;
    if (c != null) {
      synchronized (c) {
        c.removed = false; // a live lease on the directory ends as any other, before the call
      }
      byUnlinked.remove(u.file, u); // (the call's settle of the directory would wait for this)
    }
    try {
      retrying(() -> {
        host.unlinkAgain(u.lease.dir, u.name, u.directory());
        return null;
      });
    } catch (RuntimeException again) {
      LOG.error("unlink of {} in directory {} is lost: {}; {}", u.name, u.lease.dir.hex(), e.getMessage(),
          again.getMessage());
      host.failed(u.lease.dir, u.name, u.file);
    } finally {
      unlinkOver(u);
    }
  }

  private void unlinkOver(Unlinked u) {
    synchronized (u.lease) {
      u.lease.unlinking.remove(u.name);
    }
    Lease c = u.child;
    if (c != null && !c.over.isDone()) { // not removed here: the lease ends as any other
      synchronized (c) {
        c.removed = false;
        if (!c.ending) {
          c.ending = true;
          sendLocked(c);
        }
      }
    }
    byUnlinked.remove(u.file, u);
    u.done.complete(null);
  }

  /**
   * A file or directory whose batch was lost ({@code e}) is made again with a call of its own,
   * under its reserved handle and layout ({@link Host#reclaim}), so an open of it here stays
   * good and what was written into its datafiles stays its own: with what its close recorded, if
   * it was closed; else bare, and its close is an ordinary call then (it is sent: {@link #absorb}
   * takes no close of it any more).
   */
  private void recover(Pending p, FsException e) {
    BatchCreate create;
    ByteBuf head;
    synchronized (p.lease) {
      p.sent = true;
      create = p.create(0);
      head = p.head == null ? null : p.head.retainedDuplicate();
    }
    counters.increment("lease.recreated");
    try {
      Attr a = retrying(() -> host.reclaim(p.lease.dir, create, p.layout, head));
      releaseHead(p);
      byFile.remove(p.handle, p);
      p.done.complete(null);
      LOG.info("{} {} in directory {} made again as {} after: {}", p.type == FileType.DIRECTORY ? "directory" : "file",
          p.name, p.lease.dir.hex(), a.handle().hex(), e.getMessage());
    } catch (RuntimeException again) {
      fail(p, again instanceof FsException fe ? fe : e);
    } finally {
      if (head != null) {
        head.release();
      }
    }
  }

  /**
   * Calls {@code call}, trying again while it fails with EIO (the metadata server is still not
   * back; each try rides out a restart for up to {@code rpc.timeout}): a file lost is worse than
   * a late one.
   */
  /** The changes of a leased directory whose batch was lost ({@code e}), applied with a call of their own. */
  private void reapply(SetattrReq record, FsException e) {
    try {
      retrying(() -> {
        host.record(record);
        return null;
      });
      counters.increment("lease.dir-attrs-again");
    } catch (RuntimeException again) {
      LOG.error("the changes of directory {} made under its lease are lost: {}; {}", record.handle().hex(),
          e.getMessage(), again.getMessage());
    }
  }

  private <T> T retrying(java.util.function.Supplier<T> call) {
    for (int attempt = 1; ; attempt++) {
      try {
        return call.get();
      } catch (FsException x) {
        if (x.errno() != Errno.EIO || attempt >= RECOVER_ATTEMPTS) {
          throw x;
        }
        counters.increment("lease.recover-retries");
        try {
          Thread.sleep(RECOVER_PAUSE_MS);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw x;
        }
      }
    }
  }

  private void fail(Pending p, FsException e) {
    byFile.remove(p.handle, p);
    synchronized (p.lease) {
      p.lease.unmade(p.name, p.handle);
    }
    counters.increment("lease.create-failed");
    if (p.closed) {
      LOG.error("file {} made in directory {} was closed, and its create failed: {}; its bytes are lost", p.name,
          p.lease.dir.hex(), e.getMessage());
    }
    releaseHead(p);
    host.failed(p.lease.dir, p.name, p.handle);
    p.done.completeExceptionally(e);
  }

  private static void releaseHead(Pending p) {
    synchronized (p.lease) {
      if (p.head != null) {
        p.head.release();
        p.head = null;
      }
    }
  }

  /** Guarded by {@code l}. */
  private void over(Lease l) {
    byDir.remove(l.dir, l);
    madeNames.addAndGet(-l.madeHere.size());
    l.madeHere.clear();
    l.over.complete(null);
  }

  // ---- this client's other requests -----------------------------------------------------------

  /**
   * Readies the leases for {@code op}, a request about to go to the metadata server: ends the
   * leases on directories it names, and sends and waits for the batch of any file it names that
   * is not answered yet. A rename or an rmdir names its objects by name, and one may be a
   * directory leased here (which the server would hold the request back for, until the lease
   * ended): the objects this client knows by their names are settled too, and when it does not
   * know what a name is (nor that it is free), every lease ends.
   */
  void settle(MetaOp op) {
    if (idle()) {
      return;
    }
    boolean known = true;
    if (op instanceof RenameReq q) {
      renamingIn(q.srcParent());
      if (!q.dstParent().equals(q.srcParent())) {
        renamingIn(q.dstParent());
      }
      known = settleNamed(q.srcParent(), q.srcName()) & settleNamed(q.dstParent(), q.dstName()); // (both settled)
    } else if (op instanceof RemoveReq q && q.directory()) {
      known = settleNamed(q.parent(), q.name());
    }
    if (!known) {
      counters.increment("lease.settled-all");
      endAll();
    }
    for (Handle h : op.named()) {
      settle(h);
    }
  }

  /** A rename in {@code dir} is about to end its lease: one that made little holds further leases there off a while. */
  private void renamingIn(Handle dir) {
    Lease l = byDir.get(dir);
    if (l == null) {
      return;
    }
    synchronized (l) {
      if (l.made > RENAMED_AFTER) {
        return;
      }
    }
    mark(renaming, dir, RENAMING_NANOS);
  }

  /** Settles the object {@code name} in {@code dir} as this client knows it; false when it does not know what the name is. */
  private boolean settleNamed(Handle dir, String name) {
    Handle h = host.known(dir, name);
    if (h == null) {
      return host.free(dir, name);
    }
    settle(h);
    return true;
  }

  /**
   * Ends the lease on {@code h} if it is a leased directory; sends the batch holding {@code h},
   * a file made here, and waits for its answer (throws the create's failure).
   */
  void settle(Handle h) {
    awaitAsked(h);
    Lease l = byDir.get(h);
    if (l != null) {
      end(l);
    }
    Pending p = byFile.get(h);
    if (p != null) {
      counters.increment("lease.settled");
      await(send(p), timeout);
    }
    Unlinked u = byUnlinked.get(h);
    if (u != null) {
      counters.increment("lease.settled");
      settle(u);
    }
  }

  /** Sends the batch holding {@code u} now, unless it left, and waits for its answer. */
  private void settle(Unlinked u) {
    synchronized (u.lease) {
      if (!u.sent) {
        urgeLocked(u.lease);
      }
    }
    await(u.done, timeout);
  }

  /** Guarded by {@code l}: its next batch takes everything it holds, and leaves now unless one is out. */
  private void urgeLocked(Lease l) {
    l.urgent = true;
    sendLocked(l);
  }

  /**
   * Sends every file made and every name unlinked here that is not answered yet, and waits for
   * the answers; the leases go on. A statfs counts this client's own changes.
   */
  void settleAll() {
    if (idle()) {
      return;
    }
    for (Pending p : List.copyOf(byFile.values())) {
      try {
        await(send(p), timeout);
      } catch (FsException e) {
        // the create failed: its file says so
      }
    }
    List.copyOf(byUnlinked.values()).forEach(this::settle);
  }

  /** {@link #settle(Handle)} without waiting: done when {@code h} is known to the metadata server as far as this client goes. */
  CompletableFuture<Void> settled(Handle h) {
    Pending p = byFile.get(h);
    return p == null ? CompletableFuture.completedFuture(null) : send(p);
  }

  /** Sends {@code p} with the next batch of its lease, now unless one is out; done when answered. */
  private CompletableFuture<Void> send(Pending p) {
    synchronized (p.lease) {
      if (!p.sent) {
        urgeLocked(p.lease);
      }
    }
    return p.done;
  }

  private void end(Lease l) {
    Unlinked rmdir = l.removed ? byUnlinked.get(l.dir) : null;
    if (rmdir != null && rmdir.child == l) {
      settle(rmdir); // it ends with the rmdir in its parent's batch
      return;
    }
    endNow(l);
    if (!Thread.currentThread().getName().startsWith(RECOVERY)) { // (that thread would wait for itself)
      await(unlinksOf(l), timeout); // a lost batch's unlinks, made again: done before what follows
    }
  }

  private void endNow(Lease l) {
    synchronized (l) {
      if (!l.ending) {
        l.ending = true;
        sendLocked(l);
      }
    }
    await(l.over, timeout);
  }

  /** Sends every file made here and ends every lease (a rename or rmdir of a name not known here, a sync of everything, unmount). */
  void endAll() {
    for (CompletableFuture<Void> a : List.copyOf(asked.values())) {
      try {
        await(a, timeout); // a lease granted now is ended below
      } catch (FsException e) {
        // not granted
      }
    }
    for (Lease l : List.copyOf(byDir.values())) {
      try {
        end(l);
      } catch (FsException e) {
        LOG.warn("ending the lease on {}: {}", l.dir.hex(), e.getMessage());
      }
    }
  }

  /** Waits for {@code f}, shared with other waiters: a wait that times out leaves it as it is. */
  private static void await(CompletableFuture<?> f, Duration timeout) {
    Await.get(f.copy(), timeout);
  }

  @Override
  public void close() {
    endAll();
    recovery.shutdown();
    try {
      recovery.awaitTermination(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    timer.shutdownNow();
  }
}
