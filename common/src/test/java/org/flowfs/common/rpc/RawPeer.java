package org.flowfs.common.rpc;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import org.flowfs.common.config.Secret;
import org.flowfs.common.wire.CommonOp.AuthChallenge;
import org.flowfs.common.wire.CommonOp.AuthReq;
import org.flowfs.common.wire.CommonOp.AuthResp;
import org.flowfs.common.wire.Envelope;
import org.flowfs.common.wire.FrameDecoder;
import org.flowfs.common.wire.FrameEncoder;
import org.flowfs.common.wire.Frames;
import org.flowfs.common.wire.MessageRegistry;

/**
 * A peer on a plain blocking socket, for tests that talk to a server the way a broken or hostile
 * program would: raw bytes, hand-made frames, with or without the membership handshake. Frames it
 * reads are decoded with the real decoder; payloads of frames it reads are released at once.
 */
public final class RawPeer implements AutoCloseable {
  private static final MessageRegistry REG = MessageRegistry.DEFAULT;
  private final Socket socket;
  private final DataInputStream in;
  private final OutputStream out;

  private RawPeer(Socket socket) throws IOException {
    this.socket = socket;
    this.in = new DataInputStream(socket.getInputStream());
    this.out = socket.getOutputStream();
  }

  /** Connects; reads time out after {@code soTimeoutMs}. */
  public static RawPeer connect(InetSocketAddress a, int soTimeoutMs) throws IOException {
    return connect(a, soTimeoutMs, 0);
  }

  /** Connects with a receive buffer of {@code receiveBuffer} bytes (0: the system's default). */
  public static RawPeer connect(InetSocketAddress a, int soTimeoutMs, int receiveBuffer) throws IOException {
    Socket s = new Socket();
    if (receiveBuffer > 0) {
      s.setReceiveBufferSize(receiveBuffer);
    }
    try {
      s.connect(new InetSocketAddress(a.getHostString(), a.getPort()), 5000);
      s.setSoTimeout(soTimeoutMs);
      s.setTcpNoDelay(true);
      return new RawPeer(s);
    } catch (IOException e) {
      s.close();
      throw e;
    }
  }

  /** Connects and proves membership with {@code secret}; fails if the server does not accept it. */
  public static RawPeer member(InetSocketAddress a, Secret secret, int soTimeoutMs) throws IOException {
    RawPeer p = connect(a, soTimeoutMs);
    try {
      Envelope answer = p.authenticate(secret);
      if (!(answer.message() instanceof AuthResp)) {
        throw new IOException("the server refused the handshake: " + answer.message());
      }
      return p;
    } catch (IOException | RuntimeException e) {
      p.close();
      throw e;
    }
  }

  public Socket socket() {
    return socket;
  }

  /** Reads the server's challenge, answers it with a proof made with {@code secret}; returns the answer. */
  public Envelope authenticate(Secret secret) throws IOException {
    Envelope first = read();
    if (!(first.message() instanceof AuthChallenge c)) {
      throw new IOException("the server's first frame is " + first.message() + ", not a challenge");
    }
    byte[] mine = Membership.nonce();
    send(Envelope.request(0, new AuthReq(mine, new Membership(secret).clientProof(c.server(), c.nonce(), mine))));
    Envelope answer = read();
    if (answer.message() instanceof AuthResp r
        && !Membership.matches(new Membership(secret).serverProof(c.server(), c.nonce(), mine), r.proof())) {
      throw new IOException("the server's proof is wrong");
    }
    return answer;
  }

  /** Sends bytes as they are. */
  public void send(byte[] bytes) throws IOException {
    out.write(bytes);
    out.flush();
  }

  /** Sends a frame encoded by the real encoder (consumes a payload). */
  public void send(Envelope env) throws IOException {
    send(encode(env));
  }

  /** The bytes of a frame as the real encoder writes it (consumes a payload). */
  public static byte[] encode(Envelope env) {
    EmbeddedChannel ch = new EmbeddedChannel(new FrameEncoder(REG));
    try {
      ch.writeOutbound(env);
      ByteArrayOutputStream b = new ByteArrayOutputStream();
      for (Object o; (o = ch.readOutbound()) != null; ) {
        ByteBuf buf = (ByteBuf) o;
        try {
          b.writeBytes(ByteBufUtil.getBytes(buf));
        } finally {
          buf.release();
        }
      }
      return b.toByteArray();
    } finally {
      ch.finishAndReleaseAll();
    }
  }

  /** Reads and decodes one frame (its payload, if any, already released). */
  public Envelope read() throws IOException {
    int length = in.readInt();
    if (length < Frames.HEADER || length > (64 << 20)) {
      throw new IOException("frame length " + length);
    }
    byte[] body = new byte[length];
    in.readFully(body);
    ByteBuf frame = Unpooled.wrappedBuffer(body);
    try {
      Envelope env = new FrameDecoder(REG, 64 << 20).decodeFrame(frame);
      env.release();
      return env;
    } finally {
      frame.release();
    }
  }

  /**
   * {@link #closedByPeer()}, waiting up to {@code millis} instead of the socket timeout (for a
   * close that comes only after a server-side timeout, which starts when the server accepts).
   */
  public boolean closedByPeer(int millis) throws IOException {
    int was = socket.getSoTimeout();
    socket.setSoTimeout(millis);
    try {
      return closedByPeer();
    } finally {
      if (!socket.isClosed()) {
        socket.setSoTimeout(was);
      }
    }
  }

  /**
   * Whether the server closes the connection within the socket timeout, reading (and dropping)
   * whatever it sends before that: true on EOF or reset, false if it stays open.
   */
  public boolean closedByPeer() throws IOException {
    InputStream s = socket.getInputStream();
    byte[] buf = new byte[8192];
    try {
      for (;;) {
        if (s.read(buf) < 0) {
          return true;
        }
      }
    } catch (SocketTimeoutException e) {
      return false;
    } catch (SocketException | EOFException e) {
      return true;
    }
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
