package org.flowfs.meta;

import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.flowfs.common.Attr;
import org.flowfs.common.FileType;
import org.flowfs.common.Handle;
import org.flowfs.meta.MetadataStore.NewObject;

/**
 * The process {@link CrashRecoveryTest} kills: opens the MapDB store in {@code args[0]} and runs,
 * until killed, many concurrent chains of four mutations each (numbered from {@code args[1]}),
 * printing {@code ACK <chain> <step>} on stdout once a step's future completed, that is, once
 * the step was acknowledged.
 *
 * <p>Chain {@code i}: 1 mkdir {@code d<i>}; 2 create {@code d<i>/f}; 3 link it as {@code l<i>}
 * in the root; 4 rename {@code d<i>/f} to {@code d<i>/g}.
 */
final class CrashChild {
  static final int IN_FLIGHT = 32;
  private static final AtomicLong CLOCK = new AtomicLong(1_000_000_000);

  private CrashChild() {}

  public static void main(String[] args) throws Exception {
    // args[2]: the sync interval in ms (0: every commit forced to disk before it is acknowledged)
    MapDbMetadataStore store = new MapDbMetadataStore(Path.of(args[0]), 64, null,
        java.time.Duration.ofMillis(args.length > 2 ? Long.parseLong(args[2]) : 0));
    Semaphore slots = new Semaphore(IN_FLIGHT);
    for (int i = Integer.parseInt(args[1]); ; i++) {
      slots.acquire();
      chain(store, i).whenComplete((v, e) -> {
        if (e != null) {
          say("ERR " + e);
        }
        slots.release();
      });
    }
  }

  private static CompletableFuture<?> chain(MetadataStore store, int i) {
    NewObject dir = new NewObject(FileType.DIRECTORY, 0755, 0, 0, 0, null, null);
    NewObject file = new NewObject(FileType.REGULAR, 0644, 0, 0, 0, null, null);
    return store.create(Handle.ROOT, "d" + i, dir, now())
        .thenCompose(d -> ack(i, 1, d))
        .thenCompose(d -> store.create(d.handle(), "f", file, now())
            .thenCompose(f -> ack(i, 2, f))
            .thenCompose(f -> store.link(f.handle(), Handle.ROOT, "l" + i, now()))
            .thenCompose(f -> ack(i, 3, f))
            .thenCompose(f -> store.rename(d.handle(), "f", d.handle(), "g", 0, now()))
            .thenAccept(r -> ack(i, 4, r.moved())));
  }

  /** Prints the ack, then goes on after a random pause, so chains do not move in lockstep. */
  private static CompletableFuture<Attr> ack(int chain, int step, Attr a) {
    say("ACK " + chain + " " + step);
    long pauseUs = ThreadLocalRandom.current().nextLong(2000);
    return CompletableFuture.supplyAsync(() -> a, CompletableFuture.delayedExecutor(pauseUs, TimeUnit.MICROSECONDS));
  }

  private static synchronized void say(String line) {
    System.out.println(line);
    System.out.flush();
  }

  private static long now() {
    return CLOCK.addAndGet(1000);
  }
}
