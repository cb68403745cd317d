package org.flowfs.common.dist;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.junit.jupiter.api.Test;

class DirStripeTest {
  @Test
  void parse_formats() {
    assertEquals(new DirStripe(1 << 20, 2), DirStripe.parse("strip_size=1048576 servers=2"));
    assertEquals(new DirStripe(1 << 20, 2), DirStripe.parse(" strip-size=1MiB,servers=2\n"));
    assertEquals(new DirStripe(8192, 0), DirStripe.parse("strip_size=8k"));
    assertEquals(new DirStripe(0, 3), DirStripe.parse("servers=3"));
  }

  @Test
  void format_thenParse_roundTrips() {
    for (DirStripe s : List.of(new DirStripe(4096, 1), new DirStripe(1L << 30, 0), new DirStripe(0, 7), new DirStripe(0, 0))) {
      assertEquals(s, DirStripe.parse(s.format()));
    }
    assertEquals("strip_size=65536 servers=4", new DirStripe(65536, 4).format());
  }

  @Test
  void parse_badValues_areEinval() {
    for (String bad : List.of("", "strip_size=3000", "strip_size=2048", "strip_size=2GiB", "servers=-1",
        "stripes=2", "strip_size", "servers=two", "strip_size=1x")) {
      FsException e = assertThrows(FsException.class, () -> DirStripe.parse(bad), bad);
      assertEquals(Errno.EINVAL, e.errno(), bad);
    }
  }

  @Test
  void checkServers_moreThanExist_isEinval() {
    assertEquals(Errno.EINVAL, assertThrows(FsException.class, () -> new DirStripe(0, 5).checkServers(4)).errno());
    assertEquals(new DirStripe(0, 4), new DirStripe(0, 4).checkServers(4));
  }
}
