package org.flowfs.common.rpc;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.config.RpcConfig;
import org.flowfs.common.wire.CommonOp.AuthChallenge;
import org.flowfs.common.wire.CommonOp.AuthReq;
import org.flowfs.common.wire.CommonOp.AuthResp;
import org.flowfs.common.wire.CommonOp.ErrorResp;
import org.flowfs.common.wire.Envelope;
import org.flowfs.common.wire.FrameDecoder;
import org.flowfs.common.wire.FrameEncoder;
import org.flowfs.common.wire.Frames;
import org.flowfs.common.wire.HasPayload;
import org.flowfs.common.wire.MalformedMessageException;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.MessageRegistry;
import org.flowfs.common.wire.Req;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls one server from the calling thread, for callers that wait for each answer anyway (a FUSE
 * request thread asking the metadata server). The caller takes a connection that is its own for
 * the call, writes its request and waits for the answer on that socket itself: no event loop
 * stands between, so a call costs no hand-over between threads in this process (an {@link
 * RpcClient} call costs two: the caller wakes an event loop to send, the loop wakes the caller
 * with the answer). Where a task switch is expensive, as on small virtual machines, those two are
 * a large part of a metadata round trip.
 *
 * <p>Connections open on demand, one per caller at a time, and are kept for the next call (the
 * most recently used first, at most {@link #MAX_IDLE} idle); each proves membership as an {@link
 * RpcClient}'s does, and a kept one that the server closed meanwhile is noticed before it is used
 * and replaced. The contract is {@link RpcClient}'s: every call ends within its timeout with the
 * answer, the server's errno, or EIO carrying its {@link CallFailure} stage, so callers may
 * re-send what never left. Blocks: never call it from an event loop. Thread safe.
 */
public final class DirectClient implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(DirectClient.class);
  /** Idle connections kept; more concurrent callers than this close theirs after the call. */
  static final int MAX_IDLE = 32;

  private final String peer;
  private final InetSocketAddress address;
  private final RpcConfig config;
  private final MessageRegistry registry;
  private final FrameEncoder encoder;
  private final FrameDecoder decoder;
  private final Membership membership;
  private final ByteBufAllocator alloc = PooledByteBufAllocator.DEFAULT;
  private final ConcurrentLinkedDeque<Connection> idle = new ConcurrentLinkedDeque<>();
  private final AtomicInteger idleCount = new AtomicInteger();
  private final AtomicInteger opened = new AtomicInteger();
  private volatile boolean closed;

  public DirectClient(String peer, InetSocketAddress address, RpcConfig config, MessageRegistry registry) {
    this.peer = peer;
    this.address = address;
    this.config = config;
    this.registry = registry;
    this.encoder = new FrameEncoder(registry);
    this.decoder = new FrameDecoder(registry, (int) config.maxFrame());
    this.membership = new Membership(config.secret());
  }

  public String peer() {
    return peer;
  }

  /** Connections opened so far (each proved membership). */
  public int opened() {
    return opened.get();
  }

  /** Sends {@code req} and waits for its answer, at most the configured timeout. */
  public <R extends Message> R call(Req<R> req) {
    return call(req, config.timeout());
  }

  /**
   * Sends {@code req} and waits for its answer, at most {@code timeout}. Throws the server's errno
   * as an {@link FsException}, or EIO with the {@link CallFailure} stage the call failed at.
   */
  public <R extends Message> R call(Req<R> req, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    Connection c;
    try {
      c = take(deadline);
    } catch (FsException e) {
      HasPayload.releaseIfAny(req); // never sent: its payload is still ours
      throw e;
    }
    boolean answered = false;
    try {
      R r = c.call(req, deadline, timeout);
      answered = true;
      return r;
    } catch (FsException e) {
      answered = c.answered; // the server's errno: the connection is fine
      throw e;
    } finally {
      if (answered) {
        giveBack(c);
      } else {
        c.close(); // an answer may still be on its way, or the stream is out of step
      }
    }
  }

  /** A connection for one call: a kept one that is still open, or a new one. */
  private Connection take(long deadline) {
    for (Connection c; (c = idle.pollFirst()) != null; ) {
      idleCount.decrementAndGet();
      if (c.isOpen()) {
        return c;
      }
      c.close();
    }
    if (closed) {
      throw CallFailure.eio(CallFailure.Stage.NOT_SENT, "client to " + peer + " is closed");
    }
    return connect(deadline);
  }

  private void giveBack(Connection c) {
    if (closed) {
      c.close();
      return;
    }
    if (idleCount.incrementAndGet() > MAX_IDLE) {
      idleCount.decrementAndGet();
      c.close();
      return;
    }
    idle.offerFirst(c);
    if (closed && idle.remove(c)) { // close() ran meanwhile and may have missed it
      idleCount.decrementAndGet();
      c.close();
    }
  }

  private String where() {
    return peer + " at " + address.getHostString() + ":" + address.getPort();
  }

  /** Opens a connection and proves membership both ways, within the connect timeout and the deadline. */
  private Connection connect(long deadline) {
    long until = Math.min(deadline, System.nanoTime() + config.connectTimeout().toNanos());
    Connection c;
    try {
      c = new Connection(SocketChannel.open());
    } catch (IOException e) {
      throw CallFailure.eio(CallFailure.Stage.NOT_SENT, "cannot open a socket to " + where() + ": " + e.getMessage());
    }
    try {
      c.connect(until);
      Envelope challenge = c.read(until, "for the membership challenge");
      if (challenge.kind() != Envelope.Kind.ONEWAY || !(challenge.message() instanceof AuthChallenge ch)) {
        challenge.release();
        throw new FsException(Errno.EPROTO, where() + " sent " + challenge.message().getClass().getSimpleName()
            + " instead of a membership challenge");
      }
      byte[] nonce = Membership.nonce();
      c.write(Envelope.request(0, new AuthReq(nonce, membership.clientProof(ch.server(), ch.nonce(), nonce))), until);
      Envelope answer = c.read(until, "for the membership answer");
      Message m = answer.message();
      if (m instanceof ErrorResp e) {
        Errno errno = Errno.ofCode(e.errno());
        throw new FsException(errno == Errno.OK ? Errno.EACCES : errno, where() + " refused this client's membership proof ("
            + e.detail() + "): is fs.secret the same as the server's?");
      }
      if (answer.kind() != Envelope.Kind.RESPONSE || answer.id() != 0 || !(m instanceof AuthResp r)) {
        answer.release();
        throw new FsException(Errno.EPROTO, where() + " answered the membership proof with " + m.getClass().getSimpleName());
      }
      if (!Membership.matches(membership.serverProof(ch.server(), ch.nonce(), nonce), r.proof())) {
        throw new FsException(Errno.EACCES, where() + " (\"" + ch.server() + "\") could not prove it belongs to this file"
            + " system: its fs.secret differs from ours");
      }
      opened.incrementAndGet();
      return c;
    } catch (Io e) {
      c.close();
      throw CallFailure.eio(CallFailure.Stage.NOT_SENT, "membership handshake with " + where() + " failed: " + e.getMessage());
    } catch (Timeout t) {
      c.close();
      throw CallFailure.eio(CallFailure.Stage.NOT_SENT, "cannot reach " + where() + " within "
          + config.connectTimeout().toMillis() + " ms (waiting " + t.getMessage() + ")");
    } catch (FsException e) {
      c.close();
      if (e.errno() != Errno.EIO) {
        LOG.warn("{}", e.getMessage());
        throw e;
      }
      // no request went out on this connection: whatever failed, nothing was sent
      throw CallFailure.eio(CallFailure.Stage.NOT_SENT, e.getMessage());
    }
  }

  @Override
  public void close() {
    closed = true;
    for (Connection c; (c = idle.pollFirst()) != null; ) {
      idleCount.decrementAndGet();
      c.close();
    }
  }

  /** One socket, used by one caller at a time; waits with a selector of its own, so with a deadline. */
  private final class Connection {
    private final SocketChannel ch;
    private Selector selector;
    private SelectionKey key;
    private long ids;
    /** Bytes of the current request written so far. */
    private long written;
    /** Whether the current call's answer came, so the next call may use the connection. */
    private boolean answered;
    private final ByteBuffer length = ByteBuffer.allocate(Frames.LENGTH_FIELD);

    Connection(SocketChannel ch) {
      this.ch = ch;
    }

    void connect(long until) {
      try {
        ch.configureBlocking(false);
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        ch.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
        selector = Selector.open();
        key = ch.register(selector, 0);
        if (!ch.connect(new InetSocketAddress(address.getHostString(), address.getPort()))) {
          while (!ch.finishConnect()) {
            await(SelectionKey.OP_CONNECT, until, "to connect");
          }
        }
      } catch (IOException e) {
        throw new FsException(Errno.EIO, "cannot reach " + where() + ": " + e.getMessage());
      }
    }

    /** Whether the server has not closed this connection (nor sent anything unasked) while it was idle. */
    boolean isOpen() {
      try {
        length.clear().limit(1);
        return ch.read(length) == 0;
      } catch (IOException e) {
        return false;
      }
    }

    <R extends Message> R call(Req<R> req, long deadline, Duration timeout) {
      long id = ++ids;
      Class<?> expected = registry.responseTypeOf(req);
      written = 0;
      answered = false;
      try {
        write(Envelope.request(id, req), deadline);
        Envelope env = read(deadline, "for the answer");
        answered = true;
        Message m = env.message();
        if (env.kind() != Envelope.Kind.RESPONSE || env.id() != id) {
          answered = false;
          env.release();
          throw new FsException(Errno.EPROTO, where() + " sent " + env.kind() + " " + env.id() + " while answer " + id
              + " was awaited");
        }
        FsException failed = RpcClient.failureOf(peer, m, expected);
        if (failed != null) {
          if (!(m instanceof ErrorResp)) { // not the server's errno: an answer of the wrong type
            answered = false;
            env.release();
          }
          throw failed;
        }
        @SuppressWarnings("unchecked")
        R r = (R) m;
        return r;
      } catch (Timeout t) {
        throw CallFailure.eio(CallFailure.Stage.TIMED_OUT, peer + " did not answer " + req.getClass().getSimpleName()
            + " within " + timeout.toMillis() + " ms");
      } catch (Io e) {
        // the server never saw a request of which no byte left
        throw CallFailure.eio(written == 0 ? CallFailure.Stage.NOT_SENT : CallFailure.Stage.LOST,
            "connection to " + peer + " lost: " + e.getMessage());
      } catch (FsException e) {
        if (!answered && e.errno() == Errno.EPROTO) { // ours: the stream cannot be trusted after this
          throw CallFailure.eio(CallFailure.Stage.LOST, e.getMessage());
        }
        throw e; // the server's errno
      }
    }

    /** Writes a frame; consumes the envelope's payload. */
    void write(Envelope env, long until) {
      FrameEncoder.Frame f = encoder.encode(env, alloc);
      try {
        ByteBuffer[] bufs = f.payload() == null ? new ByteBuffer[] {f.header().nioBuffer()}
            : concat(f.header().nioBuffer(), f.payload().nioBuffers());
        long left = f.header().readableBytes() + (f.payload() == null ? 0 : f.payload().readableBytes());
        while (left > 0) {
          long n = ch.write(bufs);
          written += n;
          left -= n;
          if (left > 0 && n == 0) {
            await(SelectionKey.OP_WRITE, until, "for the server to take the request");
          }
        }
      } catch (IOException e) {
        throw new Io(e);
      } finally {
        f.header().release();
        if (f.payload() != null) {
          f.payload().release();
        }
      }
    }

    /** Reads one frame and decodes it; {@code what} says what is awaited, in errors ("for the answer"). */
    Envelope read(long until, String what) {
      try {
        length.clear();
        fill(length, until, what);
        long n = length.getInt(0) & 0xFFFFFFFFL;
        if (n < Frames.HEADER || n > config.maxFrame() - Frames.LENGTH_FIELD) {
          throw new FsException(Errno.EPROTO, where() + " sent a frame of " + n + " bytes");
        }
        ByteBuf frame = alloc.heapBuffer((int) n);
        try {
          ByteBuffer b = frame.nioBuffer(0, (int) n);
          fill(b, until, what);
          frame.writerIndex((int) n);
          return decoder.decodeFrame(frame);
        } finally {
          frame.release();
        }
      } catch (MalformedMessageException e) {
        throw new FsException(Errno.EPROTO, where() + " sent a malformed frame: " + e.getMessage());
      } catch (IOException e) {
        throw new Io(e);
      }
    }

    private void fill(ByteBuffer b, long until, String what) throws IOException {
      while (b.hasRemaining()) {
        int n = ch.read(b);
        if (n < 0) {
          throw new IOException(where() + " closed the connection");
        }
        if (n == 0) {
          await(SelectionKey.OP_READ, until, what);
        }
      }
    }

    /** Waits until the socket is ready for {@code ops}; throws {@link Timeout} past {@code until}. */
    private void await(int ops, long until, String what) throws IOException {
      long left = until - System.nanoTime();
      if (left <= 0) {
        throw new Timeout(what);
      }
      if (Thread.currentThread().isInterrupted()) {
        // the selector would not wait for an interrupted thread; the caller gets EINTR
        throw new FsException(Errno.EINTR, "interrupted while waiting " + what + " (" + peer + ")");
      }
      key.interestOps(ops);
      selector.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left + 999_999)));
      selector.selectedKeys().clear();
    }

    void close() {
      try {
        if (selector != null) {
          selector.close();
        }
        ch.close();
      } catch (IOException e) {
        LOG.debug("closing a connection to {}: {}", peer, e.toString());
      }
    }
  }

  private static ByteBuffer[] concat(ByteBuffer first, ByteBuffer[] rest) {
    ByteBuffer[] all = new ByteBuffer[rest.length + 1];
    all[0] = first;
    System.arraycopy(rest, 0, all, 1, rest.length);
    return all;
  }

  /** No progress by the deadline. */
  private static final class Timeout extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Timeout(String what) {
      super(what, null, false, false);
    }
  }

  /** The socket failed: the connection is gone. */
  private static final class Io extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Io(IOException cause) {
      super(cause.getMessage() == null ? cause.toString() : cause.getMessage(), cause, false, false);
    }
  }
}
