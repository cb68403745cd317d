package org.flowfs.client.api;

import org.flowfs.common.datarep.Datarep;
import org.flowfs.common.request.Request;
import org.flowfs.common.request.RequestCursor;
import org.flowfs.common.request.RequestProcessor;
import org.flowfs.common.request.Segments;

/**
 * A {@link View} resolved against a datarep registry: its representation, its filetype as laid out
 * in the file, and the arithmetic between etype positions, positions in the view's data stream
 * (bytes in file form) and file offsets. Immutable: an operation keeps the one it started with.
 */
final class ViewState {
  final View view;
  final Datarep datarep;
  /** The filetype in file form. */
  final Request fileType;
  /** Bytes of one etype in file form. */
  final long etypeBytes;

  ViewState(View view, Datarep datarep) {
    this.view = view;
    this.datarep = datarep;
    this.fileType = datarep.fileType(view.filetype());
    this.etypeBytes = datarep.fileType(view.etype()).size();
    if (fileType != view.filetype()) {
      View.checkTiling(fileType, "filetype in datarep " + datarep.name());
    }
    if (fileType.size() % etypeBytes != 0) {
      throw new IllegalArgumentException("in datarep " + datarep.name() + " the filetype (" + fileType.size()
          + " bytes) is not a whole number of etypes (" + etypeBytes + " bytes)");
    }
  }

  /** Whether a transfer in this direction converts (else native bytes move as they are). */
  boolean converts(boolean write) {
    return write ? datarep.convertsWrites() : datarep.convertsReads();
  }

  /** The stream bytes {@code from .. from + length - 1} as one request. */
  Slices.Placed slice(long from, long length) {
    return Slices.slice(fileType, view.displacement(), from, length);
  }

  /** The file offset of stream byte {@code pos}. */
  long fileOffset(long pos) {
    long size = fileType.size();
    if (fileType.isContiguous()) {
      return view.displacement() + fileType.lb() + pos;
    }
    long k = pos / size;
    RequestCursor c = RequestCursor.of(fileType, view.displacement() + k * fileType.extent(), size);
    Segments one = new Segments(1);
    RequestProcessor.processMemory(c, 1, one, pos % size, 1);
    return one.offset(0);
  }

  /** How many bytes of the stream lie before file offset {@code end} (the stream runs forward). */
  long streamBytesBefore(long end) {
    long disp = view.displacement();
    if (end <= disp) {
      return 0;
    }
    if (fileType.isContiguous()) {
      return Math.max(0, end - disp - fileType.lb());
    }
    long tiles = (end - disp + fileType.extent() - 1) / fileType.extent();
    long lo = 0;
    long hi = tiles * fileType.size(); // stream byte hi lies at or past end
    while (lo < hi) {
      long mid = (lo + hi) >>> 1;
      if (fileOffset(mid) < end) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /** The etype position of the end of a file of {@code size} bytes (a partial etype counts). */
  long endPosition(long size) {
    long b = streamBytesBefore(size);
    return (b + etypeBytes - 1) / etypeBytes;
  }

  /** The stream bytes (file form) {@code m} occupies; checks it is a whole number of etypes. */
  long fileBytes(Memory m) {
    if (m.count() == 0) {
      return 0;
    }
    long per = datarep.fileType(m.type()).size();
    long bytes = Math.multiplyExact(m.count(), per);
    if (m.dataBytes() % view.etype().size() != 0 || bytes % etypeBytes != 0) {
      throw new IllegalArgumentException(m + " is not a whole number of etypes " + view.etype());
    }
    return bytes;
  }
}
