package org.flowfs.common;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import jnr.ffi.LibraryLoader;
import jnr.ffi.annotations.In;
import jnr.ffi.annotations.Out;
import jnr.ffi.types.size_t;
import org.flowfs.common.config.ConfigException;
import org.flowfs.common.config.NodeConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a process's own work runs ({@code node.service-cpus}): {@link #install} confines every
 * thread of the process to the service CPUs, and the threads started later follow the thread that
 * starts them. A mount's FUSE workers {@link #release} themselves to the CPUs the process had
 * before, where the applications that wait on them run; since a worker may be the first to hand
 * work to a pool and so start its thread, the pools' threads {@link #confine} themselves as they
 * start ({@link NamedThreads}, the network's event loops).
 *
 * <p>Why: on a machine that runs applications (or a mount) and FlowFS's servers, the bulk work of
 * a write-behind send or a flow (network copies, storage calls) lands on the CPU where an
 * application and the FUSE worker answering it take turns, and each of its answers then waits.
 */
public final class ServiceCpus {
  private static final Logger LOG = LoggerFactory.getLogger(ServiceCpus.class);
  private static final long CPU_SET_BYTES = CpuSet.MAX_CPUS / 8;

  /** sched_setaffinity(2) and sched_getaffinity(2); a pid of 0 is the calling thread. */
  public interface Native {
    int sched_setaffinity(int pid, @size_t long size, @In long[] mask);

    int sched_getaffinity(int pid, @size_t long size, @Out long[] mask);
  }

  private static final class Holder {
    static final Native C = LibraryLoader.create(Native.class).load("c");
    static final jnr.ffi.Runtime RT = jnr.ffi.Runtime.getRuntime(C);
  }

  /** The service CPUs as a kernel mask; null until installed. */
  private static volatile long[] service;
  /** The CPUs the process had before {@link #install}. */
  private static volatile long[] before;
  private static final AtomicBoolean reported = new AtomicBoolean();

  private ServiceCpus() {}

  /**
   * Confines every thread of this process to {@code cpus} (nothing when it is empty). A CPU the
   * process may not use is a {@link ConfigException} naming the key.
   */
  public static synchronized void install(CpuSet cpus) {
    if (cpus.isEmpty()) {
      return;
    }
    CpuSet had = current();
    CpuSet missing = cpus.without(had);
    if (!missing.isEmpty()) {
      throw new ConfigException("key '" + NodeConfig.SERVICE_CPUS + "': CPU " + missing
          + " is not among the CPUs this process may use (" + had + ")");
    }
    long[] mask = cpus.mask();
    before = had.mask();
    service = mask;
    // every thread there is; again until a pass finds no new one (a thread may start one meanwhile)
    Set<Integer> done = new HashSet<>();
    for (boolean more = true; more; ) {
      more = false;
      for (int tid : threads()) {
        if (done.add(tid)) {
          more = true;
          set(tid, mask);
        }
      }
    }
    LOG.info("{} = {}: {} threads of this process moved to CPUs {} (a mount's FUSE workers stay on {})",
        NodeConfig.SERVICE_CPUS, cpus, done.size(), cpus, had);
  }

  /** Puts the calling thread on the service CPUs, when they are installed. */
  public static void confine() {
    long[] m = service;
    if (m != null) {
      set(0, m);
    }
  }

  /** Puts the calling thread on the CPUs the process had before {@link #install}, when installed. */
  public static void release() {
    long[] m = before;
    if (m != null) {
      set(0, m);
    }
  }

  /** The CPUs the calling thread may run on. */
  public static CpuSet current() {
    long[] m = new long[CpuSet.MAX_CPUS / 64];
    if (Holder.C.sched_getaffinity(0, CPU_SET_BYTES, m) != 0) {
      throw new FsException(Errno.ofCode(Holder.RT.getLastError()), "sched_getaffinity failed");
    }
    return CpuSet.ofMask(m);
  }

  private static void set(int tid, long[] mask) {
    if (Holder.C.sched_setaffinity(tid, CPU_SET_BYTES, mask) != 0) {
      int errno = Holder.RT.getLastError();
      if (errno != Errno.ESRCH.code() && reported.compareAndSet(false, true)) { // ESRCH: the thread has ended
        LOG.warn("{}: sched_setaffinity of thread {} failed, errno {}; it runs where it did", NodeConfig.SERVICE_CPUS,
            tid == 0 ? "(self)" : tid, errno);
      }
    }
  }

  private static Set<Integer> threads() {
    Set<Integer> tids = new HashSet<>();
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
      for (Path p : ds) {
        tids.add(Integer.parseInt(p.getFileName().toString()));
      }
    } catch (IOException e) {
      throw new FsException(Errno.EIO, "cannot list this process's threads in /proc/self/task: " + e.getMessage());
    }
    return tids;
  }
}
