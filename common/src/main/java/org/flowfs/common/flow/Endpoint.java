package org.flowfs.common.flow;

/**
 * One end of a flow (seed 001): memory, the network (the seed's BMI) or storage (the seed's
 * Trove). A flow moves bytes from its source endpoint to its destination endpoint.
 */
public sealed interface Endpoint permits MemEndpoint, NetEndpoint, StoreEndpoint {}
