package org.flowfs.io;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.wire.Envelope;
import org.flowfs.common.wire.IoOp.EagerData;
import org.flowfs.common.wire.MalformedMessageException;

/**
 * Eager writes waiting for their data message: the request names a tag, the {@link EagerData}
 * with that tag follows on the same connection. A connection that closes fails its waiting
 * writes. Thread safe.
 */
final class EagerWrites {
  private record Key(Channel channel, long tag) {}

  private final Map<Key, CompletableFuture<ByteBuf>> waiting = new ConcurrentHashMap<>();

  /** The data of write {@code tag} on {@code ch}, when it arrives (the caller releases it). */
  CompletableFuture<ByteBuf> expect(Channel ch, long tag) {
    CompletableFuture<ByteBuf> f = new CompletableFuture<>();
    if (waiting.putIfAbsent(new Key(ch, tag), f) != null) {
      throw new FsException(Errno.EINVAL, "eager write tag " + tag + " is already in use");
    }
    ch.closeFuture().addListener(x -> {
      CompletableFuture<ByteBuf> w = waiting.remove(new Key(ch, tag));
      if (w != null) {
        w.completeExceptionally(new FsException(Errno.EIO, "connection closed before the data came"));
      }
    });
    return f;
  }

  /** Hands an {@link EagerData} frame to its write; a frame nobody waits for is a protocol error. */
  void deliver(Channel ch, Envelope env) {
    CompletableFuture<ByteBuf> f = waiting.remove(new Key(ch, env.id()));
    if (f == null) {
      env.release();
      throw new MalformedMessageException("eager data for tag " + env.id() + " that no write waits for");
    }
    if (!f.complete(((EagerData) env.message()).payload())) {
      env.release();
    }
  }
}
