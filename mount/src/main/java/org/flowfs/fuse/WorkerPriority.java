package org.flowfs.fuse;

import java.util.concurrent.atomic.AtomicBoolean;
import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import org.flowfs.common.Errno;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The nice value of the FUSE workers ({@code client.fuse-nice}), set by each worker on its own
 * thread. A thread starts with the nice value of the thread that made it, and pools (the network's
 * event loops, the write-behind senders) start their threads when work first comes, often from a
 * worker: each worker therefore also asks that the threads it makes start at the default nice of 0
 * ({@code SCHED_RESET_ON_FORK}). A priority above the default needs root or CAP_SYS_NICE: without
 * it the workers keep theirs, and the mount says so once.
 */
final class WorkerPriority {
  private static final Logger LOG = LoggerFactory.getLogger(WorkerPriority.class);
  private static final int PRIO_PROCESS = 0;
  private static final int SCHED_OTHER = 0;
  private static final int SCHED_RESET_ON_FORK = 0x40000000;

  private final InitChannel.LibC libc;
  private final Runtime rt;
  private final int nice;
  /** struct sched_param with sched_priority 0, as SCHED_OTHER requires. */
  private final Pointer param;
  private final AtomicBoolean reported = new AtomicBoolean();

  /** Workers at {@code nice}: 0 (left alone) or below (SCHED_RESET_ON_FORK resets only those). */
  WorkerPriority(InitChannel.LibC libc, Runtime rt, int nice) {
    if (nice > 0) {
      throw new IllegalArgumentException("the FUSE workers' nice value must be 0 or below: " + nice);
    }
    this.libc = libc;
    this.rt = rt;
    this.nice = nice;
    this.param = Memory.allocateDirect(rt, 4, true);
  }

  /** Gives the calling thread the workers' nice value; on failure it keeps its own. */
  void apply() {
    if (nice == 0) {
      return;
    }
    if (libc.sched_setscheduler(0, SCHED_OTHER | SCHED_RESET_ON_FORK, param) != 0) {
      report("sched_setscheduler");
      return; // threads it makes would inherit the nice value: keep the default
    }
    if (libc.setpriority(PRIO_PROCESS, libc.gettid(), nice) != 0) {
      report("setpriority");
    }
  }

  private void report(String call) {
    if (reported.compareAndSet(false, true)) {
      int errno = rt.getLastError();
      boolean denied = errno == Errno.EPERM.code() || errno == Errno.EACCES.code();
      LOG.info("FUSE workers keep their priority, not nice {} (client.fuse-nice): {} failed, errno {}{}", nice, call,
          errno, denied ? " (a priority above the default needs root or CAP_SYS_NICE)" : "");
    }
  }
}
