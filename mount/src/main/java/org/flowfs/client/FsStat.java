package org.flowfs.client;

/** Capacity of the file system: bytes summed over the I/O servers, objects from the metadata server. */
public record FsStat(long totalBytes, long freeBytes, long availableBytes, long files, long freeFiles, int ioServers) {}
