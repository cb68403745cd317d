package org.flowfs.common.wire;

/**
 * A request whose successful answer is an {@code R}; any request may also be answered with an
 * {@link ErrorResp}. The word {@code Request} is reserved for datatypes.
 */
public interface Req<R extends Message> extends Message {}
