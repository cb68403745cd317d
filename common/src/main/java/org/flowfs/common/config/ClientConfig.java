package org.flowfs.common.config;

import java.time.Duration;

/**
 * The client (library and mount).
 *
 * @param attrTimeout how long cached attributes are trusted (client cache and kernel)
 * @param entryTimeout how long cached names are trusted (client cache and kernel)
 * @param cacheEntries most names and attributes the client caches
 * @param writeBehind dirty bytes buffered per open file before they are sent
 * @param readAhead bytes read ahead of a sequential reader
 * @param readAround the aligned block a small read that jumps is widened to, the pages around the
 *     ones asked for going into the kernel's page cache (mount only; 0: off)
 * @param dirLeaseFiles files reserved ahead by a lease on a directory this client made, in which
 *     it then creates files locally and sends them to the metadata server in batches (mount and
 *     library; 0: no leases, every create is a call of its own)
 * @param fuseNice the scheduling priority (nice, -20 to 0) of the mount's FUSE threads, the ones
 *     applications wait on, so that the mount's and servers' bulk work on the same machine does not
 *     delay their answers (mount only; 0, the default: as every other thread; below 0 needs root or
 *     CAP_SYS_NICE, else they keep 0). Never above 0: the threads a worker starts would inherit it
 * @param readdirAhead the most directory listings asked for ahead of a walk of a tree (find, du,
 *     ls -R), each the first page of a subdirectory the walk will open next (0: off)
 * @param openStore whether the mount puts a small file's bytes, which its open brought, into the
 *     kernel's page cache before it answers the open, so that the read needs no request of its own
 *     (mount only)
 * @param sharedMemory whether the client hands its large payloads (the buffers of write flows,
 *     eager writes) to an I/O server on its own machine in shared memory rather than through the
 *     loopback socket (mount and library)
 * @param readdirPlus whether the mount answers the kernel's READDIRPLUS, a page of a listing with
 *     every entry's attributes, so that a listing followed by a stat of each entry ({@code ls -l})
 *     needs no request per entry (mount only)
 * @param posixAcl whether the mount has the kernel enforce POSIX ACLs ({@code
 *     system.posix_acl_access}, {@code system.posix_acl_default}) and hands it the umask of each
 *     create, for the metadata server to apply unless a default ACL replaces it (mount only;
 *     false: ACLs are extended attributes like any other, and the kernel applies the umask)
 */
public record ClientConfig(
    Duration attrTimeout, Duration entryTimeout, int cacheEntries, long writeBehind, long readAhead,
    int readAround, int dirLeaseFiles, int fuseNice, int readdirAhead, boolean openStore, boolean sharedMemory,
    boolean readdirPlus, boolean posixAcl) {
  static ClientConfig from(ConfigSource s) {
    long around = s.size("client.read-around", 64 << 10, 0, 4L << 20);
    if (around % 4096 != 0) {
      s.problem("key 'client.read-around' must be a multiple of 4KiB (the page size), or 0");
    }
    return new ClientConfig(
        s.duration("client.attr-timeout", Duration.ofSeconds(1), Duration.ZERO, Duration.ofHours(1)),
        s.duration("client.entry-timeout", Duration.ofSeconds(1), Duration.ZERO, Duration.ofHours(1)),
        s.integer("client.cache-entries", 200_000, 0, 100_000_000),
        s.size("client.write-behind", 8L << 20, 0, 1L << 30),
        s.size("client.read-ahead", 8L << 20, 0, 1L << 30),
        (int) around,
        s.integer("client.dir-lease-files", 32, 0, org.flowfs.common.wire.MetaOp.MAX_LEASE_FILES),
        s.integer("client.fuse-nice", 0, -20, 0),
        s.integer("client.readdir-ahead", 16, 0, 64),
        s.bool("client.open-store", true),
        s.bool("client.shared-memory", true),
        s.bool("client.readdir-plus", true),
        s.bool("client.posix-acl", true));
  }
}
