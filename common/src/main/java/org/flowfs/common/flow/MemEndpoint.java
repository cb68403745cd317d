package org.flowfs.common.flow;

import io.netty.buffer.ByteBuf;

/**
 * A memory region: the buffer a client reads into or writes from. The flow's {@code memReq}, if
 * set, lays the flow's bytes out in it (noncontiguous memory); otherwise they are contiguous from
 * the buffer's index 0. The caller keeps ownership of the buffer and must not touch it while the
 * flow is in service.
 */
public record MemEndpoint(ByteBuf buffer) implements Endpoint {}
