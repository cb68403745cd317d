package org.flowfs.client;

/**
 * Who makes a call: the user and group FUSE reports for the calling process, and its umask for
 * the objects it creates (0: the mode given is final).
 */
public record Caller(int uid, int gid, int pid, int umask) {
  public static final Caller ROOT = new Caller(0, 0, 0);

  /** With no umask to apply. */
  public Caller(int uid, int gid, int pid) {
    this(uid, gid, pid, 0);
  }
}
