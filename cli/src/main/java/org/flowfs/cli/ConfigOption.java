package org.flowfs.cli;

import java.nio.file.Path;
import org.flowfs.common.config.FlowFsConfig;
import picocli.CommandLine.Option;

/** The {@code --config FILE} option every role shares. */
final class ConfigOption {
  static final String DEFAULT = "/etc/flowfs/flowfs.conf";

  @Option(names = {"-c", "--config"}, paramLabel = "FILE", defaultValue = DEFAULT,
      description = "The file system's config file (default: ${DEFAULT-VALUE}).")
  Path file;

  FlowFsConfig load() {
    return FlowFsConfig.load(file);
  }
}
