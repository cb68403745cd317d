package org.flowfs.common.config;

import java.util.regex.Pattern;

/**
 * File-system wide settings.
 *
 * @param name the file system's name (shown by {@code df} and {@code mount})
 * @param secret the shared secret every server and client proves at connect (challenge-response);
 *     required: a config without it is refused
 */
public record FsConfig(String name, String secret) {
  /** The shortest secret accepted. */
  public static final int MIN_SECRET = 16;

  static FsConfig from(ConfigSource s) {
    String name = s.string("fs.name", "flowfs", Pattern.compile("[A-Za-z0-9_.-]{1,32}"), "a name of 1-32 letters, digits, '_', '.', '-'");
    String secret;
    if (s.has("fs.secret")) {
      secret = s.secret("fs.secret", null, MIN_SECRET);
    } else {
      s.string("fs.secret", ""); // read, so it is not also reported as unknown
      s.problem("key 'fs.secret' is required but missing: the shared secret (" + MIN_SECRET
          + " characters or more) with which every server and client of the file system proves it is a member;"
          + " 'flowfs up' writes one, or make one with 'openssl rand -hex 24' and put the same value in every"
          + " process's config");
      secret = null;
    }
    return new FsConfig(name, secret);
  }

  @Override
  public String toString() {
    return "FsConfig[name=" + name + ", secret=" + (secret == null ? "none" : "(" + secret.length() + " characters)") + "]";
  }
}
