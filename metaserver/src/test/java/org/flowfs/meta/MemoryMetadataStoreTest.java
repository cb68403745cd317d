package org.flowfs.meta;

/** The contract, in memory. */
class MemoryMetadataStoreTest extends MetadataStoreContract {
  @Override
  MetadataStore open() {
    return new MemoryMetadataStore();
  }
}
