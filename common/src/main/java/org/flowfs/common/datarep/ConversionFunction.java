package org.flowfs.common.datarep;

import io.netty.buffer.ByteBuf;
import org.flowfs.common.request.Request;

/**
 * A user conversion between memory and file form ({@code MPI_Datarep_conversion_function}), with
 * the extra state given at registration. See {@link Datarep#readConversion} and {@link
 * Datarep#writeConversion} for the meaning of the arguments; the same function type serves both
 * directions. It may be called from any thread and for several transfers at once, so it must keep
 * no per-transfer state (it may cache what it derives from a datatype).
 *
 * @param <S> the type of the extra state
 */
@FunctionalInterface
public interface ConversionFunction<S> {
  void convert(ByteBuf userbuf, Request datatype, int count, ByteBuf filebuf, long position, S extraState);
}
