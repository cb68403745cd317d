package org.flowfs.client.api;

import io.netty.buffer.ByteBuf;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.common.Attr;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Layout;
import org.flowfs.common.dist.Distributions;
import org.flowfs.common.dist.SimpleStripe;
import org.flowfs.common.request.Request;

/**
 * An open file of the typed API (MPI's {@code MPI_File}; seed 004's file handle), from {@link
 * FlowIo#open}. Data is accessed through a {@link View}: offsets and positions count etypes of the
 * view's data stream, buffers are {@link Memory} (any memory datatype), values are converted by
 * the view's datarep.
 *
 * <p>Every access is one typed transfer of the client: the view's pattern, whatever its shape,
 * becomes one request and moves in one flow per I/O server holding some of it, all at once, never
 * in one round trip per piece. A converting datarep splits a transfer into chunks of the
 * conversion buffer ({@value Hints#DATAREP_BUFFER_SIZE}), each one such transfer; data sieving
 * ({@value Hints#DS_READ}, off by default) reads contiguous windows instead.
 *
 * <p>Operations:
 *
 * <ul>
 *   <li>explicit offsets: {@link #readAt}, {@link #writeAt} and their {@code Async} forms;
 *   <li>the individual file pointer: {@link #read}, {@link #write}, {@link #seek}, {@link
 *       #position}, {@link #byteOffset}; an operation moves the pointer when it starts, by the
 *       etypes it asks for, so asynchronous ones may be issued back to back;
 *   <li>atomic seek-and-access ({@link #seekRead}, {@link #seekWrite}; seed 004's {@code
 *       MPI_FSEEKREAD}): optionally a new view, the seek and the transfer as one operation that no
 *       other operation on this handle can split;
 *   <li>collective two-phase access with the group the file was opened by: {@link #readAtAll},
 *       {@link #writeAtAll}, {@link #readAll}, {@link #writeAll};
 *   <li>{@link #size}, {@link #setSize}, {@link #preallocate}, {@link #sync}, {@link #close}.
 * </ul>
 *
 * Reads and writes return the data bytes moved in memory (a read stops at the end of the file:
 * whole values only). Asynchronous operations may be in flight in any number and complete in any
 * order; their futures fail with the exception the blocking form would throw. Consistency is
 * MPI's non-atomic mode over the client's close-to-open model: an access sees this client's
 * completed writes; {@link #sync} makes them durable and visible to clients that open the file
 * afterwards. Failures are {@link FsException}s with an errno ({@code EBADF} for an access the
 * mode forbids or a closed file); misuse (a memory datatype that is not a whole number of etypes,
 * a negative offset) is an {@link IllegalArgumentException}.
 *
 * <p>Thread safe: any number of threads may use one handle. The blocking forms block the caller;
 * completion callbacks of the asynchronous forms may run on network threads and must not block.
 */
public final class FlowFile implements AutoCloseable {
  private final FlowIo io;
  private final FileSystemClient client;
  private final OpenFile file;
  private final String path;
  private final Set<AccessMode> mode;
  private final Group group;
  private final Map<String, String> ignored;
  private final Map<String, String> striping;
  private final long stripSize;
  private final int servers;
  private final Set<CompletableFuture<?>> pending = ConcurrentHashMap.newKeySet();
  private final boolean created;

  // guarded by this
  private Tuning tuning;
  private ViewState view;
  private long pointer;
  private boolean closed;

  FlowFile(FlowIo io, OpenFile file, String path, Set<AccessMode> mode, Group group, Tuning tuning, boolean created) {
    this.created = created;
    this.io = io;
    this.client = io.client();
    this.file = file;
    this.path = path;
    this.mode = Collections.unmodifiableSet(EnumSet.copyOf(mode));
    this.group = group;
    this.tuning = tuning;
    this.ignored = Collections.unmodifiableMap(new LinkedHashMap<>(tuning.ignored));
    Layout layout = client.getattr(file).layout();
    this.servers = layout.serverCount();
    this.stripSize = Distributions.of(layout.dist()) instanceof SimpleStripe s ? s.stripSize() : 0;
    Map<String, String> st = new LinkedHashMap<>();
    st.put(Hints.STRIPING_FACTOR, Integer.toString(servers));
    if (stripSize > 0) {
      st.put(Hints.STRIPING_UNIT, Long.toString(stripSize));
    }
    this.striping = Collections.unmodifiableMap(st);
    this.view = new ViewState(View.BYTES, io.datareps().get(View.BYTES.datarep()));
    this.pointer = mode.contains(AccessMode.APPEND) ? view.endPosition(size()) : 0;
  }

  OpenFile openFile() {
    return file;
  }

  /** Whether this open created the file. */
  boolean created() {
    return created;
  }

  /** The path the file was opened by. */
  public String path() {
    return path;
  }

  /** The access mode it was opened with. */
  public Set<AccessMode> mode() {
    return mode;
  }

  /** The group it was opened by ({@link Group#self()} for an independent open). */
  public Group group() {
    return group;
  }

  // ---- hints -----------------------------------------------------------------------------------

  /** The hints in effect: the striping of the file and the values of every other known hint. */
  public synchronized Hints hints() {
    Map<String, String> m = new LinkedHashMap<>(striping);
    m.putAll(tuning.effective(aggregators(tuning)));
    return Hints.of(m);
  }

  /** The hints given at open that were ignored, each with the reason (unknown, bad value, ...). */
  public Map<String, String> ignoredHints() {
    return ignored;
  }

  /**
   * Changes the runtime hints (buffer sizes, aggregators; MPI's {@code MPI_File_set_info}); returns
   * the ones ignored, with reasons. Striping hints are ignored: the layout is fixed.
   */
  public synchronized Map<String, String> setHints(Hints hints) {
    Tuning t = tuning.runtimeCopy();
    t.apply(hints, false, servers);
    tuning = t;
    return Collections.unmodifiableMap(t.ignored);
  }

  private int aggregators(Tuning t) {
    int n = t.cbNodes > 0 ? t.cbNodes : servers;
    return Math.max(1, Math.min(n, group.size()));
  }

  // ---- the view --------------------------------------------------------------------------------

  /** The current view ({@link View#BYTES} after open). */
  public synchronized View view() {
    return view.view;
  }

  /**
   * Sets the view; the individual file pointer goes to its start (to its end of file with {@link
   * AccessMode#APPEND}). Operations already started keep the view they started with.
   *
   * @throws IllegalArgumentException if the datarep is unknown to this client's registry, or the
   *     filetype does not tile in the datarep's file extents
   */
  public synchronized void setView(View v) {
    ensureOpen();
    view = new ViewState(v, io.datareps().get(v.datarep()));
    pointer = mode.contains(AccessMode.APPEND) ? view.endPosition(size()) : 0;
  }

  // ---- positions -------------------------------------------------------------------------------

  /** The individual file pointer, in etypes of the view. */
  public synchronized long position() {
    return pointer;
  }

  /**
   * Moves the individual file pointer to {@code offset} etypes from the start of the view, the
   * pointer or the end of the file; returns the new position.
   *
   * @throws IllegalArgumentException if the position would be negative
   */
  public synchronized long seek(long offset, Whence whence) {
    ensureOpen();
    pointer = target(offset, whence);
    return pointer;
  }

  private long target(long offset, Whence whence) {
    long base = switch (whence) {
      case SET -> 0;
      case CUR -> pointer;
      case END -> view.endPosition(size());
    };
    long p = Math.addExact(base, offset);
    if (p < 0) {
      throw new IllegalArgumentException("seek to negative position " + p);
    }
    return p;
  }

  /** The absolute byte offset in the file of etype position {@code position} of the view. */
  public synchronized long byteOffset(long position) {
    if (position < 0) {
      throw new IllegalArgumentException("negative position " + position);
    }
    return view.fileOffset(Math.multiplyExact(position, view.etypeBytes));
  }

  // ---- explicit offsets ------------------------------------------------------------------------

  /** Reads {@code mem} from etype {@code offset} of the view; returns the memory bytes filled. */
  public long readAt(long offset, Memory mem) {
    return Futures.join(start(current(), offset, mem, false, false));
  }

  /** Writes {@code mem} at etype {@code offset} of the view; returns the memory bytes written. */
  public long writeAt(long offset, Memory mem) {
    return Futures.join(start(current(), offset, mem, true, false));
  }

  /** {@link #readAt} without waiting. */
  public CompletableFuture<Long> readAtAsync(long offset, Memory mem) {
    return start(current(), offset, mem, false, true);
  }

  /** {@link #writeAt} without waiting. */
  public CompletableFuture<Long> writeAtAsync(long offset, Memory mem) {
    return start(current(), offset, mem, true, true);
  }

  // ---- the individual file pointer -------------------------------------------------------------

  /** Reads {@code mem} at the individual file pointer, moving it past what it asks for. */
  public long read(Memory mem) {
    Access a = reserve(null, 0, null, mem);
    return Futures.join(start(a.view, a.offset, mem, false, false));
  }

  /** Writes {@code mem} at the individual file pointer, moving it past. */
  public long write(Memory mem) {
    Access a = reserve(null, 0, null, mem);
    return Futures.join(start(a.view, a.offset, mem, true, false));
  }

  /** {@link #read} without waiting; the pointer moves at once. */
  public CompletableFuture<Long> readAsync(Memory mem) {
    Access a = reserve(null, 0, null, mem);
    return start(a.view, a.offset, mem, false, true);
  }

  /** {@link #write} without waiting; the pointer moves at once. */
  public CompletableFuture<Long> writeAsync(Memory mem) {
    Access a = reserve(null, 0, null, mem);
    return start(a.view, a.offset, mem, true, true);
  }

  // ---- atomic seek-and-access ------------------------------------------------------------------

  /** Seeks and reads as one operation: {@link #seekRead(View, long, Whence, Memory)} keeping the view. */
  public long seekRead(long offset, Whence whence, Memory mem) {
    return seekRead(null, offset, whence, mem);
  }

  /** Seeks and writes as one operation, keeping the view. */
  public long seekWrite(long offset, Whence whence, Memory mem) {
    return seekWrite(null, offset, whence, mem);
  }

  /**
   * Sets {@code view} (if not null), seeks, and reads at the new pointer, moving it past, as one
   * operation (seed 004's {@code MPI_FSEEKREAD}: a layout, a seek and a read together): no other
   * operation on this handle sees or moves the pointer in between.
   */
  public long seekRead(View view, long offset, Whence whence, Memory mem) {
    Access a = reserve(view, offset, whence, mem);
    return Futures.join(start(a.view, a.offset, mem, false, false));
  }

  /** Sets {@code view} (if not null), seeks and writes, as one operation ({@code MPI_FSEEKWRITE}). */
  public long seekWrite(View view, long offset, Whence whence, Memory mem) {
    Access a = reserve(view, offset, whence, mem);
    return Futures.join(start(a.view, a.offset, mem, true, false));
  }

  /** {@link #seekRead(View, long, Whence, Memory)} without waiting for the data. */
  public CompletableFuture<Long> seekReadAsync(View view, long offset, Whence whence, Memory mem) {
    Access a = reserve(view, offset, whence, mem);
    return start(a.view, a.offset, mem, false, true);
  }

  /** {@link #seekWrite(View, long, Whence, Memory)} without waiting for the data. */
  public CompletableFuture<Long> seekWriteAsync(View view, long offset, Whence whence, Memory mem) {
    Access a = reserve(view, offset, whence, mem);
    return start(a.view, a.offset, mem, true, true);
  }

  /** Where an access goes: the view it uses and its etype offset there. */
  private record Access(ViewState view, long offset) {}

  /** Under the lock: an optional new view, an optional seek, and the pointer moved past {@code mem}. */
  private synchronized Access reserve(View v, long offset, Whence whence, Memory mem) {
    ensureOpen();
    if (v != null) {
      setView(v);
    }
    if (whence != null) {
      pointer = target(offset, whence);
    }
    long at = pointer;
    pointer = Math.addExact(pointer, view.fileBytes(mem) / view.etypeBytes);
    return new Access(view, at);
  }

  private synchronized ViewState current() {
    ensureOpen();
    return view;
  }

  // ---- collective ------------------------------------------------------------------------------

  /**
   * Collective write at etype {@code offset} of the view: every member of the file's group calls
   * it (with its own offset and memory); aggregators gather everyone's pieces and write their file
   * domains in large contiguous flows (two-phase I/O). Returns this member's memory bytes.
   */
  public long writeAtAll(long offset, Memory mem) {
    checkAccess(true);
    return TwoPhase.write(call(current(), offset, mem));
  }

  /** Collective read at etype {@code offset} of the view (two-phase I/O); returns the memory bytes filled. */
  public long readAtAll(long offset, Memory mem) {
    checkAccess(false);
    return TwoPhase.read(call(current(), offset, mem));
  }

  /** Collective write at the individual file pointer, moving it past. */
  public long writeAll(Memory mem) {
    checkAccess(true);
    Access a = reserve(null, 0, null, mem);
    return TwoPhase.write(call(a.view, a.offset, mem));
  }

  /** Collective read at the individual file pointer, moving it past. */
  public long readAll(Memory mem) {
    checkAccess(false);
    Access a = reserve(null, 0, null, mem);
    return TwoPhase.read(call(a.view, a.offset, mem));
  }

  private TwoPhase.Call call(ViewState v, long offset, Memory mem) {
    if (offset < 0) {
      throw new IllegalArgumentException("negative offset " + offset);
    }
    Tuning t;
    synchronized (this) {
      t = tuning;
    }
    return new TwoPhase.Call(client, file, group, v, Math.multiplyExact(offset, v.etypeBytes), mem, t.cbBuffer,
        aggregators(t), stripSize, io.alloc());
  }

  // ---- the transfer ----------------------------------------------------------------------------

  private void checkAccess(boolean write) {
    if (write && mode.contains(AccessMode.READ_ONLY)) {
      throw new FsException(Errno.EBADF, path + " is open read-only");
    }
    if (!write && mode.contains(AccessMode.WRITE_ONLY)) {
      throw new FsException(Errno.EBADF, path + " is open write-only");
    }
  }

  /**
   * Starts one access: without conversion one typed transfer of the client; with conversion the
   * chunk loop, and with data sieving the window loop (up to 1 GiB), each on the caller's thread
   * or ({@code async}) on the API's executor. The pending set tracks it until it completes.
   */
  private CompletableFuture<Long> start(ViewState v, long offset, Memory mem, boolean write, boolean async) {
    checkAccess(write);
    if (offset < 0) {
      throw new IllegalArgumentException("negative offset " + offset);
    }
    if (!write && !mem.writable()) {
      throw new IllegalArgumentException("cannot read into a read-only buffer");
    }
    long bytes = v.fileBytes(mem);
    long at = Math.multiplyExact(offset, v.etypeBytes);
    if (bytes == 0) {
      return CompletableFuture.completedFuture(0L);
    }
    Tuning t;
    synchronized (this) {
      t = tuning;
    }
    CompletableFuture<Long> f;
    if (!write && t.dsRead && !v.fileType.isContiguous() && bytes <= Tuning.MAX_BUFFER) {
      f = run(async, () -> sieved(v, at, bytes, mem, t.indRdBuffer));
    } else if (!v.converts(write)) {
      Slices.Placed p = v.slice(at, bytes);
      f = write
          ? client.writeAsync(file, p.request(), p.displacement(), bytes, mem.flowBuffer(), mem.flowRequest())
              .thenApply(x -> bytes)
          : client.readAsync(file, p.request(), p.displacement(), bytes, mem.flowBuffer(), mem.flowRequest());
    } else {
      f = run(async, () -> write
          ? Conversions.write(client, file, v, at, mem, t.datarepBuffer, io.alloc())
          : Conversions.read(client, file, v, at, mem, t.datarepBuffer, io.alloc()));
    }
    pending.add(f);
    f.whenComplete((x, e) -> pending.remove(f));
    return f;
  }

  /** Runs a blocking transfer here, or ({@code async}) on the API's executor. */
  private CompletableFuture<Long> run(boolean async, java.util.function.Supplier<Long> transfer) {
    return async ? CompletableFuture.supplyAsync(transfer, io.executor()) : CompletableFuture.completedFuture(transfer.get());
  }

  /** A read by data sieving: the stream in file form, then into memory. */
  private long sieved(ViewState v, long at, long bytes, Memory mem, long window) {
    ByteBuf stream = io.alloc().directBuffer(Math.toIntExact(bytes), Math.toIntExact(bytes));
    try {
      long got = Sieve.read(client, file, v, at, bytes, stream, window, io.alloc());
      return Streams.unpack(v, mem, stream, got);
    } finally {
      stream.release();
    }
  }

  /** Waits for every access started before (failures are the starter's to see). */
  private void awaitPending() {
    for (CompletableFuture<?> f : List.copyOf(pending)) {
      f.exceptionally(e -> null).join();
    }
  }

  // ---- size and durability ---------------------------------------------------------------------

  /** The size of the file in bytes, with this client's completed writes. */
  public long size() {
    Attr a = client.getattr(file);
    return a.size();
  }

  /** Truncates or extends the file to {@code bytes} (after the accesses started before). */
  public void setSize(long bytes) {
    checkAccess(true);
    current();
    awaitPending();
    client.truncate(file, bytes);
  }

  /**
   * Makes sure the first {@code bytes} bytes of the file have storage ({@code
   * MPI_File_preallocate}): the I/O servers reserve it ({@code fallocate}), what lies past the end
   * then reads as zeros, what exists is left alone; never shrinks the file. Where the servers'
   * file systems cannot reserve (ENOTSUP), the part past the end is written with zeros instead.
   */
  public void preallocate(long bytes) {
    checkAccess(true);
    current();
    awaitPending();
    if (bytes <= 0) {
      return;
    }
    try {
      client.allocate(file, 0, 0, bytes, false);
    } catch (FsException e) {
      if (e.errno() != Errno.ENOTSUP) {
        throw e;
      }
      writeZeros(size(), bytes);
    }
  }

  /** Writes zeros over {@code [from, to)} through flows. */
  private void writeZeros(long from, long to) {
    if (to <= from) {
      return;
    }
    int chunk = (int) Math.min(to - from, 8L << 20);
    ByteBuf zeros = io.alloc().directBuffer(chunk, chunk);
    try {
      zeros.setZero(0, chunk);
      for (long at = from; at < to; at += chunk) {
        int n = (int) Math.min(chunk, to - at);
        Futures.join(client.writeAsync(file, Request.bytes(n), at, n, zeros, null));
      }
    } finally {
      zeros.release();
    }
  }

  /** Waits for the writes started before, then makes the file's data durable on every I/O server. */
  public void sync() {
    current();
    awaitPending();
    client.fsync(file, false);
  }

  // ---- closing ---------------------------------------------------------------------------------

  private synchronized void ensureOpen() {
    if (closed) {
      throw new FsException(Errno.EBADF, path + " is closed");
    }
  }

  /**
   * Waits for the accesses in flight, closes the file (collectively, for a group), and deletes it
   * with {@link AccessMode#DELETE_ON_CLOSE} (once, after every member closed). Idempotent.
   */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    awaitPending();
    try {
      client.release(file);
    } finally {
      if (group.size() > 1) {
        group.barrier();
      }
      if (mode.contains(AccessMode.DELETE_ON_CLOSE) && group.rank() == 0) {
        try {
          client.unlink(path);
        } catch (FsException e) {
          if (e.errno() != Errno.ENOENT) {
            throw e;
          }
        }
      }
    }
  }

  @Override
  public String toString() {
    return "FlowFile(" + path + ", " + mode + ")";
  }
}
