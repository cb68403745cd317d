package org.flowfs.cli;

import java.time.Duration;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.config.Values;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** The options every operator tool shares: the config, JSON output, how long to wait for a server. */
final class ToolOptions {
  @Mixin
  ConfigOption config;

  @Option(names = "--json", description = "Print one JSON object instead of text, for scripts.")
  boolean json;

  @Option(names = "--timeout", paramLabel = "DURATION", defaultValue = "5s",
      description = "How long to wait for each server's answer (default: ${DEFAULT-VALUE}).")
  String timeout;

  Duration timeout() {
    return Values.duration(timeout);
  }

  FlowFsConfig load() {
    return config.load();
  }
}
