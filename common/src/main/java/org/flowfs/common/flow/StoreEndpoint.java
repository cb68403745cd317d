package org.flowfs.common.flow;

import org.flowfs.common.Handle;

/** A datafile on this server's storage. */
public record StoreEndpoint(FlowStorage storage, Handle handle) implements Endpoint {}
