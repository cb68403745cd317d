package org.flowfs.common.datarep;

import io.netty.buffer.ByteBuf;
import org.flowfs.common.request.Elementary;
import org.flowfs.common.request.Request;

/** {@value Datarep#NATIVE}: the file holds the memory bytes as they are. */
final class NativeDatarep implements Datarep {
  static final NativeDatarep INSTANCE = new NativeDatarep();

  private NativeDatarep() {}

  @Override
  public String name() {
    return NATIVE;
  }

  @Override
  public long fileExtent(Elementary type) {
    return type.size();
  }

  @Override
  public boolean convertsReads() {
    return false;
  }

  @Override
  public boolean convertsWrites() {
    return false;
  }

  /** A plain copy (never needed for a transfer, which moves native data without conversion). */
  @Override
  public void readConversion(ByteBuf userbuf, Request datatype, int count, ByteBuf filebuf, long position) {
    Typemap.forEach(datatype, position, count, (off, e) -> {
      filebuf.readBytes(userbuf, Math.toIntExact(off), e.size());
      return true;
    });
  }

  @Override
  public void writeConversion(ByteBuf userbuf, Request datatype, int count, ByteBuf filebuf, long position) {
    Typemap.forEach(datatype, position, count, (off, e) -> {
      filebuf.writeBytes(userbuf, Math.toIntExact(off), e.size());
      return true;
    });
  }

  @Override
  public String toString() {
    return NATIVE;
  }
}
