package org.flowfs.common.datarep;

import io.netty.buffer.ByteBuf;
import org.flowfs.common.request.Elementary;
import org.flowfs.common.request.Request;

/**
 * {@value Datarep#EXTERNAL32}, the MPI standard's portable representation: every value
 * big-endian, integers two's complement, {@code float} and {@code double} IEEE 754 single and
 * double precision, with the fixed sizes of the standard's table: {@code int8}/{@code uint8}/
 * {@code char}/{@code byte} 1 byte, {@code int16} 2, {@code int32} 4, {@code int64} 8, {@code
 * float} 4, {@code double} 8. Those are also the native sizes of every {@link Elementary}, so
 * external32 changes byte order only, never positions.
 */
final class External32 implements Datarep {
  static final External32 INSTANCE = new External32();

  private External32() {}

  @Override
  public String name() {
    return EXTERNAL32;
  }

  @Override
  public long fileExtent(Elementary type) {
    return type.size();
  }

  @Override
  public boolean convertsReads() {
    return true;
  }

  @Override
  public boolean convertsWrites() {
    return true;
  }

  @Override
  public void writeConversion(ByteBuf userbuf, Request datatype, int count, ByteBuf filebuf, long position) {
    Typemap.forEach(datatype, position, count, (off, e) -> {
      int at = Math.toIntExact(off);
      switch (e.size()) {
        case 1 -> filebuf.writeByte(userbuf.getByte(at));
        case 2 -> filebuf.writeShort(NativeOrder.getShort(userbuf, at));
        case 4 -> filebuf.writeInt(NativeOrder.getInt(userbuf, at));
        case 8 -> filebuf.writeLong(NativeOrder.getLong(userbuf, at));
        default -> throw new AssertionError(e);
      }
      return true;
    });
  }

  @Override
  public void readConversion(ByteBuf userbuf, Request datatype, int count, ByteBuf filebuf, long position) {
    Typemap.forEach(datatype, position, count, (off, e) -> {
      int at = Math.toIntExact(off);
      switch (e.size()) {
        case 1 -> userbuf.setByte(at, filebuf.readByte());
        case 2 -> NativeOrder.setShort(userbuf, at, filebuf.readShort());
        case 4 -> NativeOrder.setInt(userbuf, at, filebuf.readInt());
        case 8 -> NativeOrder.setLong(userbuf, at, filebuf.readLong());
        default -> throw new AssertionError(e);
      }
      return true;
    });
  }

  @Override
  public String toString() {
    return EXTERNAL32;
  }
}
