package org.flowfs.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.flowfs.common.Attr;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FileType;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.Names;
import org.flowfs.common.PosixAcl;
import org.flowfs.common.StorageSpace;
import org.flowfs.common.config.FlowConfig;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.flow.BufferedFlowProtocol;
import org.flowfs.common.flow.FlowInterface;
import org.flowfs.common.dist.DirStripe;
import org.flowfs.common.dist.Distribution;
import org.flowfs.common.dist.Distributions;
import org.flowfs.common.rpc.CallFailure;
import org.flowfs.common.rpc.NetRuntime;
import org.flowfs.common.rpc.Peers;
import org.flowfs.common.DistSpec;
import org.flowfs.common.request.FileData;
import org.flowfs.common.request.Request;
import org.flowfs.common.wire.HasPayload;
import org.flowfs.common.wire.IoOp.IoStatfsReq;
import org.flowfs.common.wire.IoOp.SizesReq;
import org.flowfs.common.wire.IoOp.IoStatfsResp;
import org.flowfs.common.wire.IoOp.SyncReq;
import org.flowfs.common.wire.IoOp.AllocateReq;
import org.flowfs.common.wire.IoOp.TruncateReq;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.MetaOp;
import org.flowfs.common.wire.MetaOp.BatchCreate;
import org.flowfs.common.wire.MetaOp.CreateReq;
import org.flowfs.common.wire.MetaOp.Dirent;
import org.flowfs.common.wire.MetaOp.EntryResp;
import org.flowfs.common.wire.MetaOp.FlockReq;
import org.flowfs.common.wire.MetaOp.GetattrReq;
import org.flowfs.common.wire.MetaOp.OpenReq;
import org.flowfs.common.wire.MetaOp.HeadReadReq;
import org.flowfs.common.wire.MetaOp.DirLeaseReq;
import org.flowfs.common.wire.MetaOp.OpenResp;
import org.flowfs.common.wire.MetaOp.GetxattrReq;
import org.flowfs.common.wire.MetaOp.HeadFlushReq;
import org.flowfs.common.wire.MetaOp.LinkReq;
import org.flowfs.common.wire.MetaOp.ListxattrReq;
import org.flowfs.common.wire.MetaOp.LookupReq;
import org.flowfs.common.wire.MetaOp.MetaStatfsReq;
import org.flowfs.common.wire.MetaOp.MetaSyncReq;
import org.flowfs.common.wire.MetaOp.MetaStatfsResp;
import org.flowfs.common.wire.MetaOp.ReaddirReq;
import org.flowfs.common.wire.MetaOp.ReclaimReq;
import org.flowfs.common.wire.MetaOp.ReaddirResp;
import org.flowfs.common.wire.MetaOp.ReadlinkReq;
import org.flowfs.common.wire.MetaOp.RemoveReq;
import org.flowfs.common.wire.MetaOp.RemoveResult;
import org.flowfs.common.wire.MetaOp.RemoveResp;
import org.flowfs.common.wire.MetaOp.RemovexattrReq;
import org.flowfs.common.wire.MetaOp.RenameReq;
import org.flowfs.common.wire.MetaOp.RenameResp;
import org.flowfs.common.wire.MetaOp.SetattrReq;
import org.flowfs.common.wire.MetaOp.SetxattrReq;
import org.flowfs.common.wire.MetaOp.SymlinkReq;
import org.flowfs.common.wire.Req;

/**
 * The FlowFS client: paths to handles through the name and attribute caches, namespace operations
 * on the metadata server, and file bytes striped over the I/O servers with write-behind and
 * read-ahead. It is what the FUSE adapter and the Java API call; it knows nothing of FUSE.
 *
 * <p>Consistency is close-to-open: {@link #open} revalidates attributes and drops read-ahead;
 * {@link #flush}, {@link #fsync} and {@link #release} push this client's writes and record the
 * new size and mtime, so any client opening the file afterwards sees them.
 *
 * <p>Thread safe. Methods block the calling thread, each wait bounded by {@code rpc.timeout};
 * every failure is an {@link FsException} carrying the errno for the application.
 */
public final class FileSystemClient implements AutoCloseable {
  /**
   * {@link #utimens} time values: use the server's clock, or leave the time as it is. Both lie
   * outside the times a file can have, which may be before 1970 (negative).
   */
  public static final long UTIME_NOW = Long.MIN_VALUE;
  public static final long UTIME_OMIT = Long.MIN_VALUE + 1;
  /** The open flag (Linux's value) that makes every {@link #write(OpenFile, long, ByteBuf) write} append. */
  public static final int O_APPEND = 02000;
  private static final int O_ACCMODE = 03;
  private static final int O_RDONLY = 0;
  private static final int O_TRUNC = 01000;
  private static final int O_EXCL = 0200;
  /** The open flag of direct I/O: Linux's generic value, which ARM's differs from. */
  private static final int O_DIRECT = System.getProperty("os.arch", "").matches("aarch64|arm.*") ? 0200000 : 040000;
  private static final int READDIR_PAGE = 1024;
  /** The counter of microseconds waited for metadata calls of a type, {@code meta-us.NAME}, named once per type. */
  private static final ClassValue<String> META_WAIT = new ClassValue<>() {
    @Override
    protected String computeValue(Class<?> t) {
      return "meta-us." + t.getSimpleName();
    }
  };

  private final FlowFsConfig config;
  private final Peers peers;
  private final Duration timeout;
  private final AttrCache attrs;
  /** Objects this client created within the attribute timeout: no extended attributes yet. */
  private final com.github.benmanes.caffeine.cache.Cache<Handle, Boolean> noXattrs;
  /**
   * Extended attributes the metadata server said an object lacks, within the attribute timeout:
   * the kernel asks for security.capability before every write, and must not cost a round trip
   * each time.
   */
  private final com.github.benmanes.caffeine.cache.Cache<XattrKey, Boolean> absentXattrs;

  private record XattrKey(Handle handle, String name) {}
  private final NameCache names;
  /** Directories whose every name this client knows: a name they lack is ENOENT without a lookup. */
  private final DirContents contents;
  private final StatAhead statAhead;
  /** Listings asked for ahead of a walk of a tree. */
  private final ReaddirAhead readdirAhead;
  private final FlowInterface flows;
  private final FlowDataPath flowPath;
  private final Counters counters = new Counters();
  /** File data buffers (write-behind, read-ahead); up to 64 MiB of their pieces kept for reuse. */
  private final ByteBufAllocator alloc = new PieceAllocator(PooledByteBufAllocator.DEFAULT, 64);
  /**
   * Sets up the sends that writes start in write-behind, while the writers go on; one thread, so
   * sends leave in the order they were started.
   */
  private final java.util.concurrent.ExecutorService sender =
      java.util.concurrent.Executors.newSingleThreadExecutor(new org.flowfs.common.NamedThreads("flowfs-sender"));
  private final Map<Handle, FileState> states = new ConcurrentHashMap<>();
  /** Leases on directories this client made: small files created here, sent in batches. */
  private final DirLeases leases;
  private final Locks locks;
  private final Map<Long, OpenFile> openFiles = new ConcurrentHashMap<>();
  private final Map<Long, DirStream> openDirs = new ConcurrentHashMap<>();
  private final AtomicLong ids = new AtomicLong();

  public FileSystemClient(FlowFsConfig config, NetRuntime net) {
    this.config = config;
    this.peers = new Peers(config, net, counters);
    this.timeout = config.rpc().timeout().plusSeconds(1);
    int entries = Math.max(1, config.client().cacheEntries());
    this.attrs = new AttrCache(config.client().attrTimeout(), entries);
    this.names = new NameCache(config.client().entryTimeout(), entries);
    this.contents = new DirContents(config.client().entryTimeout());
    this.statAhead = new StatAhead(config.client().entryTimeout(), 1024);
    this.noXattrs = Caches.expiring(config.client().attrTimeout(), entries);
    this.absentXattrs = Caches.expiring(config.client().attrTimeout(), entries);
    FlowConfig fc = config.flow();
    this.flows = FlowInterface.initialize("client", config.rpc().timeout(), counters, List.of(
        new BufferedFlowProtocol(BufferedFlowProtocol.DOUBLE_BUFFER, fc.bufferSize(), fc.buffers()),
        BufferedFlowProtocol.singleBuffer(fc.bufferSize())));
    this.flowPath = new FlowDataPath(peers, flows, fc, fc.protocol(), counters);
    this.leases = new DirLeases(new LeaseHost(), config.client().dirLeaseFiles(), timeout, counters);
    this.locks = new Locks(this::meta, counters);
    this.readdirAhead = new ReaddirAhead(config.client().entryTimeout(), config.client().readdirAhead(), timeout,
        dir -> peers.meta().call(new ReaddirReq(dir, null, READDIR_PAGE, true)), leases::idle, counters);
  }

  /** What {@link DirLeases} does with the metadata server and this client's caches. */
  private final class LeaseHost implements DirLeases.Host {
    @Override
    public Handle known(Handle dir, String name) {
      return names.get(dir, name);
    }

    @Override
    public boolean free(Handle dir, String name) {
      return contents.absent(dir, name) || names.free(dir, name);
    }

    @Override
    public <R extends Message> CompletableFuture<R> send(Req<R> req) {
      CompletableFuture<R> answer = peers.meta().call(req);
      if (changes(req)) {
        answer.whenComplete((r, e) -> readdirAhead.changed());
      }
      return answer;
    }

    @Override
    public void created(Handle dir, String name, Attr attr, long parentWasNs, long askedNanos) {
      attrs.put(attr);
      contents.changed(dir, name, true, parentWasNs, attr.ctimeNs(), askedNanos);
      if (attr.isDir()) {
        contents.made(attr.handle(), attr.ctimeNs(), askedNanos); // empty still: what names it waited for this answer
      }
      attrs.entriesChanged(dir, attr.ctimeNs(), 0); // its link was counted when it was made here
    }

    @Override
    public void failed(Handle dir, String name, Handle file) {
      names.invalidate(dir, name);
      attrs.invalidate(file);
      noXattrs.invalidate(file);
      contents.forget(dir);
    }

    @Override
    public void unlinked(Handle dir, String name, RemoveResult r, boolean directory, long askedNanos) {
      contents.changed(dir, name, false, r.parentWasNs(), r.parentNowNs(), askedNanos);
      attrs.invalidate(r.handle());
      attrs.entriesChanged(dir, r.parentNowNs(), 0); // a directory's link was uncounted when it was removed here
    }

    @Override
    public void unlinkAgain(Handle dir, String name, boolean directory) {
      contents.forget(dir);
      removeCall(new RemoveReq(dir, name, directory));
      attrs.invalidate(dir);
    }

    @Override
    public long knownCtime(Handle dir) {
      return contents.ctimeOf(dir);
    }

    @Override
    public boolean knownAt(Handle dir, long ctimeNs, long askedNanos) {
      return contents.confirm(dir, ctimeNs, askedNanos);
    }

    @Override
    public void listed(Handle dir, List<String> names, long ctimeNs, long askedNanos) {
      contents.listed(dir, names, ctimeNs, askedNanos);
    }

    @Override
    public Attr reclaim(Handle dir, BatchCreate create, Layout layout, ByteBuf head) {
      leases.settle(dir); // a lease here on the directory now: ended, as for any request naming it
      contents.forget(dir);
      Attr a = madeAs(dir, create);
      if (a == null) {
        try {
          a = metaSettled(new ReclaimReq(dir, create, layout,
              head == null ? Unpooled.EMPTY_BUFFER : head.retainedDuplicate())).attr();
        } catch (FsException e) {
          boolean mayBeUsed = e.errno() == Errno.EINVAL || e.errno() == Errno.ESTALE;
          if (!mayBeUsed || (a = madeAs(dir, create)) == null) {
            throw e;
          }
          a = recordAgain(create, a, head); // used: the lost batch was made after all
        }
      } else {
        a = recordAgain(create, a, head);
      }
      names.put(dir, create.name(), a.handle());
      attrs.put(a);
      return a;
    }

    /**
     * The object of {@code create}, when its name in {@code dir} has it (under its reserved
     * handle); null when the name is free. @throws FsException EEXIST: another object has it
     */
    private Attr madeAs(Handle dir, BatchCreate create) {
      try {
        Attr found = metaSettled(new LookupReq(dir, create.name())).attr();
        if (!found.handle().equals(create.handle())) {
          throw new FsException(Errno.EEXIST, create.name() + " was made by another client meanwhile");
        }
        return found;
      } catch (FsException e) {
        if (e.errno() != Errno.ENOENT) {
          throw e;
        }
        return null;
      }
    }

    /** {@code made}, made by a batch that may not have carried its close: the close's record and head, again. */
    private Attr recordAgain(BatchCreate create, Attr made, ByteBuf head) {
      SetattrReq r = create.record();
      if (r == null) {
        return made;
      }
      return head != null && head.isReadable()
          ? metaSettled(new HeadFlushReq(r, create.headOffset(), head.retainedDuplicate())).attr()
          : metaSettled(r).attr();
    }

    @Override
    public void record(SetattrReq record) {
      attrs.put(meta(record).attr());
    }
  }

  /** The flow interface of this client (for tests and tools). */
  public FlowInterface flows() {
    return flows;
  }

  public FlowFsConfig config() {
    return config;
  }

  public Counters counters() {
    return counters;
  }

  static long now() {
    Instant i = Instant.now();
    return i.getEpochSecond() * 1_000_000_000L + i.getNano();
  }

  /**
   * Metadata requests that give the same outcome when the server runs them twice (reads, a sync,
   * and setattr, which sets values rather than changing them by an amount): re-sent when the
   * connection dropped before their answer.
   */
  private static final Set<Class<?>> IDEMPOTENT = Set.of(LookupReq.class, GetattrReq.class, ReaddirReq.class,
      ReadlinkReq.class, GetxattrReq.class, ListxattrReq.class, MetaStatfsReq.class, SetattrReq.class,
      MetaSyncReq.class, HeadFlushReq.class, OpenReq.class);
  /** Metadata requests that change nothing a listing shows; every other one counts as a change ({@link ReaddirAhead#changed}). */
  private static final Set<Class<?>> CHANGE_NOTHING = Set.of(LookupReq.class, GetattrReq.class, ReaddirReq.class,
      ReadlinkReq.class, GetxattrReq.class, ListxattrReq.class, MetaStatfsReq.class, MetaSyncReq.class, OpenReq.class,
      HeadReadReq.class, DirLeaseReq.class, org.flowfs.common.wire.CommonOp.PingReq.class);

  private static boolean changes(Req<?> req) {
    return !CHANGE_NOTHING.contains(req.getClass());
  }

  private static final long RETRY_PAUSE_MIN_MS = 50;
  private static final long RETRY_PAUSE_MAX_MS = 1000;
  /** A call gave up on the metadata server because it could not reach it; no call got through since. */
  private volatile boolean metaUnreachable;

  /**
   * Calls the metadata server, riding out its restart: a request that never left (the server
   * refused the connection) is sent again, and an {@link #IDEMPOTENT} one or one with a verifier
   * (a create, symlink, link or rename: {@link #verified}) also when the connection dropped
   * before its answer, with growing pauses, all within {@code rpc.timeout}; then the last failure
   * (EIO). Any other request whose connection dropped after it was sent fails with EIO at once:
   * the server may have run it (a remove or an xattr change is sent again by {@link #doneOnce},
   * which knows what its errno means then).
   *
   * <p>Once a call gave up on a server it could not reach, later calls try only once (a refused
   * connection costs nothing) until one gets through: a command that makes many calls, an {@code
   * ls -l}, fails within one timeout rather than one per call.
   *
   * <p>A request with a payload is taken (released once answered or given up), and each attempt
   * sends its own reference to it.
   */
  private <R extends Message> R meta(Req<R> req) {
    if (req instanceof MetaOp op) {
      leases.settle(op); // this client's own leases never hold its requests back
    }
    return metaSettled(req);
  }

  /**
   * {@link #meta} for a request whose leases are readied already: the calls that make a lost
   * batch's file again name that file, which waits for them ({@link DirLeases#settle} would wait
   * for itself).
   */
  private <R extends Message> R metaSettled(Req<R> req) {
    if (req instanceof HasPayload p) {
      try {
        return metaRetrying(req, p, null);
      } finally {
        p.release();
      }
    }
    return metaRetrying(req, null, null);
  }

  /**
   * The calls of {@link #meta}; with {@code doneBefore}, {@code req} is also sent again when its
   * connection dropped after it left, and an errno the server answers a later try with that
   * {@code doneBefore} explains by the lost try's change gives null (see {@link #doneOnce}).
   */
  private <R extends Message> R metaRetrying(Req<R> req, HasPayload payload, Predicate<FsException> doneBefore) {
    if (!changes(req)) {
      return callRetrying(req, payload, doneBefore);
    }
    try {
      return callRetrying(req, payload, doneBefore);
    } finally {
      readdirAhead.changed(); // answered, failed or lost: a listing asked for before may lack it
    }
  }

  private <R extends Message> R callRetrying(Req<R> req, HasPayload payload, Predicate<FsException> doneBefore) {
    boolean retry = !metaUnreachable;
    boolean lost = false;
    long deadline = System.nanoTime() + config.rpc().timeout().toNanos();
    long pauseMs = RETRY_PAUSE_MIN_MS;
    while (true) {
      long left = Math.max(deadline - System.nanoTime(), 1_000_000);
      try {
        long t0 = System.nanoTime();
        if (payload != null) {
          payload.payload().retain(); // the attempt's own: a call consumes the payload it carries
        }
        R r = peers.metaDirect().call(req, Duration.ofNanos(left));
        counters.add(META_WAIT.get(req.getClass()), (System.nanoTime() - t0) / 1000);
        metaUnreachable = false;
        return r;
      } catch (FsException e) {
        CallFailure.Stage stage = CallFailure.stageOf(e);
        if (doneBefore != null && lost && stage == null && doneBefore.test(e)) {
          counters.increment("meta.done-before");
          return null;
        }
        lost |= stage == CallFailure.Stage.LOST;
        long pause = Math.min(pauseMs, (deadline - System.nanoTime()) / 1_000_000);
        if (!(resendable(req, e) || doneBefore != null && stage == CallFailure.Stage.LOST) || !retry || pause <= 0) {
          metaUnreachable = stage == CallFailure.Stage.NOT_SENT;
          throw e;
        }
        counters.increment("meta.retries");
        if (stage == CallFailure.Stage.LOST) {
          counters.increment("meta.resent-after-lost"); // the server may have run it: idempotent, known by its verifier, or doneBefore
        }
        try {
          Thread.sleep(pause);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw new FsException(Errno.EINTR, "interrupted while waiting for the metadata server");
        }
        pauseMs = Math.min(pauseMs * 2, RETRY_PAUSE_MAX_MS);
      }
    }
  }

  /**
   * Waits for a metadata call sent ahead (while other work went on), then treats its failure as
   * {@link #meta} would: a request that never left or an idempotent one is sent again.
   */
  private <R extends Message> R awaitMeta(CompletableFuture<R> sent, Req<R> req) {
    try {
      return Await.get(sent, timeout);
    } catch (FsException e) {
      if (resendable(req, e)) {
        counters.increment("meta.retries");
        return meta(req);
      }
      throw e;
    }
  }

  /**
   * Whether {@code req}, which failed with {@code e}, may be sent again: it never left, or it is
   * idempotent, or it carries a verifier (the server knows it again if it ran it).
   */
  private static boolean resendable(Req<?> req, FsException e) {
    CallFailure.Stage stage = CallFailure.stageOf(e);
    return stage == CallFailure.Stage.NOT_SENT || stage == CallFailure.Stage.LOST && (IDEMPOTENT.contains(req.getClass())
        || verified(req));
  }

  /** Whether {@code req} is a change of entries whose verifier the server knows it by when it is sent again. */
  private static boolean verified(Req<?> req) {
    return req instanceof CreateReq c && c.verifier() != 0 || req instanceof SymlinkReq l && l.verifier() != 0
        || req instanceof LinkReq k && k.verifier() != 0 || req instanceof RenameReq r && r.verifier() != 0;
  }

  /**
   * A verifier for a create ({@link CreateReq#verifier()}): random, never 0. A create whose
   * connection dropped before its answer is sent again with it: the server answers with what the
   * first one made, if it did, rather than EEXIST.
   */
  private static long verifier() {
    long v;
    do {
      v = java.util.concurrent.ThreadLocalRandom.current().nextLong();
    } while (v == 0);
    return v;
  }

  /** One call to the metadata server, never re-sent. */
  private <R extends Message> R metaOnce(Req<R> req) {
    if (req instanceof MetaOp op) {
      leases.settle(op);
    }
    try {
      return peers.metaDirect().call(req);
    } finally {
      if (changes(req)) {
        readdirAhead.changed();
      }
    }
  }

  // ---- paths ----------------------------------------------------------------------------------

  /** A path split into its parent's path and its last name. */
  private record Split(String parent, String name) {}

  private static Split split(String path) {
    if (path.equals("/") || path.isEmpty()) {
      throw new FsException(Errno.EBUSY, "the root has no parent");
    }
    int slash = path.lastIndexOf('/');
    String parent = slash <= 0 ? "/" : path.substring(0, slash);
    return new Split(parent, path.substring(slash + 1));
  }

  /** The handle a path names; every component but the last must be a directory. */
  public Handle resolve(String path) {
    return resolve(path, false);
  }

  /** {@link #resolve(String)}; {@code uncached}: every name looked up on the metadata server. */
  private Handle resolve(String path, boolean uncached) {
    Handle h = Handle.ROOT;
    int i = 0;
    int n = path.length();
    while (i < n) {
      while (i < n && path.charAt(i) == '/') {
        i++;
      }
      if (i >= n) {
        break;
      }
      int j = path.indexOf('/', i);
      if (j < 0) {
        j = n;
      }
      String name = path.substring(i, j);
      if (uncached) {
        names.invalidate(h, name);
        contents.forget(h);
      }
      h = child(h, name);
      i = j;
    }
    return h;
  }

  private Handle child(Handle dir, String name) {
    Names.check(name);
    Handle h = names.get(dir, name);
    if (h != null) {
      return h;
    }
    h = leases.madeHere(dir, name);
    if (h != null) {
      counters.increment("meta.lookup.made-here"); // a lookup would end the lease
      names.put(dir, name, h);
      return h;
    }
    if (contents.absent(dir, name)) {
      counters.increment("meta.lookup.known-absent");
      throw new FsException(Errno.ENOENT, name);
    }
    counters.increment("meta.lookup");
    Attr a;
    try {
      a = meta(new LookupReq(dir, name)).attr();
    } catch (FsException e) {
      if (e.errno() == Errno.ENOENT) {
        names.putFree(dir, name); // (for a rename to it: what is there is known, nothing)
      }
      throw e;
    }
    names.put(dir, name, a.handle());
    putListed(a);
    if (statAhead.foundOnServer(dir)) {
      listWhole(dir);
    }
    return a.handle();
  }

  /**
   * Caches the entries of {@code dir}, with their attributes, page by page (up to {@link
   * StatAhead#MAX_ENTRIES}): the directory is being walked name by name. A failure only means the
   * walk goes on with lookups.
   */
  private void listWhole(Handle dir) {
    counters.increment("meta.statahead");
    String cursor = null;
    try {
      for (int n = 0; n < StatAhead.MAX_ENTRIES; ) {
        counters.increment("meta.readdir");
        ReaddirResp page = meta(new ReaddirReq(dir, cursor, READDIR_PAGE, true));
        cache(dir, page, false);
        n += page.entries().size();
        if (page.eof() || page.entries().isEmpty()) {
          return;
        }
        cursor = page.entries().get(page.entries().size() - 1).name();
      }
    } catch (FsException e) {
      statAhead.listingFailed(dir);
    }
  }

  /**
   * Caches the names and attributes of a page of {@code dir}, and which entries have no extended
   * attributes ({@code ls -l} asks two of every file). A page asked for ahead of the read ({@code
   * older}, {@link ReaddirAhead}) fills only what nothing is cached for: an answer taken since (a
   * lookup, a getattr) may be newer than it.
   */
  private void cache(Handle dir, ReaddirResp page, boolean older) {
    for (Dirent e : page.entries()) {
      if (!older || names.get(dir, e.name()) == null) {
        names.put(dir, e.name(), e.handle());
      }
      if (e.attr() == null || older && !attrs.putIfAbsent(e.attr())) {
        continue;
      }
      if (!older) {
        putListed(e.attr());
      }
      if (!e.xattrs()) {
        noXattrs.put(e.handle(), Boolean.TRUE);
      }
    }
  }

  /**
   * Caches the attributes of an object a lookup or a listing of its parent answered, unless it is
   * a directory leased here: the server's then lack the entries not sent yet (its times, a new
   * subdirectory's link), and what is cached here is newer; with nothing cached, a getattr asks
   * again, which ends the lease first.
   */
  private void putListed(Attr a) {
    if (a.isDir() && leases.holds(a.handle())) {
      counters.increment("lease.attrs-kept");
      return;
    }
    attrs.put(a);
  }

  // ---- attributes -----------------------------------------------------------------------------

  public Attr getattr(String path) {
    Handle h = resolve(path);
    try {
      return getattr(h);
    } catch (FsException e) {
      return getattr(relookup(path, h, e));
    }
  }

  /**
   * The handle {@code path} names now, looked up name by name on the metadata server, after the
   * handle the caches gave ({@code stale}) led to an object that is gone: its name was renamed
   * over or removed since (by another client, or by this one between the lookup and the call).
   * Rethrows {@code e} unless it is ENOENT.
   */
  private Handle relookup(String path, Handle stale, FsException e) {
    if (e.errno() != Errno.ENOENT) {
      throw e;
    }
    attrs.invalidate(stale);
    counters.increment("meta.relookup");
    return resolve(path, true);
  }

  public Attr getattr(Handle h) {
    Attr a = attrs.get(h);
    if (a == null) {
      counters.increment("meta.getattr");
      a = meta(new GetattrReq(h)).attr();
      attrs.put(a);
    }
    FileState st = states.get(h);
    return st == null ? a : st.overlay(a);
  }

  /** Attributes straight from the metadata server (close-to-open revalidation). */
  private Attr fresh(Handle h) {
    counters.increment("meta.getattr");
    Attr a = meta(new GetattrReq(h)).attr();
    attrs.put(a);
    return a;
  }

  private Attr setattr(Handle h, int mask, int mode, int uid, int gid, long size, long atime, long mtime) {
    counters.increment("meta.setattr");
    Attr a = meta(new SetattrReq(h, mask, mode, uid, gid, size, atime, mtime)).attr();
    attrs.put(a);
    FileState st = states.get(h);
    return st == null ? a : st.overlay(a);
  }

  public Attr chmod(String path, int mode) {
    Handle h = resolve(path);
    Attr later = deferred(h, SetattrReq.MODE, mode & Attr.PERM_MASK, 0, 0, 0, 0);
    return later != null ? later : setattr(h, SetattrReq.MODE, mode & Attr.PERM_MASK, 0, 0, 0, 0, 0);
  }

  /**
   * Defers a change of the attributes of {@code h} to the recording of its size, when the file is
   * one this client made and has recorded nothing of yet ({@link FileState#defer}): that file
   * becomes visible to other clients with its bytes, size, mode, owner and times in one change, at
   * its close (or flush, fsync, truncate), one call in all. {@code tar -x} sets the times, owner
   * and mode of every file it writes before closing it. Returns the attributes this client shows
   * now, or null if the change must go to the metadata server now.
   */
  private Attr deferred(Handle h, int mask, int mode, int uid, int gid, long atimeNs, long mtimeNs) {
    FileState st = states.get(h);
    if (st == null) {
      return leases.holds(h) ? deferredDir(h, mask, mode, uid, gid, atimeNs, mtimeNs) : null;
    }
    if (!st.defer(getattr(h), mask, mode, uid, gid, atimeNs, mtimeNs)) {
      if (st.hasDeferred()) {
        flush(st); // the changes deferred before go first, as they came first
      }
      return null;
    }
    counters.increment("setattr.deferred");
    return getattr(h);
  }

  /**
   * Defers a change of the attributes of directory {@code h}, leased here, to the lease's next
   * batch ({@link DirLeases#deferAttrs}); returns the attributes shown now, or null if the change
   * must go to the metadata server now.
   */
  private Attr deferredDir(Handle h, int mask, int mode, int uid, int gid, long atimeNs, long mtimeNs) {
    if (attrs.get(h) == null || !leases.deferAttrs(h, mask, mode, uid, gid, atimeNs, mtimeNs)) {
      return null;
    }
    Attr shown = attrs.get(h); // as the answers of the creates sent first left it
    if (shown == null) {
      return getattr(h); // ends the lease: the change goes with its last batch
    }
    Attr a = DeferredAttrs.NONE.and(mask, mode, uid, gid, atimeNs, mtimeNs).appliedTo(shown);
    Attr changed = new Attr(a.handle(), a.type(), a.mode(), a.uid(), a.gid(), a.nlink(), a.size(), a.atimeNs(),
        a.mtimeNs(), now(), a.rdev(), a.layout());
    attrs.put(changed);
    counters.increment("setattr.deferred");
    return changed;
  }

  /**
   * Changes owner and/or group; -1 leaves one as it is. A changed file that is not a directory loses set-user-ID,
   * and set-group-ID with group execute, whoever changes it, as on Linux.
   */
  public Attr chown(String path, int uid, int gid) {
    int mask = (uid != -1 ? SetattrReq.UID : 0) | (gid != -1 ? SetattrReq.GID : 0);
    Handle h = resolve(path);
    if (mask == 0) {
      return fresh(h);
    }
    Attr later = deferred(h, mask | SetattrReq.KILL_SUID, 0, Math.max(uid, 0), Math.max(gid, 0), 0, 0);
    return later != null ? later : setattr(h, mask | SetattrReq.KILL_SUID, 0, Math.max(uid, 0), Math.max(gid, 0), 0, 0, 0);
  }

  /** Clears set-user-ID, and set-group-ID with group execute, unless a directory. */
  public Attr killSetid(String path) {
    return setattr(resolve(path), SetattrReq.KILL_SUID, 0, 0, 0, 0, 0, 0);
  }

  /** {@link #killSetid(String)} of an open file, whatever its name now. */
  public Attr killSetid(OpenFile f) {
    return setattr(f.state().handle, SetattrReq.KILL_SUID, 0, 0, 0, 0, 0, 0);
  }

  /** Sets access and modification times (ns since the epoch, or {@link #UTIME_NOW}/{@link #UTIME_OMIT}). */
  public Attr utimens(String path, long atimeNs, long mtimeNs) {
    int mask = 0;
    if (atimeNs == UTIME_NOW) {
      mask |= SetattrReq.ATIME_NOW;
    } else if (atimeNs != UTIME_OMIT) {
      mask |= SetattrReq.ATIME;
    }
    if (mtimeNs == UTIME_NOW) {
      mask |= SetattrReq.MTIME_NOW;
    } else if (mtimeNs != UTIME_OMIT) {
      mask |= SetattrReq.MTIME;
    }
    Handle h = resolve(path);
    if (mask == 0) {
      return getattr(h);
    }
    long atime = (mask & SetattrReq.ATIME) != 0 ? atimeNs : 0;
    long mtime = (mask & SetattrReq.MTIME) != 0 ? mtimeNs : 0;
    Attr later = deferred(h, mask, 0, 0, 0, atime, mtime);
    if (later != null) {
      return later;
    }
    FileState st = states.get(h);
    if (st != null) {
      // what this client's buffered writes changed is recorded in the same change as the times:
      // one commit and one round trip rather than two (tar sets the times of every file it
      // writes, before closing it); the writes then cannot move the mtime after it was set
      Attr recorded = flush(st, mask, atime, mtime);
      if (recorded != null) {
        counters.increment("utimens.with-writes");
        return st.overlay(recorded);
      }
    }
    return setattr(h, mask, 0, 0, 0, 0, atime, mtime);
  }

  public Attr truncate(String path, long size) {
    return truncate(path, size, false);
  }

  /** Truncates, with {@code killSetid}: clearing set-user-ID, and set-group-ID with group execute. */
  public Attr truncate(String path, long size, boolean killSetid) {
    Handle h = resolve(path);
    return truncate(h, states.get(h), size, killSetid);
  }

  public Attr truncate(OpenFile f, long size) {
    return truncate(f, size, false);
  }

  public Attr truncate(OpenFile f, long size, boolean killSetid) {
    return truncate(f.state().handle, f.state(), size, killSetid);
  }

  private Attr truncate(Handle h, FileState st, long size, boolean killSetid) {
    if (size < 0) {
      throw new FsException(Errno.EINVAL, "negative size");
    }
    Attr a = st != null ? getattr(h) : fresh(h);
    if (a.isDir()) {
      throw new FsException(Errno.EISDIR, "cannot truncate a directory");
    }
    if (!a.isRegular()) {
      throw new FsException(Errno.EINVAL, "cannot truncate a " + a.type());
    }
    if (st == null) {
      return truncateData(a, size, killSetid);
    }
    st.quiesce(); // no store of pages read around may land after the kernel cut its cache
    synchronized (st) {
      flush(st);
      Attr r = truncateData(a.withSize(Math.max(a.size(), st.size())), size, killSetid); // what this client wrote too
      st.truncated(size, r.mtimeNs());
      return st.overlay(r);
    }
  }

  /**
   * Cuts or extends the file's datafiles to {@code size} and records it; the metadata server cuts
   * the head with the size. A file that stays within its head, and was within it, has nothing in
   * its datafiles to cut.
   */
  private Attr truncateData(Attr a, long size, boolean killSetid) {
    Layout layout = a.layout();
    if (!withinHead(layout, Math.max(size, a.size()))) {
      Distribution dist = Distributions.of(layout.dist());
      int n = layout.serverCount();
      List<CompletableFuture<?>> fs = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        Handle d = layout.datafiles().get(i);
        fs.add(peers.io(d.ioServer()).call(new TruncateReq(d, dist.physicalSize(size, i, n))));
      }
      Await.get(CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)), timeout);
    }
    counters.increment("truncate");
    int mask = SetattrReq.SIZE | (killSetid ? SetattrReq.KILL_SUID : 0);
    return setattr(a.handle(), mask, 0, 0, 0, size, 0, 0);
  }

  /** {@code fallocate(2)}'s {@code FALLOC_FL_KEEP_SIZE}: the file's size stays. */
  public static final int FALLOC_KEEP_SIZE = 0x01;
  /** {@code fallocate(2)}'s {@code FALLOC_FL_PUNCH_HOLE} (with {@link #FALLOC_KEEP_SIZE}): the range is freed. */
  public static final int FALLOC_PUNCH_HOLE = 0x02;
  /** {@code fallocate(2)}'s {@code FALLOC_FL_ZERO_RANGE}: the range reads as zeros and has storage. */
  public static final int FALLOC_ZERO_RANGE = 0x10;

  /**
   * {@code fallocate(2)} of an open file. Mode 0 and {@link #FALLOC_KEEP_SIZE} reserve storage for
   * {@code [offset, offset + length)} on every I/O server the range reaches (the part of each
   * datafile the distribution maps it to, past the head), so that later writes there do not fail
   * for want of space; bytes already written stay. {@code FALLOC_PUNCH_HOLE | FALLOC_KEEP_SIZE}
   * frees the range in the datafiles and writes zeros over its part in the head: it reads as zeros
   * after. {@link #FALLOC_ZERO_RANGE} does both, the range zeros with storage. Without {@link
   * #FALLOC_KEEP_SIZE}, {@code offset + length} becomes the size if that is larger. Other modes are
   * ENOTSUP (EOPNOTSUPP), as the datafiles' file systems may say too. A reservation larger than the
   * free space of the disks it reaches is ENOSPC before anything is reserved; one that runs out midway is
   * ENOSPC and keeps what it reserved (as on a local file system: a removal of the file gives it
   * back). Every call moves mtime and ctime, as Linux's do, and with {@code killSetid} (a caller
   * without the privilege to keep them) clears set-user-ID, and set-group-ID with group execute.
   *
   * <p>A contiguous logical range is one contiguous range of each datafile (a distribution maps
   * each server's bytes to its datafile in order), so each I/O server gets one call per step.
   */
  public Attr allocate(OpenFile f, int mode, long offset, long length, boolean killSetid) {
    boolean keepSize = (mode & FALLOC_KEEP_SIZE) != 0;
    int kind = mode & ~FALLOC_KEEP_SIZE;
    boolean zero = kind == FALLOC_PUNCH_HOLE || kind == FALLOC_ZERO_RANGE;
    if (kind != 0 && !zero || kind == FALLOC_PUNCH_HOLE && !keepSize) {
      throw new FsException(Errno.ENOTSUP, "fallocate mode 0x" + Integer.toHexString(mode));
    }
    if (offset < 0 || length <= 0) {
      throw new FsException(Errno.EINVAL, "fallocate of " + length + " bytes at " + offset);
    }
    if (offset > Long.MAX_VALUE - length) {
      throw new FsException(Errno.EFBIG, "fallocate past the largest offset");
    }
    FileState st = f.state();
    long end = offset + length;
    if (zero) {
      st.quiesce(); // no store of pages read around may land after the range was zeroed
    }
    synchronized (st) {
      flush(st);
      Attr a = getattr(st.handle);
      Layout layout = a.layout();
      long from = Math.max(offset, layout.headBytes());
      try {
        List<AllocateReq> reserve = kind == FALLOC_PUNCH_HOLE ? List.of() : ranges(layout, from, end, false);
        if (!reserve.isEmpty()) {
          checkRoom(ranges(layout, Math.max(from, a.size()), end, false)); // below the end is held already
        }
        if (zero) {
          long headEnd = Math.min(Math.min(end, layout.headBytes()), a.size());
          if (offset < headEnd) { // the head's bytes are the metadata server's: zeros written there
            st.write(offset, io.netty.buffer.Unpooled.wrappedBuffer(new byte[(int) (headEnd - offset)]), now(), false);
            flush(st);
          }
          send(ranges(layout, from, end, true));
        }
        send(reserve);
        counters.increment(kind == 0 ? "allocate" : kind == FALLOC_PUNCH_HOLE ? "punch" : "zero-range");
        boolean grows = !keepSize && end > a.size();
        // every mode changes mtime and ctime, as on Linux's local file systems
        int mask = SetattrReq.MTIME_NOW | (grows ? SetattrReq.SIZE_GROW : 0) | (killSetid ? SetattrReq.KILL_SUID : 0);
        Attr r = setattr(st.handle, mask, 0, 0, 0, grows ? end : 0, 0, 0);
        st.truncated(Math.max(a.size(), grows ? end : 0), r.mtimeNs()); // also drops what was read
        return st.overlay(r);
      } catch (RuntimeException e) {
        if (zero) {
          st.dropReads(); // the failure may have come after some bytes became zeros
        }
        throw e;
      }
    }
  }

  /** What each datafile holds of the logical range {@code [from, to)}, as calls to reserve or free it. */
  private static List<AllocateReq> ranges(Layout layout, long from, long to, boolean punch) {
    if (from >= to) {
      return List.of();
    }
    Distribution dist = Distributions.of(layout.dist());
    int n = layout.serverCount();
    List<AllocateReq> reqs = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      long start = dist.physicalSize(from, i, n);
      long stop = dist.physicalSize(to, i, n);
      if (stop > start) {
        reqs.add(new AllocateReq(layout.datafiles().get(i), start, stop - start, punch));
      }
    }
    return reqs;
  }

  /** Sends {@code reqs}, each to its server, and waits for every answer. */
  private void send(List<AllocateReq> reqs) {
    List<CompletableFuture<?>> fs = new ArrayList<>(reqs.size());
    for (AllocateReq q : reqs) {
      fs.add(peers.io(q.handle().ioServer()).call(q));
    }
    Await.get(CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)), timeout);
  }

  /**
   * ENOSPC, before anything is reserved, when {@code growth} (what a reservation adds: its parts
   * past each datafile's end) needs more of a disk than it has available. The servers it reaches
   * are asked for their space, and servers that share a disk (as {@code flowfs up}'s do) count
   * together, where each server checks only its own part.
   */
  private void checkRoom(List<AllocateReq> growth) {
    List<CompletableFuture<IoStatfsResp>> asked = new ArrayList<>(growth.size());
    for (AllocateReq q : growth) {
      asked.add(peers.io(q.handle().ioServer()).call(new IoStatfsReq()));
    }
    Map<Long, Long> need = new HashMap<>();
    Map<Long, Long> available = new HashMap<>();
    for (int i = 0; i < growth.size(); i++) {
      StorageSpace s = Await.get(asked.get(i), timeout).space();
      long device = s.device() != 0 ? s.device() : -1 - i; // unknown: a disk of its own
      need.merge(device, growth.get(i).length(), Long::sum);
      available.put(device, s.available());
    }
    need.forEach((device, bytes) -> {
      if (bytes > available.get(device)) {
        throw new FsException(Errno.ENOSPC, "fallocate needs " + bytes + " bytes of a disk with "
            + available.get(device) + " available");
      }
    });
  }

  // ---- namespace ------------------------------------------------------------------------------

  private Handle parentOf(Split s) {
    Handle p = resolve(s.parent());
    Names.checkNew(s.name());
    return p;
  }

  /**
   * Runs {@code op} with the handle of {@code s}'s parent directory; when that handle names no
   * directory any more (ENOENT) but the parent's path names another one now, once more with that
   * one. A directory made under a lease whose batch was lost with a restarting metadata server is
   * made again with a new handle, and the kernel asks for the next entry in it by path at once.
   */
  private <T> T inParent(Split s, java.util.function.Function<Handle, T> op) {
    Handle p = parentOf(s);
    try {
      return op.apply(p);
    } catch (FsException e) {
      Handle now = relookup(s.parent(), p, e);
      if (now.equals(p)) {
        throw e;
      }
      return op.apply(now);
    }
  }

  /**
   * Asks the metadata server for a new entry {@code name} in {@code parent} (a create, symlink or
   * link) and caches what the answer says: the object, the name, the parent's new times and, when
   * this client knows all of the parent's names, the one added. {@code newObject}: the entry names
   * an object made by the request (not a link to an existing one).
   */
  private Attr newEntry(Handle parent, String name, Req<EntryResp> q, boolean newObject) {
    long asked = System.nanoTime();
    EntryResp r;
    try {
      r = meta(q);
    } catch (RuntimeException e) {
      contents.forget(parent); // EEXIST: another client's name; or it is not known what happened
      throw e;
    }
    Attr a = r.attr();
    contents.changed(parent, name, true, r.parentWasNs(), a.ctimeNs(), asked);
    if (a.isDir()) {
      contents.made(a.handle(), a.ctimeNs(), asked);
    }
    // a new object has no extended attributes, but for the ACLs it takes from its directory's
    // default ACL (the metadata server applies them)
    boolean bare = a.type() == FileType.SYMLINK || xattrKnownAbsent(parent, PosixAcl.DEFAULT);
    return newObject && bare ? createdNew(parent, name, a) : created(parent, name, a);
  }

  private Attr created(Handle parent, String name, Attr a) {
    names.put(parent, name, a.handle());
    attrs.put(a);
    // the server stamped the parent with the same time as the new entry, and a new directory
    // links it: the kernel asks for the parent next
    attrs.entriesChanged(parent, a.ctimeNs(), a.isDir() ? 1 : 0);
    return a;
  }

  /** A new object: it has no extended attributes yet (the kernel asks for one on every write). */
  private Attr createdNew(Handle parent, String name, Attr a) {
    noXattrs.put(a.handle(), Boolean.TRUE);
    return created(parent, name, a);
  }

  public Attr mkdir(String path, int mode, Caller c) {
    Split s = split(path);
    return inParent(s, p -> {
      Attr a = makeLeased(FileType.DIRECTORY, p, s.name(), mode & Attr.PERM_MASK, c);
      if (a != null) {
        return a;
      }
      counters.increment("meta.mkdir");
      return newEntry(p, s.name(), new CreateReq(p, s.name(), FileType.DIRECTORY, mode & Attr.PERM_MASK, c.uid(), c.gid(), 0, null, 0,
          verifier(), c.umask()), true);
    });
  }

  /** Creates a regular file, FIFO, socket or device node ({@code mode} carries the type bits). */
  public Attr mknod(String path, int mode, int rdev, Caller c) {
    FileType type = (mode & FileType.S_IFMT) == 0 ? FileType.REGULAR : FileType.ofMode(mode);
    if (type == FileType.DIRECTORY || type == FileType.SYMLINK) {
      throw new FsException(Errno.EINVAL, "mknod of a " + type);
    }
    Split s = split(path);
    return inParent(s, p -> {
      counters.increment("meta.create");
      return newEntry(p, s.name(), new CreateReq(p, s.name(), type, mode & Attr.PERM_MASK, c.uid(), c.gid(), rdev, null, 0,
          verifier(), c.umask()), true);
    });
  }

  /** Creates a regular file and opens it. */
  public OpenFile create(String path, int mode, int flags, Caller c) {
    return create(path, mode, flags, c, null, 0);
  }

  /**
   * Creates a regular file laid out by {@code dist} over {@code servers} I/O servers (null and 0:
   * the file system's defaults) and opens it.
   *
   * <p>Without {@code O_EXCL}, a name that exists by now is opened as the kernel opens an existing
   * file: the kernel asks to create only after a lookup found nothing, and another client may have
   * made the name since (or made it within the entry timeout of this client's last change of a
   * directory whose names it knows, see {@link DirContents}).
   */
  public OpenFile create(String path, int mode, int flags, Caller c, DistSpec dist, int servers) {
    Split s = split(path);
    OpenFile made = inParent(s, p -> createIn(p, s, mode, flags, c, dist, servers));
    if (made != null) {
      return made;
    }
    counters.increment("meta.create.existed");
    Attr a = fresh(resolve(path, true));
    if (a.isDir()) {
      throw new FsException(Errno.EISDIR, path);
    }
    OpenAccess.check(a, c.uid() == 0 ? null : accessAcl(a.handle()), c, flags);
    OpenFile f = open(a, flags);
    if ((flags & O_TRUNC) != 0) {
      try {
        truncate(f, 0, c.uid() != 0);
      } catch (RuntimeException e) {
        release(f);
        throw e;
      }
    }
    return f;
  }

  /** Creates {@code s}'s regular file in {@code p} and opens it; null when the name exists and {@code O_EXCL} is not set. */
  private OpenFile createIn(Handle p, Split s, int mode, int flags, Caller c, DistSpec dist, int servers) {
    if (dist == null && servers == 0) {
      OpenFile f = createLeased(p, s.name(), mode & Attr.PERM_MASK, flags, c);
      if (f != null) {
        return f;
      }
    }
    counters.increment("meta.create");
    try {
      OpenFile f = open(newEntry(p, s.name(), new CreateReq(p, s.name(), FileType.REGULAR, mode & Attr.PERM_MASK, c.uid(), c.gid(), 0, dist,
          servers, verifier(), c.umask()), true), flags);
      f.state().created();
      return f;
    } catch (FsException e) {
      if (e.errno() != Errno.EEXIST || (flags & O_EXCL) != 0) {
        throw e;
      }
      return null;
    }
  }

  /**
   * Creates regular file {@code name} in {@code dir} here, under this client's lease on the
   * directory ({@link DirLeases}), and opens it; null when there is no lease to make it under.
   */
  private OpenFile createLeased(Handle dir, String name, int mode, int flags, Caller c) {
    Attr a = makeLeased(FileType.REGULAR, dir, name, mode, c);
    if (a == null) {
      return null;
    }
    OpenFile f = open(a, flags);
    f.state().created();
    return f;
  }

  /**
   * Makes regular file or directory {@code name} in {@code dir} here, under this client's lease on
   * the directory ({@link DirLeases}); null when there is no lease to make it under.
   */
  private Attr makeLeased(FileType type, Handle dir, String name, int mode, Caller c) {
    askLease(dir);
    // the metadata server leases no directory with a default ACL: the umask applies here
    Attr a = leases.make(type, dir, name, mode & ~c.umask(), c.uid(), c.gid(), now(), () -> contents.addPending(dir, name));
    if (a == null) {
      return null;
    }
    if (a.isDir()) {
      contents.made(a.handle(), a.ctimeNs(), System.nanoTime()); // empty: creates in it may take a lease too
      CompletableFuture<Void> until = leases.madeUntil(dir, name, a.handle());
      if (until != null) {
        attrs.hold(a, until); // nobody else can reach it before the lease ends (an rmdir's lstat asks for it)
      }
    }
    return createdNew(dir, name, a);
  }

  /**
   * Before a change of {@code dir}'s entries that a lease would let this client make locally:
   * asks for a lease on it (the first change waits for the grant: the rest need no call), or, when
   * its names are not known, counts the change towards a lease whose grant brings them.
   */
  private void askLease(Handle dir) {
    if (contents.known(dir)) {
      leases.want(dir);
    } else {
      leases.unlisted(dir);
    }
  }

  public Attr symlink(String target, String path, Caller c) {
    Split s = split(path);
    return inParent(s, p -> {
      counters.increment("meta.symlink");
      return newEntry(p, s.name(), new SymlinkReq(p, s.name(), target, c.uid(), c.gid(), verifier()), true);
    });
  }

  public String readlink(String path) {
    return meta(new ReadlinkReq(resolve(path))).target();
  }

  public Attr link(String existing, String path) {
    Handle target = resolve(existing);
    Split s = split(path);
    Handle p = parentOf(s);
    return newEntry(p, s.name(), new LinkReq(target, p, s.name(), verifier()), false);
  }

  public void unlink(String path) {
    remove(path, false);
  }

  public void rmdir(String path) {
    remove(path, true);
  }

  private void remove(String path, boolean dir) {
    Split s = split(path);
    Handle p = resolve(s.parent());
    if (dir ? rmdirLeased(p, s.name()) : unlinkLeased(p, s.name())) {
      counters.increment(dir ? "meta.rmdir.leased" : "meta.unlink.leased");
      return;
    }
    counters.increment(dir ? "meta.rmdir" : "meta.unlink");
    long asked = System.nanoTime();
    try {
      var r = removeCall(new RemoveReq(p, s.name(), dir));
      if (r == null) { // removed by the try whose answer was lost: what it answered is not known
        Handle known = names.get(p, s.name()); // (dropped in the finally below)
        if (known != null) {
          attrs.invalidate(known);
          contents.forget(known);
        }
        attrs.invalidate(p);
        contents.forget(p);
        return;
      }
      contents.changed(p, s.name(), false, r.parentWasNs(), r.timeNs(), asked);
      if (dir) {
        contents.forget(r.handle());
      }
      attrs.invalidate(r.handle());
      // the server stamped the parent with the time it returned, and a directory unlinked it
      attrs.entriesChanged(p, r.timeNs(), dir ? -1 : 0);
    } catch (RuntimeException e) {
      attrs.invalidate(p); // changed or not: ask again
      contents.forget(p);
      throw e;
    } finally {
      names.invalidate(p, s.name());
    }
  }

  /**
   * Unlinks {@code name} in {@code dir} here, under this client's lease on the directory ({@link
   * DirLeases#unlink}), when it is a regular file or symbolic link with one link as far as this
   * client knows (cached); false when the unlink must be a call of its own. The first unlink in a
   * directory whose names are known asks for a lease and waits for the grant.
   */
  private boolean unlinkLeased(Handle dir, String name) {
    Handle h = names.get(dir, name);
    Attr a = h == null ? null : attrs.get(h);
    if (a == null || a.isDir() || a.nlink() != 1) {
      return false;
    }
    askLease(dir);
    if (!leases.unlink(dir, name, h, () -> contents.removePending(dir, name))) {
      return false;
    }
    removedHere(dir, name, h, 0);
    return true;
  }

  /** Name {@code name} of {@code h} in {@code dir} was removed here, under a lease: what is cached of it goes. */
  private void removedHere(Handle dir, String name, Handle h, int dirLinks) {
    names.invalidate(dir, name);
    attrs.invalidate(h);
    attrs.entriesChanged(dir, now(), dirLinks);
  }

  /**
   * Removes directory {@code name} in {@code dir} here, when this client leases both, or leases
   * {@code dir} and made the directory under that lease, and the directory is empty as far as
   * this client knows ({@link DirLeases#rmdir}): the lease keeps every other client out of it. False
   * when the rmdir must be a call of its own.
   */
  private boolean rmdirLeased(Handle dir, String name) {
    Handle cached = names.get(dir, name);
    Handle h = cached != null ? cached : leases.madeHere(dir, name); // (no lookup first: an rmdir through the API)
    if (h == null || !leases.holds(h) && !leases.holds(dir)) {
      return false;
    }
    if (contents.known(dir)) {
      leases.want(dir); // the first rmdir here waits for the grant: the rest go in its batches
    }
    if (!leases.rmdir(dir, name, h, () -> contents.emptyAsKnown(h) && contents.removePending(dir, name))) {
      return false;
    }
    removedHere(dir, name, h, -1);
    contents.forget(h);
    return true;
  }

  /**
   * Sends remove {@code q}; sent again after a lost answer, ENOENT means the lost try removed the
   * name: null ({@link #doneOnce}). (Another client may have removed it meanwhile; either way the
   * name is gone, as the caller asked.)
   */
  private RemoveResp removeCall(RemoveReq q) {
    return doneOnce(q, e -> e.errno() == Errno.ENOENT);
  }

  /**
   * Sends {@code q} (no payload), a change that running twice does not leave as running once
   * does; when its connection dropped before the answer (the server may have run it), sends it
   * again as {@link #meta} re-sends, and an errno that {@code doneBefore} says the lost try's
   * change explains gives null: done, by the try whose answer was lost.
   */
  private <R extends Message> R doneOnce(Req<R> q, Predicate<FsException> doneBefore) {
    if (q instanceof MetaOp op) {
      leases.settle(op);
    }
    return metaRetrying(q, null, doneBefore);
  }

  public void rename(String from, String to, int flags) {
    Split a = split(from);
    Split b = split(to);
    Handle pa = resolve(a.parent());
    Handle pb = resolve(b.parent());
    counters.increment("meta.rename");
    RenameReq q = new RenameReq(pa, a.name(), pb, b.name(), flags, verifier());
    leases.settle(q); // while the names known here still tell what its names are
    contents.forget(pa);
    contents.forget(pb);
    try {
      RenameResp r = metaSettled(q);
      attrs.invalidate(r.moved());
      if (r.replaced() != null) {
        attrs.invalidate(r.replaced());
      }
    } finally {
      names.invalidate(pa, a.name());
      names.invalidate(pb, b.name());
      attrs.invalidate(pa);
      attrs.invalidate(pb);
    }
  }

  // ---- directories ----------------------------------------------------------------------------

  public long opendir(String path) {
    Handle h = resolve(path);
    Attr a = getattr(h);
    if (!a.isDir()) {
      throw new FsException(Errno.ENOTDIR, path);
    }
    long id = ids.incrementAndGet();
    openDirs.put(id, new DirStream(h));
    readdirAhead.opened(h);
    return id;
  }

  /** Entry {@code index} of an open directory (no "." or ".."), or null past its end. */
  public Dirent readdir(long dirId, int index) {
    DirStream d = openDirs.get(dirId);
    if (d == null) {
      throw new FsException(Errno.EBADF, "directory stream " + dirId);
    }
    while (d.needs(index)) {
      boolean first = d.cursor() == null;
      ReaddirResp page = first ? readdirAhead.take(d.dir()) : null;
      boolean ahead = page != null;
      if (!ahead) {
        counters.increment("meta.readdir");
        page = meta(new ReaddirReq(d.dir(), d.cursor(), READDIR_PAGE, true));
      }
      cache(d.dir(), page, ahead);
      readdirAhead.listed(d.dir(), first, page.entries());
      d.append(page.entries(), page.eof());
    }
    return d.at(index);
  }

  public void releasedir(long dirId) {
    openDirs.remove(dirId);
  }

  // ---- files ----------------------------------------------------------------------------------

  public OpenFile open(String path, int flags) {
    Handle h = resolve(path);
    Attr hint = attrs.get(h);
    int firstLength = firstLength(hint, flags);
    if (firstLength > 0 && hint.layout().headBytes() >= firstLength) {
      return openWithHead(path, h, hint, flags, firstLength);
    }
    ReadAhead.Window first = firstLength > 0 ? readFirst(hint, firstLength) : null;
    Attr a;
    try {
      try {
        a = fresh(h);
      } catch (FsException e) {
        if (first != null) {
          first.drop();
          first = null;
        }
        hint = null;
        a = fresh(relookup(path, h, e));
      }
      if (a.isDir()) {
        throw new FsException(Errno.EISDIR, path);
      }
    } catch (RuntimeException e) {
      if (first != null) {
        first.drop();
      }
      throw e;
    }
    return open(a, flags, first, changedSince(hint, a));
  }

  /**
   * Whether {@code fresh} differs from {@code cached} (null: nothing was cached) in what shows of a
   * file's contents and its inode: size, modification and change times.
   */
  private static boolean changedSince(Attr cached, Attr fresh) {
    return cached == null || cached.size() != fresh.size() || cached.mtimeNs() != fresh.mtimeNs()
        || cached.ctimeNs() != fresh.ctimeNs();
  }

  /**
   * For a read-only open of a small file not open here: how many of its first bytes to read while
   * the open asks for fresh attributes, so both round trips overlap (or are one, when the bytes
   * lie in the file's head). The layout of a handle never changes; the size cached (from the lookup
   * that found the file, usually) only says how much to read. Close-to-open holds: the bytes are
   * read after the open began. 0 when not worth it. {@code hint}: the file's cached attributes, or null.
   */
  private int firstLength(Attr hint, int flags) {
    if (hint == null || (flags & (O_ACCMODE | O_TRUNC)) != O_RDONLY || states.containsKey(hint.handle())) {
      return 0;
    }
    int max = config.flow().eagerReadMax();
    if (!hint.isRegular() || hint.size() <= 0 || hint.size() > max || config.client().readAhead() < max) {
      return 0;
    }
    return (int) Math.min(max, (hint.size() + 4095) & ~4095L);
  }

  /** Starts reading the first {@code length} bytes of the file {@code hint} describes (see {@link #firstLength}). */
  private ReadAhead.Window readFirst(Attr hint, int length) {
    counters.increment("read.first");
    return ReadAhead.first(pathOf(hint), hint.layout(), length, alloc);
  }

  /**
   * The open of a small file whose first {@code length} bytes lie in its head: one call to the
   * metadata server brings the fresh attributes and those bytes, which become the file's first
   * read-ahead window when the file ends within them.
   */
  private OpenFile openWithHead(String path, Handle h, Attr hint, int flags, int length) {
    counters.increment("meta.open");
    OpenResp r;
    try {
      r = meta(new OpenReq(h, length));
    } catch (FsException e) {
      Attr a = fresh(relookup(path, h, e));
      if (a.isDir()) {
        throw new FsException(Errno.EISDIR, path);
      }
      return open(a, flags, null, true);
    }
    ReadAhead.Window first = null;
    Attr a;
    try {
      a = r.attr();
      attrs.put(a);
      if (a.isDir()) {
        throw new FsException(Errno.EISDIR, path);
      }
      if (a.isRegular() && a.size() <= length) {
        counters.increment("read.first.head");
        int window = (int) Math.min(length, (a.size() + 4095) & ~4095L);
        ByteBuf bytes = r.payload();
        int have = Math.min(bytes.readableBytes(), window);
        ByteBuf buf;
        if (have > 0 && have == a.size()) { // the whole file: the answer's bytes are the window, not a copy of them
          buf = bytes.retainedSlice(bytes.readerIndex(), have);
          window = have;
        } else {
          buf = PieceAllocator.buffer(alloc, window);
          buf.writeBytes(bytes, bytes.readerIndex(), have);
          buf.writeZero(window - have); // past what was written to the head: zeros up to the size
        }
        first = ReadAhead.Window.of(buf, window);
      }
    } finally {
      r.release();
    }
    return open(a, flags, first, changedSince(hint, a));
  }

  /** Whether an open with these flags may write (and so dirty the kernel's cached pages). */
  private static boolean writable(int flags) {
    return (flags & O_ACCMODE) != O_RDONLY;
  }

  /** An open with attributes the kernel has too (a create's answer carried them). */
  private OpenFile open(Attr a, int flags) {
    return open(a, flags, null, false);
  }

  private OpenFile open(Attr a, int flags, ReadAhead.Window first, boolean attrsChanged) {
    if (!a.isRegular()) {
      if (first != null) {
        first.drop();
      }
      throw new FsException(Errno.ENXIO, "not a regular file");
    }
    FileState st = states.compute(a.handle(), (h, cur) -> {
      FileState s = cur != null ? cur : new FileState(a, pathOf(a), (int) config.client().writeBehind(),
          (int) config.client().readAhead(), config.client().readAround(), timeout, alloc, sender);
      s.opened(a, first, writable(flags));
      return s;
    });
    st.quiesce(); // the kernel may drop its cached pages once the open is answered
    OpenFile f = new OpenFile(ids.incrementAndGet(), st, flags, attrsChanged);
    openFiles.put(f.id(), f);
    counters.increment("open");
    return f;
  }

  /**
   * The whole of {@code f}'s file, when its open (for reading only, not truncating, not direct)
   * brought all its bytes and no other open of it exists here: a view the caller releases; else null.
   */
  public ByteBuf wholeFile(OpenFile f) {
    if ((f.flags() & (O_ACCMODE | O_TRUNC | O_DIRECT)) != O_RDONLY) {
      return null;
    }
    return f.state().whole();
  }

  public OpenFile openFile(long id) {
    OpenFile f = openFiles.get(id);
    if (f == null) {
      throw new FsException(Errno.EBADF, "file handle " + id);
    }
    return f;
  }

  public Attr getattr(OpenFile f) {
    return getattr(f.state().handle);
  }

  public int read(OpenFile f, long offset, int length, ByteBuf dst) {
    return read(f, offset, length, dst, null);
  }

  /**
   * {@link #read(OpenFile, long, int, ByteBuf)}, with a {@code sink} for the pages around a small
   * read that jumps (see {@link FileState#read(long, int, ByteBuf, PageSink)}; null: none).
   */
  public int read(OpenFile f, long offset, int length, ByteBuf dst, PageSink sink) {
    counters.increment("read");
    int n = f.state().read(offset, length, dst, around(f, sink));
    counters.add("read.user-bytes", n);
    return n;
  }

  /**
   * The sink for the pages read around a read of {@code f}: none for an open with {@code
   * O_DIRECT}, whose reads the kernel sends here whatever it caches, so that a 4 KiB direct read
   * reads 4 KiB, not the block around it.
   */
  private static PageSink around(OpenFile f, PageSink sink) {
    return (f.flags() & O_DIRECT) != 0 ? null : sink;
  }

  /**
   * {@link #read(OpenFile, long, int, ByteBuf, PageSink)}, the bytes returned rather than copied
   * into the caller's buffer: views of the read-ahead windows for a sequential read (see {@link
   * FileState#readViews}). The caller releases the buffer.
   */
  public ByteBuf readViews(OpenFile f, long offset, int length, PageSink sink) {
    counters.increment("read");
    ByteBuf b = f.state().readViews(offset, length, around(f, sink));
    counters.add("read.user-bytes", b.readableBytes());
    return b;
  }

  /**
   * Writes {@code src}'s readable bytes at {@code offset}, or, for a file opened with {@link
   * #O_APPEND}, at its end (as Linux's {@code pwrite} does on such a file); {@code src} stays the
   * caller's.
   */
  public void write(OpenFile f, long offset, ByteBuf src) {
    write(f, offset, src, false);
  }

  /**
   * {@link #write(OpenFile, long, ByteBuf)}; with {@code pageCache}, the kernel writing back pages
   * of its cache (a shared mapping), which belong at {@code offset} whatever the open's flags.
   *
   * <p>The kernel's offset for an {@code O_APPEND} write is its own idea of the file's size, which
   * libfuse 2's high-level API keeps per name: through another hard-link name it can lag behind
   * what this client has written, and writing there would overwrite those bytes. The end this
   * client knows is never behind.
   */
  public void write(OpenFile f, long offset, ByteBuf src, boolean pageCache) {
    write(f, offset, src, pageCache, false);
  }

  /**
   * {@link #write(OpenFile, long, ByteBuf, boolean)}; with {@code killSetid}, the write clears
   * set-user-ID, and set-group-ID with group execute: recorded with the size the write makes (at
   * the next flush or close, when its bytes are out too), shown cleared by this client at once.
   */
  public void write(OpenFile f, long offset, ByteBuf src, boolean pageCache, boolean killSetid) {
    counters.increment("write");
    counters.add("write.user-bytes", src.readableBytes());
    boolean kill = killSetid && !pageCache;
    if ((f.flags() & O_APPEND) != 0 && !pageCache) {
      f.state().append(offset, src, now(), kill);
    } else {
      f.state().write(offset, src, now(), kill);
    }
  }

  /**
   * Writes {@code aggregate} bytes of {@code fileReq} tiled from byte {@code displacement} of the
   * file, taking them from {@code mem} laid out by {@code memReq} (null: contiguous from index 0).
   * Noncontiguous data always moves in flows, one per server.
   */
  public void write(OpenFile f, Request fileReq, long displacement, long aggregate, ByteBuf mem, Request memReq) {
    FileState st = f.state();
    synchronized (st) {
      flush(st);
      Await.get(transfer(st.handle, st.layout, fileReq, displacement, aggregate, mem, memReq, true, Long.MAX_VALUE),
          timeout);
      st.grew(Await.get(typedWriteEnd(st.layout, fileReq, displacement, aggregate), timeout), now());
    }
    counters.increment("write.typed");
  }

  /**
   * Reads {@code aggregate} bytes of {@code fileReq} tiled from byte {@code displacement} into
   * {@code mem} laid out by {@code memReq} (null: contiguous); bytes at or past the end of the
   * file are not read. Returns how many bytes were read (a prefix of the request's data).
   */
  public long read(OpenFile f, Request fileReq, long displacement, long aggregate, ByteBuf mem, Request memReq) {
    FileState st = f.state();
    long size;
    synchronized (st) {
      flush(st);
      size = st.size();
    }
    Layout layout = st.layout;
    Distribution dist = Distributions.of(layout.dist());
    long total = 0;
    for (int s = 0; s < layout.serverCount(); s++) {
      total += flows.alloc().fileReq(fileReq).fileReqOffset(displacement).aggregateSize(aggregate)
          .fileData(new FileData(size, s, layout.serverCount(), dist, false)).bytesForServer();
    }
    Await.get(transfer(st.handle, layout, fileReq, displacement, aggregate, mem, memReq, false, size), timeout);
    counters.increment("read.typed");
    return total;
  }

  /**
   * {@link #write(OpenFile, Request, long, long, ByteBuf, Request) write} without waiting: posts the
   * flows (one per server holding some of the data, all at once) and returns. Any number may be in
   * flight, on one file or many, and they complete in any order; each grows the size this client
   * sees for the file as it completes, and {@link #flush}, {@link #fsync} or {@link #release}
   * records it on the metadata server. The future fails with an {@link FsException}. {@code mem}
   * stays the caller's and must not change until the future completes. Callbacks on the future may
   * run on network threads: they must not block.
   */
  public CompletableFuture<Void> writeAsync(OpenFile f, Request fileReq, long displacement, long aggregate, ByteBuf mem,
      Request memReq) {
    FileState st = f.state();
    st.flushWrites(); // this client's buffered POSIX writes reach the servers first
    counters.increment("write.typed-async");
    return transfer(st.handle, st.layout, fileReq, displacement, aggregate, mem, memReq, true, Long.MAX_VALUE)
        .thenCompose(v -> typedWriteEnd(st.layout, fileReq, displacement, aggregate))
        // off the network thread: a blocking typed write holds the state's lock while it waits
        .thenAcceptAsync(size -> st.grew(size, now()));
  }

  /**
   * {@link #read(OpenFile, Request, long, long, ByteBuf, Request) read} without waiting: the future
   * gives how many bytes were read (a prefix of the request's data: the file ends at the size this
   * client sees when the read is posted). Many may be in flight; they complete in any order. {@code
   * mem} stays the caller's and must not be touched until the future completes.
   */
  public CompletableFuture<Long> readAsync(OpenFile f, Request fileReq, long displacement, long aggregate, ByteBuf mem,
      Request memReq) {
    FileState st = f.state();
    st.flushWrites();
    long size = st.size();
    Layout layout = st.layout;
    Distribution dist = Distributions.of(layout.dist());
    long total = 0;
    for (int s = 0; s < layout.serverCount(); s++) {
      total += flows.alloc().fileReq(fileReq).fileReqOffset(displacement).aggregateSize(aggregate)
          .fileData(new FileData(size, s, layout.serverCount(), dist, false)).bytesForServer();
    }
    long read = total;
    counters.increment("read.typed-async");
    return transfer(st.handle, layout, fileReq, displacement, aggregate, mem, memReq, false, size).thenApply(v -> read);
  }

  /** Whether every byte of a file of {@code size} bytes laid out by {@code layout} is in its head. */
  private static boolean withinHead(Layout layout, long size) {
    return size <= layout.headBytes();
  }

  /** The data path of file {@code a}: through its head ({@link HeadDataPath}) if it has one. */
  private DataPath pathOf(Attr a) {
    return a.layout().headBytes() > 0 ? new HeadDataPath(flowPath, a.handle(), peers, counters, leases) : flowPath;
  }

  /** A typed transfer on file {@code h}: {@link FlowDataPath#transfer}, and its head's bytes if it has one. */
  private CompletableFuture<Void> transfer(Handle h, Layout layout, Request fileReq, long displacement, long aggregate,
      ByteBuf mem, Request memReq, boolean write, long fsize) {
    if (layout.headBytes() == 0) {
      return flowPath.transfer(layout, fileReq, displacement, aggregate, mem, memReq, write, fsize);
    }
    return new HeadDataPath(flowPath, h, peers, counters, leases)
        .transfer(layout, fileReq, displacement, aggregate, mem, memReq, write, fsize);
  }

  /**
   * The size a typed write makes the file at least: where a monotone request ends, else what the
   * datafiles hold. Of a file with a head, the request's own bytes in the head count, and datafile
   * bytes below the head's end do not: typed writes of earlier versions left spare copies of head
   * bytes there (a truncate within the head leaves them; no read takes them).
   */
  private CompletableFuture<Long> typedWriteEnd(Layout layout, Request fileReq, long displacement, long aggregate) {
    long end = typedEnd(fileReq, displacement, aggregate);
    if (end >= 0) {
      return CompletableFuture.completedFuture(end);
    }
    long head = layout.headBytes();
    long inHead = 0;
    if (head > 0) {
      for (HeadPieces.Piece p : HeadPieces.of(fileReq, displacement, aggregate, null, head, Long.MAX_VALUE, true)) {
        inHead = Math.max(inHead, p.file() + p.length());
      }
    }
    long headEnd = inHead;
    return datafileSizeAsync(layout).thenApply(s -> Math.max(s > head ? s : 0, headEnd));
  }

  /** One past the last byte a monotone request tiled from {@code displacement} reaches; -1 if not monotone. */
  private static long typedEnd(Request fileReq, long displacement, long aggregate) {
    if (aggregate == 0) {
      return 0;
    }
    boolean tilesInOrder = aggregate <= fileReq.size() || fileReq.trueExtent() <= fileReq.extent();
    if (!fileReq.isMonotone() || !tilesInOrder) {
      return -1;
    }
    org.flowfs.common.request.Segments last = new org.flowfs.common.request.Segments(1);
    org.flowfs.common.request.RequestProcessor.processMemory(
        org.flowfs.common.request.RequestCursor.of(fileReq, displacement, aggregate), 1, last, aggregate - 1, 1);
    return last.offset(0) + 1;
  }

  /** The logical size the datafiles of a layout add up to (asks every server). */
  private CompletableFuture<Long> datafileSizeAsync(Layout layout) {
    Map<Integer, List<Integer>> byServer = new java.util.TreeMap<>();
    for (int i = 0; i < layout.serverCount(); i++) {
      byServer.computeIfAbsent(layout.datafiles().get(i).ioServer(), k -> new ArrayList<>()).add(i);
    }
    long[] sizes = new long[layout.serverCount()];
    List<CompletableFuture<?>> fs = new ArrayList<>();
    byServer.forEach((io, idx) -> fs.add(peers.io(io)
        .call(new SizesReq(idx.stream().map(layout.datafiles()::get).toList()))
        .thenAccept(r -> {
          for (int k = 0; k < idx.size(); k++) {
            sizes[idx.get(k)] = r.sizes()[k];
          }
        })));
    return CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new))
        .thenApply(v -> Distributions.of(layout.dist()).logicalSize(sizes));
  }

  /** Pushes this file's buffered writes and records its size and mtime (close, flush). */
  public void flush(OpenFile f) {
    flush(f.state());
  }

  private void flush(FileState st) {
    flush(st, 0, 0, 0);
  }

  /**
   * Pushes {@code st}'s buffered writes and records the size and mtime they made, in one change
   * with {@code times} (ATIME, MTIME and their _NOW bits, with their values) when there is
   * something to record. Returns the attributes of the last change made, or null if none was.
   */
  private Attr flush(FileState st, int times, long atimeNs, long mtimeNs) {
    // the size and mtime are known before the data is out: record them (on this thread) while the
    // data goes, in parallel (both are done before close returns, as close-to-open needs)
    FileState.Recording r = st.pendingRecording();
    Attr last = null;
    WriteBehind.Taken head = r != null ? st.takeHeadWrites() : null;
    if (r != null && !leases.idle()) {
      Attr shown = times == 0 ? flushLeased(st, r, head) : null;
      if (shown != null) {
        return shown;
      }
      leases.settle(st.handle); // its create goes first, as its own or in the batch out now
    }
    if (head != null) {
      // bytes within the head: they and the size they make go in one call
      counters.increment("path.head.flushes");
      counters.add("path.head.bytes-written", head.data().readableBytes());
      last = meta(new HeadFlushReq(record(st.handle, r, times, atimeNs, mtimeNs), head.offset(), head.data())).attr();
      attrs.put(last);
      st.recorded(r);
    }
    st.sendWrites();
    try {
      if (r != null && head == null) {
        last = meta(record(st.handle, r, times, atimeNs, mtimeNs)).attr();
        attrs.put(last);
        st.recorded(r);
      }
    } finally {
      st.flushWrites();
    }
    FileState.Recording late = st.pendingRecording(); // written while we recorded
    if (late != null && !late.equals(r)) {
      // with the times if the first change did not carry them
      last = meta(r == null ? record(st.handle, late, times, atimeNs, mtimeNs) : record(st.handle, late, 0, 0, 0)).attr();
      attrs.put(last);
      st.recorded(late);
    }
    return last;
  }

  /**
   * The flush of a file made under a lease whose create was not sent yet: what it records ({@code
   * r}, may be null) and its head bytes ({@code head}, may be null) go with the create, in a batch
   * ({@link DirLeases#absorb}). Returns the attributes this client shows now, or null when the file
   * is recorded as usual (not one waiting in a lease, or its close went already).
   */
  private Attr flushLeased(FileState st, FileState.Recording r, WriteBehind.Taken head) {
    Attr base = attrs.get(st.handle);
    if (base == null) {
      return null;
    }
    if (r != null) {
      if (head == null) {
        st.sendWrites(); // bytes past the head go to their datafiles, which exist already
      }
      try {
        st.flushWrites(); // and what of them is on its way already (see takeHeadWrites)
      } catch (RuntimeException e) {
        if (head != null) {
          head.data().release();
        }
        throw e;
      }
    }
    Attr shown = st.overlay(base);
    SetattrReq rec = r == null ? null : record(st.handle, r, 0, 0, 0);
    if (!leases.absorb(st.handle, rec, head == null ? 0 : head.offset(), head == null ? null : head.data())) {
      return null;
    }
    if (r != null) {
      st.recorded(r);
    }
    attrs.put(shown);
    counters.increment(head != null ? "path.head.leased" : "lease.closes-without-head");
    return shown;
  }

  /**
   * The change recording {@code r}, with its deferred attribute changes and {@code times}; the
   * writes' mtime unless a time set replaces it.
   */
  private static SetattrReq record(Handle h, FileState.Recording r, int times, long atimeNs, long mtimeNs) {
    DeferredAttrs d = r.deferred() != null ? r.deferred() : DeferredAttrs.NONE;
    return d.record(h, r.size(), r.killSetid(), times, atimeNs, mtimeNs, r.mtimeNs());
  }

  /** {@link #flush} and make the data durable on every I/O server of the file. */
  public void fsync(OpenFile f, boolean dataOnly) {
    flush(f.state());
    leases.settle(f.state().handle);
    Layout layout = f.state().layout;
    List<CompletableFuture<?>> fs = new ArrayList<>();
    if (!withinHead(layout, f.state().size())) { // else all its bytes are the metadata server's
      for (Handle d : layout.datafiles()) {
        fs.add(peers.io(d.ioServer()).call(new SyncReq(d, dataOnly)));
      }
    }
    MetaSyncReq metaSync = new MetaSyncReq();
    var metaSynced = peers.meta().call(metaSync); // its size and times too
    Await.get(CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)), timeout);
    awaitMeta(metaSynced, metaSync);
    counters.increment("fsync");
  }

  /** Makes the namespace changes this client saw acknowledged durable (fsyncdir, syncfs). */
  public void syncMetadata() {
    leases.endAll();
    meta(new MetaSyncReq());
  }

  /**
   * The last close of an open file: flushes, then forgets the open. The kernel sends it after
   * {@code close} returned, so a {@code chmod} right after a {@code close} may come while it
   * runs: a change deferred ({@link #deferred}) after the flush and before the last open is
   * gone is recorded here, with a flush of its own; from then on no change of the file waits.
   */
  public void release(OpenFile f) {
    if (openFiles.remove(f.id()) == null) {
      return;
    }
    locks.released(f.id());
    FileState st = f.state();
    try {
      flush(st);
    } finally {
      st.quiesce();
      boolean last = states.computeIfPresent(st.handle, (k, s) -> s.closed(writable(f.flags())) ? null : s) == null;
      try {
        if (last && st.hasDeferred()) {
          counters.increment("setattr.deferred-at-release");
          flush(st);
        }
      } finally {
        if (last && !leases.idle()) {
          leases.released(st.handle); // no open of it left here: a create not sent yet goes soon, whole
        }
      }
    }
  }

  // ---- flock and record locks -----------------------------------------------------------------

  /**
   * {@code flock(2)} on the open regular file {@code open} (its FUSE file handle) for {@code owner}
   * (the kernel's id of the open file description): {@code op} {@link FlockReq#SHARED}, {@link
   * FlockReq#EXCLUSIVE} or {@link FlockReq#UNLOCK}, held on the metadata server against every
   * client ({@link Locks}) and released with that open at the latest; with {@code wait}, until
   * another owner's lock lets it or {@code interrupted} says so.
   *
   * @throws FsException EAGAIN when another owner's lock conflicts and not {@code wait}; EINTR;
   *     ENOLCK when too many calls wait on this client already
   */
  public void flock(long open, long owner, int op, boolean wait, java.util.function.BooleanSupplier interrupted) {
    locks.lock(open, openFile(open).state().handle, owner, op, wait, interrupted);
  }

  /**
   * A POSIX record lock ({@code fcntl(2)}'s {@code F_SETLK}/{@code F_SETLKW}) on bytes {@code
   * [start, end]} of the open regular file {@code open} for {@code owner} (the kernel's lock
   * owner) and process {@code pid}: {@code type} {@link org.flowfs.common.RecordLocks#READ},
   * {@code WRITE} or {@code UNLOCK}, held on the metadata server against every client ({@link
   * Locks}); released by the owner's unlock (at any of its closes of the file) or with that open.
   * A grant revalidates the file (its size, and no bytes read ahead are kept), and an unlock pushes
   * the file's buffered writes first: coherence at lock boundaries, as NFS gives. Returns, for a
   * grant, the file's size when it grew past what this client knew (the kernel's size of it must
   * grow too), else -1. Errors as {@link #flock}.
   */
  public long recordLock(long open, long owner, int type, long start, long end, int pid, boolean wait,
      java.util.function.BooleanSupplier interrupted) {
    FileState st = openFile(open).state();
    if (type == org.flowfs.common.RecordLocks.UNLOCK) {
      if (locks.holdsRecord(st.handle, owner)) {
        flush(st); // what was written under the lock is out before another can take it
      }
      locks.recordLock(open, st.handle, owner, type, start, end, pid, wait, interrupted);
      return -1;
    }
    locks.recordLock(open, st.handle, owner, type, start, end, pid, wait, interrupted);
    return st.revalidated(fresh(st.handle)); // and what another client wrote under its lock shows here
  }

  /**
   * {@code F_GETLK}: the first record lock of another owner, on any client, that a lock of {@code
   * type} on bytes {@code [start, end]} of the open file {@code open} by {@code owner} would wait
   * for; type {@code UNLOCK} when none would.
   */
  public MetaOp.RecordLockResp testRecordLock(long open, long owner, int type, long start, long end) {
    return locks.testRecordLock(openFile(open).state().handle, owner, type, start, end);
  }

  /** Whether this client holds a record lock on any file (then every close of a file must reach it). */
  public boolean holdsRecordLocks() {
    return locks.holdsRecordLocks();
  }

  // ---- extended attributes --------------------------------------------------------------------

  public void setxattr(String path, String name, byte[] value, int flags) {
    setxattr(path, name, value, flags, Caller.ROOT);
  }

  /**
   * Sets extended attribute {@code name} of {@code path} for {@code c}. An access ACL ({@link
   * PosixAcl#ACCESS}) sets the mode's permission bits on the metadata server, so changes of them
   * deferred here go first; it clears set-group-ID when {@code c} is neither in the file's group
   * nor root, as Linux does.
   */
  public void setxattr(String path, String name, byte[] value, int flags, Caller c) {
    if (name.equals(DirStripe.XATTR)) {
      value = checkStripe(path, value);
    } else if (name.startsWith(VIRTUAL_XATTR_PREFIX)) {
      throw new FsException(Errno.EPERM, name + " is computed, not stored");
    }
    Handle h = resolve(path);
    if (name.equals(PosixAcl.ACCESS)) {
      FileState st = states.get(h);
      if (st != null && st.hasDeferred()) {
        flush(st);
      }
      Attr a = getattr(h);
      if ((a.mode() & Attr.S_ISGID) != 0 && c.uid() != 0 && !OpenAccess.inGroup(c, a.gid())) {
        flags |= SetxattrReq.KILL_SGID;
      }
    }
    xattrsChanging(h);
    byte[] v = value;
    // sent again after a lost answer: EEXIST (XATTR_CREATE) with the value set is the lost try's
    doneOnce(new SetxattrReq(h, name, v, flags), e -> e.errno() == Errno.EEXIST && holds(h, name, v));
    attrs.invalidate(h); // its ctime moved
  }

  /** The access ACL of {@code h}; null when it has none (or one that does not parse, which no setxattr stores). */
  private PosixAcl accessAcl(Handle h) {
    try {
      return PosixAcl.parse(getxattr(h, PosixAcl.ACCESS));
    } catch (FsException e) {
      return null;
    }
  }

  /** Whether {@code h}'s extended attribute {@code name} holds {@code value} now, as the server says. */
  private boolean holds(Handle h, String name, byte[] value) {
    try {
      return java.util.Arrays.equals(value, meta(new GetxattrReq(h, name)).value());
    } catch (FsException e) {
      return false;
    }
  }

  /**
   * A directory's default layout ({@code flowfs.stripe}, see {@link DirStripe}), checked and
   * normalized for storing: the metadata server applies it to files created in the directory
   * afterwards.
   */
  private byte[] checkStripe(String path, byte[] value) {
    DirStripe s = DirStripe.parse(value).checkServers(peers.ioCount());
    if (!getattr(resolve(path)).isDir()) {
      throw new FsException(Errno.ENOTDIR, DirStripe.XATTR + " is set on directories");
    }
    return s.bytes();
  }

  /**
   * An extended attribute. Names under {@value #VIRTUAL_XATTR_PREFIX} are computed by the client,
   * never stored: {@code flowfs.layout} (a file's distribution and datafiles) and {@code
   * flowfs.stats} (this client's counters), both JSON; {@code flowfs.stripe}, a directory's
   * default layout, is stored (see {@link #setxattr}).
   */
  public byte[] getxattr(String path, String name) {
    if (name.startsWith(VIRTUAL_XATTR_PREFIX) && !name.equals(DirStripe.XATTR)) {
      return virtualXattr(path, name).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }
    return getxattr(resolve(path), name);
  }

  /** Extended attribute {@code name} (not a virtual one) of the object {@code h}; ENODATA if it has none. */
  public byte[] getxattr(Handle h, String name) {
    if (xattrKnownAbsent(h, name)) {
      throw new FsException(Errno.ENODATA, name);
    }
    try {
      return meta(new GetxattrReq(h, name)).value();
    } catch (FsException e) {
      if (e.errno() == Errno.ENODATA) {
        absentXattrs.put(new XattrKey(h, name), Boolean.TRUE);
      }
      throw e;
    }
  }

  /**
   * Whether this client knows, within the attribute timeout, that the object {@code h} has no
   * extended attribute {@code name} (its listing said it has none, or the server said so of this
   * name): what {@link #getxattr(Handle, String)} answers with ENODATA without asking.
   */
  public boolean xattrKnownAbsent(Handle h, String name) {
    return noXattrs.getIfPresent(h) != null || absentXattrs.getIfPresent(new XattrKey(h, name)) != null;
  }

  /** Forgets what this client knows of an object's extended attributes: it is changing them. */
  private void xattrsChanging(Handle h) {
    noXattrs.invalidate(h);
    absentXattrs.asMap().keySet().removeIf(k -> k.handle().equals(h));
  }

  public static final String VIRTUAL_XATTR_PREFIX = "flowfs.";

  private String virtualXattr(String path, String name) {
    switch (name) {
      case "flowfs.layout": {
        Attr a = getattr(path);
        if (a.layout() == null) {
          throw new FsException(Errno.ENODATA, "only regular files have a layout");
        }
        return Json.layout(a.layout());
      }
      case "flowfs.stats":
        return Json.counters(counters.snapshot());
      default:
        throw new FsException(Errno.ENODATA, name);
    }
  }

  public List<String> listxattr(String path) {
    Handle h = resolve(path);
    if (noXattrs.getIfPresent(h) != null) {
      return List.of();
    }
    return meta(new ListxattrReq(h)).names();
  }

  public void removexattr(String path, String name) {
    Handle h = resolve(path);
    xattrsChanging(h);
    doneOnce(new RemovexattrReq(h, name), e -> e.errno() == Errno.ENODATA); // sent again: gone already
    attrs.invalidate(h); // its ctime moved
  }

  // ---- servers --------------------------------------------------------------------------------

  /** Asks the metadata server who it is; EIO (with its address) when it does not answer. */
  public org.flowfs.common.wire.CommonOp.PingResp ping() {
    return metaOnce(new org.flowfs.common.wire.CommonOp.PingReq(System.nanoTime()));
  }

  // ---- capacity -------------------------------------------------------------------------------

  public FsStat statfs() {
    List<CompletableFuture<IoStatfsResp>> fs = new ArrayList<>();
    for (int i = 0; i < peers.ioCount(); i++) {
      fs.add(peers.io(i).call(new IoStatfsReq()));
    }
    leases.settleAll(); // the objects this client made and removed count
    MetaStatfsResp m = meta(new MetaStatfsReq());
    List<StorageSpace> spaces = new ArrayList<>();
    spaces.add(m.space());
    for (CompletableFuture<IoStatfsResp> f : fs) {
      spaces.add(Await.get(f, timeout).space());
    }
    StorageSpace all = StorageSpace.sum(spaces);
    long freeFiles = 1L << 32;
    return new FsStat(all.total(), all.free(), all.available(), m.objects() + freeFiles, freeFiles, peers.ioCount());
  }

  @Override
  public void close() {
    for (OpenFile f : List.copyOf(openFiles.values())) {
      try {
        release(f);
      } catch (FsException e) {
        // the servers are going away: nothing more to do with this file
      }
    }
    leases.close(); // every file made under a lease goes to the metadata server
    locks.close(); // other clients need not wait for the server to drop this one's locks
    sender.shutdown(); // what it was given is set up: every file was flushed above
    flows.close();
    peers.close();
  }
}
