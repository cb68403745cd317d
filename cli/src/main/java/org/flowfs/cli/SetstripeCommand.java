package org.flowfs.cli;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import org.flowfs.client.FileSystemClient;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.config.Values;
import org.flowfs.common.dist.DirStripe;
import org.flowfs.common.rpc.NetRuntime;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code flowfs setstripe DIR}: the default layout of new files in a directory. */
@Command(name = "setstripe", mixinStandardHelpOptions = true,
    description = {"Set (or show, without options) the default layout of the regular files created in a directory "
        + "from now on: strip size and number of I/O servers. Files already there keep theirs; "
        + "subdirectories do not inherit it.",
        "It is stored as the extended attribute flowfs.stripe of the directory (text 'strip_size=N servers=M'), "
            + "so 'getfattr -n flowfs.stripe DIR' shows it and 'setfattr -n flowfs.stripe -v ... DIR' sets it too.",
        "DIR is a directory on a mounted FlowFS, or an absolute path inside the file system of --config."})
final class SetstripeCommand implements Callable<Integer> {
  @Mixin
  ToolOptions options;

  @Parameters(index = "0", paramLabel = "DIR", description = "The directory.")
  String dir;

  @Option(names = {"-S", "--strip-size"}, paramLabel = "SIZE",
      description = "Strip size: a power of two from 4KiB to 1GiB (e.g. 1MiB). Unset: the file system's layout.strip-size.")
  String stripSize;

  @Option(names = "--servers", paramLabel = "N",
      description = "I/O servers (datafiles) per new file, 1 to the number of I/O servers. "
          + "Unset or 0: the file system's layout.servers.")
  Integer servers;

  @Option(names = "--clear", description = "Remove the directory's default: new files get the file system's.")
  boolean clear;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    boolean set = stripSize != null || servers != null;
    if (set && clear) {
      throw new FsException(Errno.EINVAL, "--clear and --strip-size/--servers exclude each other");
    }
    DirStripe wanted = null;
    if (set) {
      long strip = 0;
      if (stripSize != null) {
        try {
          strip = Values.size(stripSize);
        } catch (IllegalArgumentException e) {
          throw new FsException(Errno.EINVAL, "--strip-size " + stripSize + ": " + e.getMessage());
        }
      }
      wanted = new DirStripe(strip, servers == null ? 0 : servers);
    }
    DirStripe now;
    String shown;
    Tools.OnMount m = Tools.onMount(Path.of(dir));
    if (m != null) {
      if (!Files.isDirectory(m.local())) {
        throw new FsException(Errno.ENOTDIR, dir + " is not a directory");
      }
      String p = m.local().toString();
      if (wanted != null) {
        LibC.setxattr(p, DirStripe.XATTR, wanted.bytes());
      } else if (clear) {
        removeQuietly(() -> LibC.removexattr(p, DirStripe.XATTR));
      }
      now = readOrNull(() -> LibC.getxattr(p, DirStripe.XATTR));
      shown = m.local().toString();
    } else {
      if (!dir.startsWith("/")) {
        throw new FsException(Errno.ENOENT, dir + " is not on a mounted FlowFS; give a directory on a mount, or an "
            + "absolute path inside the file system of " + options.config.file);
      }
      try (NetRuntime net = NetRuntime.create("tool-client", 1);
           FileSystemClient client = new FileSystemClient(options.load(), net)) {
        if (!client.getattr(dir).isDir()) {
          throw new FsException(Errno.ENOTDIR, dir + " is not a directory");
        }
        if (wanted != null) {
          client.setxattr(dir, DirStripe.XATTR, wanted.bytes(), 0);
        } else if (clear) {
          removeQuietly(() -> client.removexattr(dir, DirStripe.XATTR));
        }
        now = readOrNull(() -> client.getxattr(dir, DirStripe.XATTR));
      }
      shown = dir;
    }
    if (options.json) {
      Map<String, Object> doc = new LinkedHashMap<>();
      doc.put("path", shown);
      doc.put("set", now != null);
      doc.put("strip_size", now == null ? 0L : now.stripSize());
      doc.put("servers", now == null ? 0 : now.servers());
      doc.put("xattr", now == null ? null : now.format());
      out.println(JsonText.write(doc));
    } else if (now == null) {
      out.println(shown + ": no default layout: new files get the file system's (layout.* in the config)");
    } else {
      out.println(shown + ": " + DirStripe.XATTR + " = " + now.format() + "  (strip size "
          + (now.stripSize() == 0 ? "the file system's" : Tools.human(now.stripSize())) + ", "
          + (now.servers() == 0 ? "the file system's number of" : String.valueOf(now.servers())) + " I/O servers per new file)");
    }
    out.flush();
    return 0;
  }

  private interface Read {
    byte[] get();
  }

  private static DirStripe readOrNull(Read r) {
    try {
      return DirStripe.parse(r.get());
    } catch (FsException e) {
      if (e.errno() == Errno.ENODATA) {
        return null;
      }
      throw e;
    }
  }

  private static void removeQuietly(Runnable r) {
    try {
      r.run();
    } catch (FsException e) {
      if (e.errno() != Errno.ENODATA) {
        throw e;
      }
    }
  }
}
