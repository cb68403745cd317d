package org.flowfs.common.config;

import org.flowfs.common.CpuSet;

/**
 * Settings of the machine a process runs on: the processes of one file system share a config
 * file, but a site whose machines differ gives each machine's processes a file of their own.
 *
 * @param serviceCpus the CPUs this machine's FlowFS processes keep their own work on: every thread
 *     of a metadata or I/O server, and every thread of a mount but its FUSE workers, which run
 *     where the applications calling them run (empty, the default: anywhere). The core
 *     specialization HPC sites use to keep a file system's work off the cores of the applications
 */
public record NodeConfig(CpuSet serviceCpus) {
  public static final String SERVICE_CPUS = "node.service-cpus";

  static NodeConfig from(ConfigSource s) {
    return new NodeConfig(s.cpus(SERVICE_CPUS));
  }
}
