package org.flowfs.common.config;

import java.nio.file.Path;
import org.flowfs.common.CpuSet;

/**
 * Settings of the machine a process runs on: the processes of one file system share a config
 * file, but a site whose machines differ gives each machine's processes a file of their own.
 *
 * @param serviceCpus the CPUs this machine's FlowFS processes keep their own work on: every thread
 *     of a metadata or I/O server, and every thread of a mount but its FUSE workers, which run
 *     where the applications calling them run (empty, the default: anywhere). The core
 *     specialization HPC sites use to keep a file system's work off the cores of the applications
 * @param shmDir where a client and an I/O server on this machine make their files of shared
 *     memory ({@code /dev/shm}, the default); a hugetlbfs mount puts the slots in huge pages, so
 *     that a direct read or write of a slot is one piece of memory for the device (with no huge
 *     page left, files go to {@code /dev/shm})
 */
public record NodeConfig(CpuSet serviceCpus, Path shmDir) {
  public static final String SERVICE_CPUS = "node.service-cpus";
  public static final String SHM_DIR = "node.shm-dir";
  /** The machine's shared-memory file system, where files of shared memory go by default. */
  public static final Path DEFAULT_SHM_DIR = Path.of("/dev/shm");

  static NodeConfig from(ConfigSource s) {
    Path shm = s.path(SHM_DIR, DEFAULT_SHM_DIR, false);
    if (!shm.isAbsolute()) {
      s.problem("key '" + SHM_DIR + "': '" + shm + "' is not an absolute path");
    }
    return new NodeConfig(s.cpus(SERVICE_CPUS), shm);
  }
}
