package org.flowfs.common.datarep;

import io.netty.buffer.ByteBuf;
import org.flowfs.common.request.Elementary;
import org.flowfs.common.request.Request;

/**
 * A data representation: how typed values are stored in a file (MPI's {@code datarep}, seeds 002
 * and 004). A view names one; every access through that view converts between the memory form of
 * the values and their file form with it.
 *
 * <p>The <b>memory form</b> ("native") of a value is its bytes in the platform's byte order,
 * {@link java.nio.ByteOrder#nativeOrder()}, as a C program on this machine holds it: this is what
 * makes a file written with {@value #NATIVE} readable by a native MPI program on the same machine.
 * Read and write values with {@link NativeOrder} (or a buffer ordered with {@code nativeOrder()}).
 *
 * <p>Three kinds exist: {@value #NATIVE} (no conversion), {@value #EXTERNAL32} (MPI's portable
 * big-endian form) and user-registered ones ({@link DatarepRegistry#register}). A datarep is
 * described, as {@code MPI_REGISTER_DATAREP} does, by
 *
 * <ul>
 *   <li>its <b>file extent</b> function: the bytes one value of a predefined type takes in the
 *       file; a view's etype and filetype are laid out with these extents ({@link #fileType});
 *   <li>its <b>write conversion</b>: {@code count} values laid out in {@code userbuf} by a datatype
 *       tiled from offset 0, starting at value {@code position} of the tiled typemap, appended to
 *       {@code filebuf} in file form, contiguous;
 *   <li>its <b>read conversion</b>: the reverse, from {@code count} contiguous values in file form
 *       in {@code filebuf} into {@code userbuf} at the values {@code position ..} of the tiled
 *       typemap.
 * </ul>
 *
 * A transfer larger than the conversion buffer is converted in several calls with the same
 * {@code userbuf} and datatype and increasing positions: the first call has position 0, each next
 * one the position after the last value converted (seed 002). {@link Typemap#forEach} finds the
 * values of a position cheaply.
 *
 * <p>Implementations must be thread safe and stateless per call: one datarep may convert for
 * several transfers at once, on any thread. Conversions must not block. Buffer ownership: both
 * buffers belong to the caller; a conversion reads and writes them only during the call and
 * leaves {@code userbuf}'s indices unchanged.
 */
public interface Datarep {
  /** The name of the representation without conversion. */
  String NATIVE = "native";
  /** The name of MPI's portable representation: big-endian IEEE, fixed sizes. */
  String EXTERNAL32 = "external32";

  /** The name views use to choose this representation. */
  String name();

  /** The bytes one value of {@code type} takes in the file (MPI's {@code dtype_file_extent_fn}); positive. */
  long fileExtent(Elementary type);

  /** Whether reads convert; if not, file bytes are copied to memory as they are. */
  boolean convertsReads();

  /** Whether writes convert; if not, memory bytes are copied to the file as they are. */
  boolean convertsWrites();

  /**
   * Converts {@code count} values from file to memory form (MPI's {@code read_conversion_fn}).
   *
   * @param userbuf the memory; value {@code i} of the tiled typemap lies at its offset from index 0
   * @param datatype the memory datatype, tiled contiguously (instance {@code k} at {@code k *
   *     extent})
   * @param count how many values to convert
   * @param filebuf exactly the {@code count} values in file form, from its reader index on; the
   *     conversion reads them (moving the reader index)
   * @param position the first value's index in the tiled typemap
   */
  void readConversion(ByteBuf userbuf, Request datatype, int count, ByteBuf filebuf, long position);

  /**
   * Converts {@code count} values from memory to file form (MPI's {@code write_conversion_fn}):
   * the values {@code position ..} of the tiled typemap of {@code datatype} in {@code userbuf}
   * are appended to {@code filebuf} (moving its writer index), which has room for exactly them.
   */
  void writeConversion(ByteBuf userbuf, Request datatype, int count, ByteBuf filebuf, long position);

  /**
   * The datatype as laid out in the file in this representation: every predefined type replaced
   * by its file extent. As MPI specifies, displacements counted in extents (contiguous, vector,
   * indexed, subarray) scale with the new extents, and displacements given in bytes (hvector,
   * hindexed, struct, resized bounds) are taken as they are. A representation whose extents are
   * the native sizes returns {@code type} itself.
   */
  default Request fileType(Request type) {
    return FileTypes.of(this, type);
  }
}
