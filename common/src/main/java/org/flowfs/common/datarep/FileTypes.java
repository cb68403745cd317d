package org.flowfs.common.datarep;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.flowfs.common.request.Elementary;
import org.flowfs.common.request.Request;

/** {@link Datarep#fileType}: a datatype rebuilt with a representation's file extents. */
final class FileTypes {
  private FileTypes() {}

  static Request of(Datarep rep, Request type) {
    boolean same = true;
    for (Elementary e : Elementary.values()) {
      same &= rep.fileExtent(e) == e.size();
    }
    return same ? type : rebuild(rep, type, new IdentityHashMap<>());
  }

  private static Request rebuild(Datarep rep, Request t, Map<Request, Request> done) {
    Request known = done.get(t);
    if (known != null) {
      return known;
    }
    Request r;
    switch (t.combiner()) {
      case NAMED: {
        Elementary e = t.named().orElseThrow();
        long ext = rep.fileExtent(e);
        if (ext <= 0) {
          throw new IllegalArgumentException("datarep " + rep.name() + " gives " + e.typeName() + " file extent " + ext);
        }
        r = ext == e.size() ? t : Request.contiguous(ext, Request.BYTE);
        break;
      }
      case CONTIGUOUS:
        r = Request.contiguous(t.count(), rebuild(rep, t.types().get(0), done));
        break;
      case VECTOR:
        r = Request.vector(t.count(), t.blockLength(), t.stride(), rebuild(rep, t.types().get(0), done));
        break;
      case HVECTOR:
        r = Request.hvector(t.count(), t.blockLength(), t.stride(), rebuild(rep, t.types().get(0), done));
        break;
      case INDEXED:
        r = Request.indexed(t.blockLengths(), t.displacements(), rebuild(rep, t.types().get(0), done));
        break;
      case HINDEXED:
        r = Request.hindexed(t.blockLengths(), t.displacements(), rebuild(rep, t.types().get(0), done));
        break;
      case STRUCT: {
        List<Request> parts = new ArrayList<>();
        for (Request p : t.types()) {
          parts.add(rebuild(rep, p, done));
        }
        r = Request.struct(t.blockLengths(), t.displacements(), parts);
        break;
      }
      case SUBARRAY:
        r = Request.subarray(t.sizes(), t.subsizes(), t.starts(), t.order().orElseThrow(),
            rebuild(rep, t.types().get(0), done));
        break;
      case RESIZED: {
        long[] d = t.displacements();
        r = Request.resized(d[0], d[1], rebuild(rep, t.types().get(0), done));
        break;
      }
      default:
        throw new AssertionError(t.combiner());
    }
    done.put(t, r);
    return r;
  }
}
