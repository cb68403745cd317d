package org.flowfs.client.api;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;

/**
 * The members of a collective operation (MPI's communicator, for I/O only): {@link #size()}
 * members numbered by {@link #rank()}, each calling the same collective operations in the same
 * order. Two kinds: {@link #local} for threads of one JVM standing in for ranks, {@link #connect}
 * for separate processes that meet at a rendezvous address.
 *
 * <p>Every method blocks until every member made the matching call, or fails with an {@link
 * org.flowfs.common.FsException} ({@code ETIMEDOUT} when a member does not come within the
 * group's timeout, {@code EIO} when a connection breaks). A group object belongs to one member and
 * one thread at a time; close it when done.
 */
public interface Group extends AutoCloseable {
  /** This member's number, {@code 0 <= rank < size}. */
  int rank();

  /** The number of members. */
  int size();

  /**
   * Personalized all-to-all exchange: {@code toEach[r]} goes to member {@code r}; returns the
   * messages of every member to this one, indexed by sender. The arrays belong to the receiver
   * afterwards (an in-JVM group does not copy them).
   */
  byte[][] alltoall(byte[][] toEach);

  /** Every member's {@code mine}, indexed by rank. */
  default byte[][] allgather(byte[] mine) {
    byte[][] out = new byte[size()][];
    java.util.Arrays.fill(out, mine);
    return alltoall(out);
  }

  /** Returns once every member called it. */
  default void barrier() {
    allgather(new byte[0]);
  }

  @Override
  void close();

  /** A group of one: collective operations run alone. */
  static Group self() {
    return local(1, Duration.ofMinutes(5)).get(0);
  }

  /** {@code size} members for threads of this JVM, one each; waits for a member bounded by {@code timeout}. */
  static List<Group> local(int size, Duration timeout) {
    return LocalGroup.create(size, timeout);
  }

  /**
   * This process's membership in a group of {@code size} processes meeting at {@code rendezvous}:
   * rank 0 listens there, the others connect to it (retrying until {@code timeout}), and every
   * exchange goes through rank 0. Returns once all members are connected.
   */
  static Group connect(int rank, int size, InetSocketAddress rendezvous, Duration timeout) {
    return SocketGroup.connect(rank, size, rendezvous, timeout);
  }
}
