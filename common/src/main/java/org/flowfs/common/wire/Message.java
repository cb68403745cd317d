package org.flowfs.common.wire;

/**
 * A wire message: an immutable record, registered in {@link MessageRegistry} with a {@link Wire}
 * id. The record's components, in declaration order, are its fields on the wire.
 */
public interface Message {}
