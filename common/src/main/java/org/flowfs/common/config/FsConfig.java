package org.flowfs.common.config;

import java.util.regex.Pattern;

/**
 * File-system wide settings.
 *
 * @param name the file system's name (shown by {@code df} and {@code mount})
 * @param secret the shared secret members prove in a challenge-response; null: no authentication
 */
public record FsConfig(String name, String secret) {
  static FsConfig from(ConfigSource s) {
    String name = s.string("fs.name", "flowfs", Pattern.compile("[A-Za-z0-9_.-]{1,32}"), "a name of 1-32 letters, digits, '_', '.', '-'");
    String secret = s.has("fs.secret") ? s.secret("fs.secret", null, 16) : null;
    if (!s.has("fs.secret")) {
      s.string("fs.secret", "");
    }
    return new FsConfig(name, secret);
  }
}
