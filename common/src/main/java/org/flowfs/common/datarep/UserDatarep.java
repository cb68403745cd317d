package org.flowfs.common.datarep;

import io.netty.buffer.ByteBuf;
import org.flowfs.common.request.Elementary;
import org.flowfs.common.request.Request;

/** A registered representation: the user's functions and extra state (MPI_REGISTER_DATAREP). */
final class UserDatarep<S> implements Datarep {
  private final String name;
  private final ConversionFunction<S> read;
  private final ConversionFunction<S> write;
  private final ExtentFunction<S> extent;
  private final S extraState;
  /** File extents by ordinal, 0 until asked (the function is called only for types in use). */
  private final long[] extents = new long[Elementary.values().length];

  UserDatarep(String name, ConversionFunction<S> read, ConversionFunction<S> write, ExtentFunction<S> extent, S extraState) {
    this.name = name;
    this.read = read;
    this.write = write;
    this.extent = extent;
    this.extraState = extraState;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public long fileExtent(Elementary type) {
    long e = extents[type.ordinal()];
    if (e == 0) {
      e = extent.fileExtent(type, extraState);
      if (e <= 0) {
        throw new IllegalArgumentException("datarep " + name + ": file extent of " + type.typeName() + " is " + e);
      }
      extents[type.ordinal()] = e; // racy but idempotent: the function answers the same every time
    }
    return e;
  }

  @Override
  public boolean convertsReads() {
    return read != null;
  }

  @Override
  public boolean convertsWrites() {
    return write != null;
  }

  @Override
  public void readConversion(ByteBuf userbuf, Request datatype, int count, ByteBuf filebuf, long position) {
    if (read == null) {
      NativeDatarep.INSTANCE.readConversion(userbuf, datatype, count, filebuf, position);
    } else {
      read.convert(userbuf, datatype, count, filebuf, position, extraState);
    }
  }

  @Override
  public void writeConversion(ByteBuf userbuf, Request datatype, int count, ByteBuf filebuf, long position) {
    if (write == null) {
      NativeDatarep.INSTANCE.writeConversion(userbuf, datatype, count, filebuf, position);
    } else {
      write.convert(userbuf, datatype, count, filebuf, position, extraState);
    }
  }

  @Override
  public String toString() {
    return name;
  }
}
