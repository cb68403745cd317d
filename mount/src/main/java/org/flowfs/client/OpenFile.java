package org.flowfs.client;

/** One open of a regular file: the FUSE file handle {@code id} and the file's shared state. */
public record OpenFile(long id, FileState state, int flags) {}
