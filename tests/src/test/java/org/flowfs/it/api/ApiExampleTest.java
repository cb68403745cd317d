package org.flowfs.it.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;
import org.flowfs.client.OpenFile;
import org.flowfs.common.request.Request;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The README's example runs, does what it says, and is the code the README shows. */
class ApiExampleTest {
  @Test
  void readmeExample_runs_andMatchesTheReadme(@TempDir Path dir) throws Exception {
    try (ApiCluster c = new ApiCluster(dir)) {
      String out = ApiExample.run(c.io, "/example-matrix");
      assertEquals("file of 312 bytes; read 4 doubles: 33.0 .. 36.0; ignored hints: [my_app_hint]", out);
      // element (3, 3) of the matrix, in external32: big-endian IEEE
      OpenFile f = c.client.open("/example-matrix", 0);
      ByteBuf raw = Unpooled.buffer(312, 312).writeZero(312);
      c.client.read(f, Request.bytes(312), 0, 312, raw, null);
      c.client.release(f);
      assertEquals(33.0, raw.getDouble(8 * (3 * 8 + 3)));
      assertEquals(4, c.client.getattr("/example-matrix").layout().serverCount());
    }
    String source = Files.readString(Path.of("src/test/java/org/flowfs/it/api/ApiExample.java"));
    String example = source.substring(source.indexOf("// README-BEGIN\n") + 16, source.indexOf("  // README-END"));
    String readme = Files.readString(Path.of("../README.md"));
    assertTrue(readme.contains(dedent(example)), "README.md shows ApiExample.run as it is:\n" + dedent(example));
  }

  private static String dedent(String s) {
    return s.lines().map(l -> l.startsWith("  ") ? l.substring(2) : l).collect(Collectors.joining("\n", "", "\n"));
  }
}
