package org.flowfs.client.api;

/** Where a {@link FlowFile#seek} offset counts from (MPI's {@code MPI_SEEK_*}); offsets are in etypes. */
public enum Whence {
  /** From the start of the view. */
  SET,
  /** From the current individual file pointer. */
  CUR,
  /** From the end of the file, as an etype position in the view (rounded up to a whole etype). */
  END
}
