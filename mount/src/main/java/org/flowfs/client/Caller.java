package org.flowfs.client;

/** Who makes a call: the user and group FUSE reports for the calling process. */
public record Caller(int uid, int gid, int pid) {
  public static final Caller ROOT = new Caller(0, 0, 0);
}
