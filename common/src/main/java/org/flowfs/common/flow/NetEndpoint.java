package org.flowfs.common.flow;

import io.netty.channel.Channel;

/**
 * The peer at the other end of a connection. The flow's data travels on {@code channel} as
 * one-way {@code FlowData} frames carrying the flow's tag; the flow at the peer has the same tag.
 */
public record NetEndpoint(Channel channel) implements Endpoint {}
