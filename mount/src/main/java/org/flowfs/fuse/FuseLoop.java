package org.flowfs.fuse;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.Out;
import jnr.ffi.byref.IntByReference;
import jnr.ffi.byref.PointerByReference;
import jnr.ffi.types.size_t;
import org.flowfs.common.ServiceCpus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import ru.serce.jnrfuse.struct.FuseOperations;

/**
 * libfuse 2's request loop, run on Java threads. libfuse's own multithreaded loop calls back into
 * Java from its own native threads, and jffi attaches each such thread to the JVM before every
 * callback and detaches it after: every FUSE request then runs on a brand-new Java thread, with
 * cold thread-local caches (Netty's buffer pools among them). Here a fixed set of long-lived
 * Java threads ({@code fuse-N}) each read requests from the kernel ({@code
 * fuse_session_receive_buf}) and process them ({@code fuse_session_process_buf}), exactly as
 * libfuse's worker threads do; callbacks run on these threads, attached once. At most {@link
 * #READERS} of the idle ones wait on the kernel, the others park ({@link ReaderGate}).
 *
 * <p>Requests of up to {@link #MAX_REQUEST} bytes: libfuse 2 knows nothing of the kernel's {@code
 * FUSE_MAX_PAGES} (protocol 7.28), so without help every read and write is at most 32 pages (128
 * KiB), and a {@code dd bs=1M} is eight round trips through the kernel, each a wake-up of a FUSE
 * thread and of the writer. The loop lets libfuse answer the kernel's INIT as always, on a channel
 * of its own ({@link InitChannel}) whose buffer size makes libfuse offer {@code max_write} of
 * {@link #MAX_REQUEST}, and adds {@code FUSE_MAX_PAGES} with the page count to the answer when the
 * kernel offered it (libfuse 3 does the same on its own). Every worker reads into a buffer that
 * large, as the kernel then requires. An OPEN for reading only is answered on another channel of
 * the loop's ({@link NoFlushChannel}), which spares its close a FLUSH, and keeps the pages {@link
 * OpenStore} stored for it; every request is shown to the {@link OpenStore} first, which learns
 * from them which nodes the kernel may hold pages of. libfuse 2 has no READDIRPLUS: {@link
 * ReaddirPlus} makes its answer from READDIRs and LOOKUPs it has libfuse process on this thread.
 *
 * <p><b>Priority.</b> Applications wait on the workers; the mount's other threads (write-behind,
 * read-ahead, the network) and servers on the same machine do bulk work nobody waits on at that
 * moment. With {@code client.fuse-nice} below 0 each worker raises its own priority ({@link
 * WorkerPriority}) so that the scheduler runs it first when a request arrives: small random writes
 * next to bulk traffic wait less (fio's 4 KiB psync writes: 99th percentile 191-204 us against
 * 241-285 at nice -10, bench/run --groups rand). A chain of requests pays for it: the worker no
 * longer yields its processor to the application it just answered, which then wakes on the other
 * one (ls -l of 10,000 entries 7,400-9,000 entries/s against 12,600-13,400). So 0 is the default.
 *
 * <p>The loop ends when the file system is unmounted (the kernel's read fails with ENODEV);
 * then {@code fuse_teardown} releases libfuse's state.
 */
public final class FuseLoop {
  private static final Logger LOG = LoggerFactory.getLogger(FuseLoop.class);
  private static final int EINTR = 4;
  /** struct fuse_buf (fuse_common.h): size_t size; int flags; void *mem; int fd; off_t pos. */
  private static final int FUSE_BUF_SIZE = 40;
  /** The largest read or write the kernel sends (its default limit of pages per request, 256). */
  public static final int MAX_REQUEST = 1 << 20;
  /** Room for a request's headers beside its data, as libfuse reserves it. */
  private static final int HEADER_ROOM = 4096;
  /**
   * Workers waiting on the kernel at once ({@link ReaderGate}): two, so that a serial workload
   * alternates between two hot threads and no request waits for a wake-up of another.
   */
  static final int READERS = 2;

  /** The libfuse 2.9 calls the loop needs (the high-level setup and the session loop body). */
  public interface LibFuseLoop {
    Pointer fuse_setup(int argc, String[] argv, FuseOperations op, @size_t long opSize, @Out PointerByReference mountpoint,
        @Out IntByReference multithreaded, Pointer userData);

    void fuse_teardown(Pointer fuse, Pointer mountpoint);

    Pointer fuse_get_session(Pointer fuse);

    Pointer fuse_session_next_chan(Pointer se, Pointer ch);

    @size_t long fuse_chan_bufsize(Pointer ch);

    int fuse_session_receive_buf(Pointer se, Pointer buf, Pointer chp);

    void fuse_session_process_buf(Pointer se, Pointer buf, Pointer ch);

    int fuse_session_exited(Pointer se);

    void fuse_session_exit(Pointer se);

    int fuse_chan_fd(Pointer ch);

    Pointer fuse_chan_new(Pointer ops, int fd, @size_t long bufsize, Pointer data);

    /** Whether the kernel interrupted the request the calling worker answers (a signal to its caller). */
    int fuse_interrupted();
  }

  private static volatile LibFuseLoop loaded;

  /**
   * Whether the request the calling FUSE worker answers was interrupted by the kernel (its
   * caller got a signal): a call that waits checks it and gives up with EINTR.
   */
  static boolean interrupted() {
    LibFuseLoop lib = loaded;
    return lib != null && lib.fuse_interrupted() != 0;
  }

  private static LibFuseLoop load() {
    try {
      return LibraryLoader.create(LibFuseLoop.class).failImmediately().load("fuse");
    } catch (Throwable t) {
      return LibraryLoader.create(LibFuseLoop.class).failImmediately().load("libfuse.so.2");
    }
  }

  private FuseLoop() {}

  /** Handed what the loop made for the mount's callbacks, before the first request is read. */
  @FunctionalInterface
  interface Started {
    void started(PageStore pages, KernelAttrs attrs, OpenStore opens, AbsentXattrs xattrs);
  }

  /**
   * Mounts with {@code args} (libfuse's command line: name, options, mount point; "-f" is added)
   * and starts {@code threads} workers at {@code nice} (0, or a raised priority: below 0); the
   * future completes when the loop has ended and libfuse is torn down (after an unmount),
   * exceptionally if mounting failed.
   */
  public static CompletableFuture<Integer> start(FuseOperations ops, List<String> args, int threads, int nice) {
    return start(ops, args, threads, nice, null, null, null, null, false, false, () -> false);
  }

  /**
   * {@link #start(FuseOperations, List, int, int)}, and hands {@code onStart} the {@link PageStore}
   * (counting in {@code counters}) and the {@link KernelAttrs} of this mount before the first
   * request is read; with a {@code reads} source, READ requests are answered by {@link DirectRead}
   * from it rather than by libfuse; with an {@code xattrs} source, GETXATTRs of names a file is
   * known not to have by {@link AbsentXattrs}; with {@code readdirPlus}, the kernel is offered
   * READDIRPLUS, answered by {@link ReaddirPlus}; with {@code posixAcl}, the kernel enforces POSIX
   * ACLs and leaves the umask to the file system ({@link InitChannel}); while {@code recordLocks}
   * says the file system holds POSIX record locks, every close of a file sends a FLUSH ({@link
   * NoFlushChannel}).
   */
  static CompletableFuture<Integer> start(FuseOperations ops, List<String> args, int threads, int nice,
      org.flowfs.common.Counters counters, Started onStart,
      DirectRead.Source reads, AbsentXattrs.Source xattrs, boolean readdirPlus, boolean posixAcl,
      java.util.function.BooleanSupplier recordLocks) {
    CompletableFuture<Integer> done = new CompletableFuture<>();
    LibFuseLoop lib = load();
    loaded = lib;
    List<String> argv = new ArrayList<>(args);
    argv.add(1, "-f");
    PointerByReference mountpoint = new PointerByReference();
    IntByReference multithreaded = new IntByReference();
    Pointer fuse = lib.fuse_setup(argv.size(), argv.toArray(String[]::new), ops, jnr.ffi.Struct.size(ops), mountpoint,
        multithreaded, null);
    if (fuse == null) {
      done.completeExceptionally(new IllegalStateException("fuse_setup failed (see libfuse's message above)"));
      return done;
    }
    Pointer se = lib.fuse_get_session(fuse);
    Pointer ch = lib.fuse_session_next_chan(se, null);
    Runtime rt = Runtime.getRuntime(lib);
    long bufsize = Math.max(lib.fuse_chan_bufsize(ch), MAX_REQUEST + HEADER_ROOM);
    InitChannel init = new InitChannel(lib, rt, lib.fuse_chan_fd(ch), bufsize, readdirPlus, posixAcl);
    StaleNodes stale = counters == null ? null
        : new StaleNodes(lib, rt, init.libc(), lib.fuse_chan_fd(ch), bufsize, counters);
    NoFlushChannel reading = new NoFlushChannel(lib, rt, init.libc(), lib.fuse_chan_fd(ch), bufsize, stale, recordLocks);
    KernelAttrs attrs = new KernelAttrs(init.libc(), rt, lib.fuse_chan_fd(ch));
    SetidKill kill = new SetidKill(attrs);
    PageStore pages = onStart == null ? null : new PageStore(init.libc(), rt, lib.fuse_chan_fd(ch), counters);
    OpenStore opens = onStart == null ? null
        : new OpenStore(() -> new PageStore.Device(init.libc(), rt, lib.fuse_chan_fd(ch)), counters);
    AbsentXattrs absent = xattrs == null ? null : new AbsentXattrs(init.libc(), rt, lib.fuse_chan_fd(ch), counters, xattrs);
    if (onStart != null) {
      onStart.started(pages, attrs, opens, absent);
    }
    DirectRead direct = reads == null ? null : new DirectRead(init.libc(), rt, lib.fuse_chan_fd(ch), counters, reads);
    ReaddirPlus plus = readdirPlus
        ? new ReaddirPlus(lib, init.libc(), rt, lib.fuse_chan_fd(ch), bufsize, counters, absent) : null;
    List<Thread> workers = new ArrayList<>();
    ReaderGate gate = new ReaderGate(Math.min(READERS, threads));
    WorkerPriority priority = new WorkerPriority(init.libc(), rt, nice);
    for (int i = 0; i < threads; i++) {
      Thread t = new Thread(() -> {
        ServiceCpus.release(); // where the applications run, not on node.service-cpus
        priority.apply();
        work(lib, rt, se, ch, init, reading, stale, kill, gate, bufsize, direct, opens, absent, plus, counters);
      }, "fuse-" + i);
      t.setDaemon(true);
      workers.add(t);
    }
    workers.forEach(Thread::start);
    Thread reaper = new Thread(() -> {
      for (Thread t : workers) {
        try {
          t.join();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      if (pages != null) {
        pages.stop();
      }
      lib.fuse_teardown(fuse, mountpoint.getValue());
      done.complete(0);
    }, "fuse-teardown");
    reaper.setDaemon(true);
    reaper.start();
    return done;
  }

  /** One worker: libfuse's fuse_do_work, on a Java thread, reading when the gate lets it. */
  private static void work(LibFuseLoop lib, Runtime rt, Pointer se, Pointer ch, InitChannel init,
      NoFlushChannel reading, StaleNodes stale, SetidKill kill, ReaderGate gate, long bufsize, DirectRead direct,
      OpenStore opens, AbsentXattrs absent, ReaddirPlus plus, org.flowfs.common.Counters counters) {
    try {
      serve(lib, rt, se, ch, init, reading, stale, kill, gate, bufsize, direct, opens, absent, plus, counters);
    } finally {
      gate.close(); // the loop is ending: the parked workers end too
    }
  }

  private static void serve(LibFuseLoop lib, Runtime rt, Pointer se, Pointer ch, InitChannel init,
      NoFlushChannel reading, StaleNodes stale, SetidKill kill, ReaderGate gate, long bufsize, DirectRead direct,
      OpenStore opens, AbsentXattrs absent, ReaddirPlus plus, org.flowfs.common.Counters counters) {
    Pointer mem = Memory.allocateDirect(rt, (int) bufsize);
    DirectRead.Scratch scratch = direct == null ? null : direct.scratch();
    Pointer buf = Memory.allocateDirect(rt, FUSE_BUF_SIZE);
    Pointer chp = Memory.allocateDirect(rt, 8); // struct fuse_chan **: where libfuse may put another channel
    Pointer made = plus == null ? null : Memory.allocateDirect(rt, FUSE_BUF_SIZE); // the requests ReaddirPlus makes
    ReaddirPlus.Libfuse libfuse = plus == null ? null : request -> {
      setBuf(made, request.getInt(FuseWire.IN_LEN), request.address());
      before(request);
      lib.fuse_session_process_buf(se, made, plus.channel());
    };
    while (lib.fuse_session_exited(se) == 0 && gate.enter()) {
      setBuf(buf, bufsize, mem.address());
      chp.putPointer(0, ch);
      int res;
      try {
        res = lib.fuse_session_receive_buf(se, buf, chp);
      } finally {
        gate.leave();
      }
      if (res == -EINTR) {
        continue;
      }
      if (res <= 0) {
        if (res < 0) {
          LOG.debug("FUSE session ended ({})", -res);
          lib.fuse_session_exit(se);
        }
        break;
      }
      int opcode = FuseWire.opcode(mem);
      if (opens != null) {
        opens.seen(mem);
      }
      if (opcode == FuseWire.FUSE_INIT) {
        init.process(lib, se, buf, mem);
      } else if (opcode == FuseWire.FUSE_READ && direct != null) {
        KernelRequest.note(mem);
        direct.answer(mem, scratch);
      } else if (opcode == FuseWire.FUSE_GETXATTR && absent != null && absent.answer(mem)) {
        continue; // ENODATA, known without libfuse
      } else if (opcode == FuseWire.FUSE_READDIRPLUS && plus != null) {
        plus.answer(mem, bufsize, libfuse);
      } else {
        if (opcode == FuseWire.FUSE_LOOKUP && counters != null) {
          counters.increment("fuse.lookup"); // the kernel's (libfuse answers it with a getattr)
        }
        boolean clearingWrite = before(mem);
        lib.fuse_session_process_buf(se, buf, channel(mem, reading, stale, chp.getPointer(0)));
        if (clearingWrite) {
          kill.written(mem);
        }
      }
    }
  }

  /** The channel libfuse answers the request at {@code mem} on: one of the loop's, else {@code kernel}. */
  private static Pointer channel(Pointer mem, NoFlushChannel reading, StaleNodes stale, Pointer kernel) {
    if (NoFlushChannel.wants(mem)) {
      return reading.channel();
    }
    return stale != null && StaleNodes.wants(mem) ? stale.channel() : kernel;
  }

  /** Sets the struct fuse_buf at {@code buf}: {@code size} bytes of memory at {@code address}. */
  private static void setBuf(Pointer buf, long size, long address) {
    buf.putLong(0, size);
    buf.putInt(8, 0);
    buf.putAddress(16, address);
    buf.putInt(24, -1);
    buf.putLong(32, 0);
  }

  /**
   * Before libfuse processes the request at {@code mem}: notes it for the mount's callbacks
   * ({@link KernelRequest}) and what it asks of set-ID bits; true for a write that clears them
   * ({@link SetidKill}).
   */
  private static boolean before(Pointer mem) {
    KernelRequest.note(mem);
    return SetidKill.before(mem);
  }
}
