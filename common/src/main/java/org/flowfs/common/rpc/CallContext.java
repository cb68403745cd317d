package org.flowfs.common.rpc;

import io.netty.channel.Channel;
import java.net.SocketAddress;

/** What a handler knows of the call it serves: the connection it came on. */
public record CallContext(Channel channel, long requestId) {
  public SocketAddress peer() {
    return channel.remoteAddress();
  }
}
