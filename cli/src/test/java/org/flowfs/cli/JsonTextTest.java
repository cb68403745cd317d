package org.flowfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonTextTest {
  @Test
  void write_thenParse_roundTrips() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("name", "io \"0\"\n\\");
    m.put("n", 42L);
    m.put("ok", true);
    m.put("none", null);
    m.put("list", List.of(1L, "two", List.of()));
    m.put("nested", Map.of("k", -7L));
    assertEquals(m, JsonText.parse(JsonText.write(m)));
  }

  @Test
  void parse_numbersAndBlanks() {
    assertEquals(List.of(1L, -2L, 2.5, 1e3), JsonText.parse(" [ 1 , -2,2.5 ,1e3 ] "));
    assertEquals(Map.of(), JsonText.parse("{}"));
    assertEquals("\u00e9\t", JsonText.parse("\"\\u00e9\\t\""));
    assertEquals(Arrays.asList(true, false, null), JsonText.parse("[true,false,null]"));
  }

  @Test
  void parse_badText_fails() {
    for (String bad : List.of("", "{", "[1,]", "{\"a\" 1}", "\"open", "[1] x", "{\"a\":}")) {
      assertThrows(IllegalArgumentException.class, () -> JsonText.parse(bad), bad);
    }
  }
}
