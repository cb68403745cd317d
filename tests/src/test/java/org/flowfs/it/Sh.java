package org.flowfs.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Runs shell commands the way a user types them, with a time limit. */
final class Sh {
  record Result(int exit, String out, String err) {}

  private Sh() {}

  static Result run(Path cwd, String script) {
    return run(cwd, script, 600);
  }

  static Result run(Path cwd, String script, int timeoutSeconds) {
    try {
      Process p = new ProcessBuilder("bash", "-c", script).directory(cwd.toFile()).start();
      CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> slurp(p, false));
      CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> slurp(p, true));
      if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
        throw new AssertionError("timed out after " + timeoutSeconds + " s: " + script);
      }
      return new Result(p.exitValue(), out.join(), err.join());
    } catch (IOException e) {
      throw new AssertionError("cannot run " + script, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted: " + script);
    }
  }

  private static String slurp(Process p, boolean err) {
    try {
      return new String((err ? p.getErrorStream() : p.getInputStream()).readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "";
    }
  }

  /** Runs a script that must succeed; returns its stdout. */
  static String ok(Path cwd, String script) {
    Result r = run(cwd, script);
    assertEquals(0, r.exit(), () -> "'" + script + "' failed with " + r.exit() + ":\n" + r.out() + r.err());
    return r.out();
  }

  /** Runs a script that must fail; returns its stderr. */
  static String fails(Path cwd, String script) {
    Result r = run(cwd, script);
    if (r.exit() == 0) {
      throw new AssertionError("'" + script + "' succeeded but should fail:\n" + r.out());
    }
    return r.err();
  }
}
