package org.flowfs.common.datarep;

/**
 * A datarep name was registered twice in one {@link DatarepRegistry} (MPI's error class {@code
 * MPI_ERR_DUP_DATAREP}). The first registration stays in force.
 */
public final class DuplicateDatarepException extends IllegalStateException {
  private static final long serialVersionUID = 1L;
  private final String datarep;

  public DuplicateDatarepException(String datarep) {
    super("datarep '" + datarep + "' is already defined (MPI_ERR_DUP_DATAREP)");
    this.datarep = datarep;
  }

  /** The name that was already taken. */
  public String datarep() {
    return datarep;
  }
}
