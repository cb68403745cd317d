package org.flowfs.it;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import org.flowfs.client.Caller;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.common.rpc.NetRuntime;

/**
 * A second client of a deployment's servers, without a mount: what another machine sees and
 * does. Reads past the kernel's page cache of the test's mount.
 */
final class OtherClient implements AutoCloseable {
  private final NetRuntime net = NetRuntime.create("it-other-client", 1);
  private final FileSystemClient client;

  OtherClient(EmbeddedDeployment fs) {
    client = new FileSystemClient(fs.client().config(), net);
  }

  /** The size as a new open finds it (close-to-open: not from the attribute cache). */
  long size(String path) {
    OpenFile f = client.open(path, 0);
    try {
      return client.getattr(f).size();
    } finally {
      client.release(f);
    }
  }

  byte[] read(String path) {
    OpenFile f = client.open(path, 0);
    try {
      long size = client.getattr(f).size();
      ByteBuf buf = Unpooled.buffer((int) size);
      try {
        while (buf.writerIndex() < size) {
          if (client.read(f, buf.writerIndex(), (int) size - buf.writerIndex(), buf) == 0) {
            break;
          }
        }
        return ByteBufUtil.getBytes(buf);
      } finally {
        buf.release();
      }
    } finally {
      client.release(f);
    }
  }

  /** Makes directory {@code path} (mode 0755, owned by root). */
  void mkdir(String path) {
    client.mkdir(path, 0755, Caller.ROOT);
  }

  /** Creates {@code path} (mode 0644, owned by root) holding {@code data}. */
  void create(String path, byte[] data) {
    OpenFile f = client.create(path, 0644, 1, Caller.ROOT);
    try {
      client.write(f, 0, Unpooled.wrappedBuffer(data));
    } finally {
      client.release(f);
    }
  }

  /** Replaces the contents of the existing file {@code path} with {@code data}, and closes it. */
  void overwrite(String path, byte[] data) {
    OpenFile f = client.open(path, 1); // O_WRONLY
    try {
      client.truncate(f, 0);
      client.write(f, 0, Unpooled.wrappedBuffer(data));
    } finally {
      client.release(f);
    }
  }

  /** The attributes of {@code path} as the metadata server has them now. */
  org.flowfs.common.Attr stat(String path) {
    OpenFile f = client.open(path, 0);
    try {
      return client.getattr(f);
    } finally {
      client.release(f);
    }
  }

  /** The attributes of {@code path}, a directory too, through this client's caches (cold at first). */
  org.flowfs.common.Attr attr(String path) {
    return client.getattr(path);
  }

  void rename(String from, String to) {
    client.rename(from, to, 0);
  }

  void rmdir(String path) {
    client.rmdir(path);
  }

  /** This client's counter {@code name}. */
  long counter(String name) {
    return client.counters().get(name);
  }

  @Override
  public void close() {
    client.close();
    net.close();
  }
}
