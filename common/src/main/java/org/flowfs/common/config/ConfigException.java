package org.flowfs.common.config;

import java.util.List;

/** A configuration that cannot be used; each problem names its key. */
public final class ConfigException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final List<String> problems;

  public ConfigException(List<String> problems) {
    super(String.join("\n", problems));
    this.problems = List.copyOf(problems);
  }

  public ConfigException(String problem) {
    this(List.of(problem));
  }

  public List<String> problems() {
    return problems;
  }
}
