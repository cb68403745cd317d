package org.flowfs.common.datarep;

import org.flowfs.common.request.Elementary;

/**
 * The file extent of a predefined type in a user representation ({@code
 * MPI_Datarep_extent_function}): how many bytes one value takes in the file; must be positive and
 * the same on every call.
 *
 * @param <S> the type of the extra state given at registration
 */
@FunctionalInterface
public interface ExtentFunction<S> {
  long fileExtent(Elementary type, S extraState);
}
