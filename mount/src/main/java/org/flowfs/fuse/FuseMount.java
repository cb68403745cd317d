package org.flowfs.fuse;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.flowfs.client.FileSystemClient;
import org.flowfs.common.config.ClientConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A FlowFS file system mounted with FUSE at one directory. {@link #mount} checks the mount point,
 * starts libfuse's multithreaded loop on its own thread and returns once the kernel shows the
 * mount; {@link #close()} unmounts and waits (bounded) for the loop to end. Problems a user can
 * fix (no such directory, already mounted, no FUSE) are {@link MountException}s with a message
 * that says what to do.
 */
public final class FuseMount implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(FuseMount.class);
  public static final String TYPE = "fuse.flowfs";
  /** Threads serving FUSE requests: enough to keep the servers busy while some wait on them. */
  public static final int FUSE_THREADS = 16;

  private final Path mountPoint;
  private final FlowFuse fuse;
  private final CompletableFuture<Integer> loop = new CompletableFuture<>();
  private final AtomicBoolean closed = new AtomicBoolean();

  /** A mount that cannot be made, for a reason the user can act on. */
  public static final class MountException extends Exception {
    private static final long serialVersionUID = 1L;

    public MountException(String message) {
      super(message);
    }
  }

  private FuseMount(Path mountPoint, FlowFuse fuse) {
    this.mountPoint = mountPoint;
    this.fuse = fuse;
  }

  /** The libfuse options FlowFS mounts with (see README, "Mount options"). */
  static List<String> options(String fsName, ClientConfig client, boolean allowOther) {
    List<String> o = new ArrayList<>();
    o.add("fsname=" + fsName);
    o.add("subtype=flowfs");
    o.add("big_writes");
    o.add("max_write=" + FuseLoop.MAX_REQUEST);
    o.add("max_read=" + FuseLoop.MAX_REQUEST);
    o.add("max_readahead=" + FuseLoop.MAX_REQUEST);
    o.add("use_ino");
    o.add("readdir_ino");
    o.add("auto_cache");
    // auto_cache asks for the attributes at an open only when its own copy is older than this
    // (by default attr_timeout): a file another client changed within a second of the last stat
    // here kept its old pages. At 0 every open compares the attributes the open just fetched
    o.add("ac_attr_timeout=0");
    o.add("default_permissions");
    o.add("attr_timeout=" + seconds(client.attrTimeout()));
    o.add("entry_timeout=" + seconds(client.entryTimeout()));
    o.add("negative_timeout=0");
    if (allowOther) {
      o.add("allow_other");
    }
    return o;
  }

  private static String seconds(Duration d) {
    return String.format(java.util.Locale.ROOT, "%.3f", d.toMillis() / 1000.0);
  }

  /**
   * Mounts {@code client}'s file system at {@code mountPoint} and waits until it is mounted.
   *
   * @throws MountException when the mount point is unusable or FUSE is missing
   */
  public static FuseMount mount(FileSystemClient client, Path mountPoint, String fsName) throws MountException {
    Path mp = mountPoint.toAbsolutePath().normalize();
    check(mp);
    FlowFuse fuse;
    try {
      fuse = new FlowFuse(client, fsName);
    } catch (Throwable t) {
      throw new MountException("cannot load libfuse 2 (libfuse.so.2): install the Debian package 'libfuse2' ("
          + t.getMessage() + ")");
    }
    FuseMount m = new FuseMount(mp, fuse);
    fuse.onUnmount(m::close);
    boolean root = "root".equals(System.getProperty("user.name"));
    List<String> opts = options(fsName, client.config().client(), root || userAllowOther());
    List<String> args = new ArrayList<>();
    args.add(fsName);
    for (String o : opts) {
      args.add("-o");
      args.add(o);
    }
    args.add(mp.toString());
    int nice = client.config().client().fuseNice();
    FuseLoop.start(fuse.operations(), args, FUSE_THREADS, nice, client.counters(), fuse::started, fuse, fuse,
        client.config().client().readdirPlus(), client.config().client().posixAcl(), client::holdsRecordLocks).whenComplete((v, e) -> {
      if (e != null) {
        m.loop.completeExceptionally(e);
      } else {
        m.loop.complete(v);
      }
    });
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (System.nanoTime() < deadline) {
      if (TYPE.equals(MountTable.typeAt(mp))) {
        LOG.info("mounted {} at {} ({})", fsName, mp, String.join(",", opts));
        kernelReadAhead(mp, FuseLoop.MAX_REQUEST / 1024);
        return m;
      }
      if (m.loop.isDone()) {
        String why = m.loop.isCompletedExceptionally() ? m.loop.handle((v, e) -> String.valueOf(e)).join() : "libfuse exited";
        throw new MountException("mounting " + mp + " failed: " + why + " (is /dev/fuse available? is 'fuse3' installed?)");
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    m.close();
    throw new MountException("mounting " + mp + " did not complete within 20 s");
  }

  /**
   * Sets the kernel's read-ahead for the mount to {@code kb}: the kernel reads a sequential reader's
   * file ahead in requests of its read-ahead size, 128 KiB unless told (libfuse 2 cannot raise it).
   * At one request's largest, 1 MiB, a cold `dd` read of 1 GiB on the process shape went from
   * 556-673 to 685-760 MB/s (mount CPU 1.03-1.43 -> 0.89-0.92 s); 4 MiB, more than the client's
   * own read-ahead keeps, was slower. Needs root (sysfs); without it the default stays.
   */
  public static void kernelReadAhead(Path mp, int kb) {
    String dev = MountTable.deviceAt(mp);
    Path knob = Path.of("/sys/class/bdi", dev == null ? "-" : dev, "read_ahead_kb");
    try {
      Files.writeString(knob, Integer.toString(kb));
      LOG.debug("kernel read-ahead of {}: {} KiB", mp, kb);
    } catch (IOException | RuntimeException e) {
      LOG.info("kernel read-ahead of {} left at its default ({} not writable: {})", mp, knob, e.toString());
    }
  }

  private static boolean userAllowOther() {
    try {
      return Files.readAllLines(Path.of("/etc/fuse.conf")).stream().anyMatch(l -> l.strip().equals("user_allow_other"));
    } catch (IOException e) {
      return false;
    }
  }

  private static void check(Path mp) throws MountException {
    if (!Files.exists(Path.of("/dev/fuse"))) {
      throw new MountException("/dev/fuse does not exist: this machine has no FUSE (load the 'fuse' kernel module)");
    }
    if (!Files.exists(mp)) {
      throw new MountException("mount point " + mp + " does not exist (create it with: mkdir -p " + mp + ")");
    }
    if (!Files.isDirectory(mp)) {
      throw new MountException("mount point " + mp + " is not a directory");
    }
    String type = MountTable.typeAt(mp);
    if (type != null) {
      throw new MountException(mp + " is already a mount point (" + type + "); unmount it first: fusermount -u " + mp);
    }
  }

  public Path mountPoint() {
    return mountPoint;
  }

  /** Blocks until the file system is unmounted (by {@link #close()}, fusermount -u or umount). */
  public void awaitUnmount() {
    try {
      loop.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      LOG.warn("FUSE loop ended with {}", e.toString());
    }
  }

  public boolean isMounted() {
    return !loop.isDone();
  }

  /** Unmounts and waits up to 10 s for libfuse's loop to end; idempotent. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      awaitQuietly(10);
      return;
    }
    if (!loop.isDone()) {
      LOG.info("unmounting {}", mountPoint);
      unmount(mountPoint);
    }
    if (!awaitQuietly(10)) {
      LOG.warn("FUSE loop for {} did not end within 10 s", mountPoint);
    }
  }

  private boolean awaitQuietly(int seconds) {
    try {
      loop.get(seconds, TimeUnit.SECONDS);
      return true;
    } catch (Exception e) {
      return loop.isDone();
    }
  }

  /** Runs {@code fusermount -u} (falling back to {@code umount}), lazily if the mount is busy. */
  public static void unmount(Path mp) {
    if (run("fusermount", "-u", mp.toString()) || run("fusermount3", "-u", mp.toString())
        || run("umount", mp.toString())) {
      return;
    }
    LOG.warn("{} is busy; detaching it lazily", mp);
    if (!run("fusermount", "-u", "-z", mp.toString()) && !run("umount", "-l", mp.toString())) {
      LOG.error("cannot unmount {}", mp);
    }
  }

  private static boolean run(String... cmd) {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes());
      boolean ok = p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
      if (!ok && !out.isBlank()) {
        LOG.debug("{}: {}", String.join(" ", cmd), out.strip());
      }
      return ok;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
