package org.flowfs.it.api;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.EnumSet;
import org.flowfs.client.api.AccessMode;
import org.flowfs.client.api.FlowFile;
import org.flowfs.client.api.FlowIo;
import org.flowfs.client.api.Hints;
import org.flowfs.client.api.Memory;
import org.flowfs.client.api.View;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.datarep.Datarep;
import org.flowfs.common.request.Request;

/**
 * The example of the README's "Java API" section, which {@link ApiExampleTest} runs and compares
 * with the README. {@code main} runs it against a running file system: {@code ApiExample CONFIG}.
 */
public final class ApiExample {
  private ApiExample() {}

  public static void main(String[] args) {
    try (FlowIo io = FlowIo.connect(FlowFsConfig.load(Path.of(args[0])))) {
      System.out.println(run(io, "/example-matrix"));
    }
  }

  // README-BEGIN
  /** Writes this process's 3 x 4 block of a 6 x 8 matrix of doubles, then reads a row of it back. */
  static String run(FlowIo io, String path) {
    Request block = Request.subarray(new long[] {6, 8}, new long[] {3, 4}, new long[] {2, 3},
        Request.Order.C, Request.DOUBLE);
    try (FlowFile f = io.open(path, EnumSet.of(AccessMode.CREATE, AccessMode.READ_WRITE),
        Hints.of(Hints.STRIPING_FACTOR, "4", "my_app_hint", "42"))) {
      f.setView(View.of(0, Request.DOUBLE, block, Datarep.EXTERNAL32)); // big-endian in the file
      ByteBuffer mine = ByteBuffer.allocateDirect(12 * 8).order(ByteOrder.nativeOrder());
      for (int i = 0; i < 12; i++) {
        mine.putDouble(8 * i, 10 * (2 + i / 4) + 3 + i % 4); // element (r, c) holds 10 r + c
      }
      f.write(Memory.of(mine, 12, Request.DOUBLE)); // one request, one flow per I/O server
      ByteBuffer row = ByteBuffer.allocateDirect(4 * 8).order(ByteOrder.nativeOrder());
      long got = f.readAtAsync(4, Memory.of(row, 4, Request.DOUBLE)).join(); // the block's 2nd row
      return "file of " + f.size() + " bytes; read " + got / 8 + " doubles: " + row.getDouble(0)
          + " .. " + row.getDouble(24) + "; ignored hints: " + f.ignoredHints().keySet();
    }
  }
  // README-END
}
