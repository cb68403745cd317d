package org.flowfs.client.api;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;

/**
 * Processes as the members of a group: a star of TCP connections around rank 0, which relays
 * every exchange. Frames: an int count of messages, then per message an int length and its
 * bytes. Enough for coordinating collective I/O, whose bulk data moves in flows, not here.
 */
final class SocketGroup implements Group {
  private static final int MAX_MESSAGE = 1 << 30;

  private final int rank;
  private final int size;
  /** Rank 0: a connection to every other rank (index 0 unused); others: only index 0, to rank 0. */
  private final Socket[] peers;
  private final DataInputStream[] in;
  private final DataOutputStream[] out;
  private final ServerSocket server;

  private SocketGroup(int rank, int size, ServerSocket server) {
    this.rank = rank;
    this.size = size;
    this.server = server;
    this.peers = new Socket[size];
    this.in = new DataInputStream[size];
    this.out = new DataOutputStream[size];
  }

  static SocketGroup connect(int rank, int size, InetSocketAddress at, Duration timeout) {
    if (size < 1 || rank < 0 || rank >= size) {
      throw new IllegalArgumentException("rank " + rank + " of " + size);
    }
    int soTimeout = (int) Math.min(Integer.MAX_VALUE, timeout.toMillis());
    long deadline = System.nanoTime() + timeout.toNanos();
    SocketGroup g = null;
    try {
      if (rank == 0) {
        ServerSocket ss = new ServerSocket();
        ss.setReuseAddress(true);
        ss.bind(at);
        ss.setSoTimeout(soTimeout);
        g = new SocketGroup(0, size, ss);
        for (int k = 1; k < size; k++) {
          Socket s = ss.accept();
          s.setSoTimeout(soTimeout);
          s.setTcpNoDelay(true);
          DataInputStream din = new DataInputStream(new BufferedInputStream(s.getInputStream()));
          int r = din.readInt();
          if (r <= 0 || r >= size || g.peers[r] != null) {
            s.close();
            throw new FsException(Errno.EPROTO, "a peer claims rank " + r);
          }
          g.peers[r] = s;
          g.in[r] = din;
          g.out[r] = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
        }
      } else {
        g = new SocketGroup(rank, size, null);
        Socket s = null;
        while (s == null) {
          try {
            s = new Socket();
            s.connect(at, soTimeout);
          } catch (IOException e) {
            s.close();
            s = null;
            if (System.nanoTime() > deadline) {
              throw new FsException(Errno.ETIMEDOUT, "no group rendezvous at " + at);
            }
            Thread.sleep(50);
          }
        }
        s.setSoTimeout(soTimeout);
        s.setTcpNoDelay(true);
        g.peers[0] = s;
        g.in[0] = new DataInputStream(new BufferedInputStream(s.getInputStream()));
        g.out[0] = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
        g.out[0].writeInt(rank);
        g.out[0].flush();
      }
      g.barrier();
      return g;
    } catch (IOException | RuntimeException e) {
      if (g != null) {
        g.close();
      }
      throw failure(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new FsException(Errno.EINTR, "interrupted");
    }
  }

  private static RuntimeException failure(Exception e) {
    if (e instanceof RuntimeException re) {
      return re;
    }
    if (e instanceof SocketTimeoutException) {
      return new FsException(Errno.ETIMEDOUT, "group member missing: " + e.getMessage(), e);
    }
    return new FsException(Errno.EIO, "group connection failed: " + e.getMessage(), e);
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  public byte[][] alltoall(byte[][] toEach) {
    if (toEach.length != size) {
      throw new IllegalArgumentException("one message per member");
    }
    try {
      if (rank != 0) {
        writeAll(out[0], toEach);
        return readAll(in[0]);
      }
      byte[][][] rows = new byte[size][][];
      rows[0] = toEach;
      for (int r = 1; r < size; r++) {
        rows[r] = readAll(in[r]);
        if (rows[r].length != size) {
          throw new FsException(Errno.EPROTO, "rank " + r + " sent " + rows[r].length + " messages");
        }
      }
      for (int r = 1; r < size; r++) {
        byte[][] col = new byte[size][];
        for (int s = 0; s < size; s++) {
          col[s] = rows[s][r];
        }
        writeAll(out[r], col);
      }
      byte[][] mine = new byte[size][];
      for (int s = 0; s < size; s++) {
        mine[s] = rows[s][0];
      }
      return mine;
    } catch (IOException e) {
      throw failure(e);
    }
  }

  private static void writeAll(DataOutputStream o, byte[][] msgs) throws IOException {
    o.writeInt(msgs.length);
    for (byte[] m : msgs) {
      o.writeInt(m.length);
      o.write(m);
    }
    o.flush();
  }

  private static byte[][] readAll(DataInputStream i) throws IOException {
    int n = i.readInt();
    if (n < 0 || n > 1 << 20) {
      throw new FsException(Errno.EPROTO, "bad message count " + n);
    }
    byte[][] msgs = new byte[n][];
    for (int k = 0; k < n; k++) {
      int len = i.readInt();
      if (len < 0 || len > MAX_MESSAGE) {
        throw new FsException(Errno.EPROTO, "bad message length " + len);
      }
      msgs[k] = new byte[len];
      i.readFully(msgs[k]);
    }
    return msgs;
  }

  @Override
  public void close() {
    for (Socket s : peers) {
      if (s != null) {
        try {
          s.close();
        } catch (IOException e) {
          // closing anyway
        }
      }
    }
    if (server != null) {
      try {
        server.close();
      } catch (IOException e) {
        // closing anyway
      }
    }
  }
}
