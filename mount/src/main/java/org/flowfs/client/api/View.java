package org.flowfs.client.api;

import java.util.Objects;
import org.flowfs.common.datarep.Datarep;
import org.flowfs.common.request.Request;

/**
 * A file view (MPI's {@code MPI_File_set_view}; seed 004's layout): which bytes of the file a
 * process sees and how they are represented. The view's data stream is the data of {@code
 * filetype} tiled from byte {@code displacement} (instance {@code k} at {@code displacement + k *
 * filetype.extent()}); offsets and file pointers count {@code etype}s in that stream; {@code
 * datarep} names the representation of the values in the file (see {@link Datarep}). With a
 * representation whose file extents differ from the native sizes, etype and filetype are laid out
 * with the file extents ({@link Datarep#fileType}).
 *
 * <p>As MPI requires: the displacement is not negative, the filetype's data lies at non-negative
 * offsets in increasing order and is a whole number of etypes, and consecutive instances do not
 * overlap ({@code trueExtent <= extent}), so the stream runs forward through the file.
 *
 * @param displacement where the view starts, in bytes from the start of the file
 * @param etype the unit of offsets and positions
 * @param filetype the pattern tiled over the file
 * @param datarep the name of the representation, in the file's {@code DatarepRegistry}
 */
public record View(long displacement, Request etype, Request filetype, String datarep) {
  /** The default view: every byte from offset 0, {@value Datarep#NATIVE}. */
  public static final View BYTES = new View(0, Request.BYTE, Request.BYTE, Datarep.NATIVE);

  public View {
    Objects.requireNonNull(etype, "etype");
    Objects.requireNonNull(filetype, "filetype");
    Objects.requireNonNull(datarep, "datarep");
    if (displacement < 0) {
      throw new IllegalArgumentException("negative view displacement " + displacement);
    }
    if (etype.size() <= 0 || filetype.size() <= 0) {
      throw new IllegalArgumentException("etype and filetype must have data");
    }
    if (filetype.size() % etype.size() != 0) {
      throw new IllegalArgumentException("filetype of " + filetype.size() + " bytes is not a whole number of "
          + etype.size() + "-byte etypes");
    }
    checkTiling(filetype, "filetype");
  }

  /** A view in the {@value Datarep#NATIVE} representation. */
  public static View of(long displacement, Request etype, Request filetype) {
    return new View(displacement, etype, filetype, Datarep.NATIVE);
  }

  /** A view in the representation called {@code datarep}. */
  public static View of(long displacement, Request etype, Request filetype, String datarep) {
    return new View(displacement, etype, filetype, datarep);
  }

  /** This view with another representation. */
  public View withDatarep(String name) {
    return new View(displacement, etype, filetype, name);
  }

  static void checkTiling(Request t, String what) {
    if (t.extent() <= 0) {
      throw new IllegalArgumentException(what + " needs a positive extent, not " + t.extent());
    }
    if (!t.isMonotone() || t.trueLb() < 0) {
      throw new IllegalArgumentException(what + " data must lie at non-negative, increasing offsets: " + t);
    }
    if (t.trueExtent() > t.extent()) {
      throw new IllegalArgumentException(what + " instances would overlap (true extent " + t.trueExtent()
          + " > extent " + t.extent() + ")");
    }
  }
}
