package org.flowfs.io;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.util.AttributeKey;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.wire.Envelope;
import org.flowfs.common.wire.IoOp.EagerData;
import org.flowfs.common.wire.MalformedMessageException;

/**
 * Eager writes waiting for their data message: the request names a tag, the {@link EagerData}
 * with that tag follows on the same connection. A write whose data does not come within the
 * timeout fails (EIO), and so do the writes of a connection that closes; nothing is kept for a
 * connection after that. The waiting writes of a connection live on its channel and are touched
 * only on its event loop. Thread safe.
 */
final class EagerWrites {
  private static final AttributeKey<Map<Long, CompletableFuture<ByteBuf>>> WAITING =
      AttributeKey.valueOf(EagerWrites.class, "waiting");
  private final Duration timeout;

  EagerWrites(Duration timeout) {
    this.timeout = timeout;
  }

  /**
   * The data of write {@code tag} on {@code ch}, when it arrives (the caller releases it). Call on
   * the channel's event loop, so the write waits before its data can be decoded.
   */
  CompletableFuture<ByteBuf> expect(Channel ch, long tag) {
    CompletableFuture<ByteBuf> f = new CompletableFuture<>();
    Runnable register = () -> {
      Map<Long, CompletableFuture<ByteBuf>> waiting = waiting(ch);
      if (waiting == null) {
        f.completeExceptionally(new FsException(Errno.EIO, "connection closed before the data came"));
        return;
      }
      if (waiting.putIfAbsent(tag, f) != null) {
        f.completeExceptionally(new FsException(Errno.EINVAL, "eager write tag " + tag + " is already in use"));
        return;
      }
      ch.eventLoop().schedule(() -> {
        if (waiting.remove(tag, f)) {
          f.completeExceptionally(new FsException(Errno.EIO,
              "the data of eager write " + tag + " did not come within " + timeout.toMillis() + " ms"));
        }
      }, timeout.toNanos(), TimeUnit.NANOSECONDS);
    };
    // the data may follow in the same read as the request: be waiting before it is decoded
    if (ch.eventLoop().inEventLoop()) {
      register.run();
    } else {
      ch.eventLoop().execute(register);
    }
    return f;
  }

  /**
   * Hands an {@link EagerData} frame to its write; a frame nobody waits for is a protocol error.
   * Called on the channel's event loop.
   */
  void deliver(Channel ch, Envelope env) {
    Map<Long, CompletableFuture<ByteBuf>> waiting = ch.hasAttr(WAITING) ? ch.attr(WAITING).get() : null;
    CompletableFuture<ByteBuf> f = waiting == null ? null : waiting.remove(env.id());
    if (f == null) {
      env.release();
      throw new MalformedMessageException("eager data for tag " + env.id() + " that no write waits for");
    }
    if (!f.complete(((EagerData) env.message()).payload())) {
      env.release();
    }
  }

  /** The waiting writes of an open channel (made on first use), or null once it closed. */
  private static Map<Long, CompletableFuture<ByteBuf>> waiting(Channel ch) {
    Map<Long, CompletableFuture<ByteBuf>> w = ch.attr(WAITING).get();
    if (w == null) {
      if (!ch.isActive()) {
        return null;
      }
      Map<Long, CompletableFuture<ByteBuf>> made = new HashMap<>();
      ch.attr(WAITING).set(made);
      ch.closeFuture().addListener(x -> ch.eventLoop().execute(() -> {
        for (CompletableFuture<ByteBuf> f : made.values()) {
          f.completeExceptionally(new FsException(Errno.EIO, "connection closed before the data came"));
        }
        made.clear();
      }));
      w = made;
    }
    return ch.isActive() ? w : null;
  }
}
