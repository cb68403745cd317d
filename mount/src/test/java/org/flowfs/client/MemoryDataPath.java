package org.flowfs.client;

import io.netty.buffer.ByteBuf;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.Layout;
import org.flowfs.common.dist.Distribution;
import org.flowfs.common.dist.Distributions;

/**
 * A {@link DataPath} over a byte array per datafile, mapped with the layout's distribution (not
 * with {@link StripeMap}, so tests of its users do not depend on it). It logs every call, and
 * tests control, per call number, how long a call takes and whether it fails.
 *
 * <p>A write's bytes land in the datafiles when the call completes, as they would reach a server
 * after a slow network: a later write that overtook an earlier one would be overwritten by it. A
 * read reserves its bytes in {@code dst} at once and fills them when it completes. Thread safe.
 */
final class MemoryDataPath implements DataPath, AutoCloseable {
  /** One call: its number (from 0, writes and reads counted apart), offset and length. */
  record Call(int n, long offset, int length) {}

  private final Map<Handle, byte[]> datafiles = new HashMap<>();
  private final Map<Handle, Integer> sizes = new HashMap<>();
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "memory-data-path");
    t.setDaemon(true);
    return t;
  });
  private final List<Call> writes = new ArrayList<>();
  private final List<Call> reads = new ArrayList<>();
  /** The region count of each noncontiguous write, in order. */
  private final List<Integer> regionWrites = new ArrayList<>();
  private final AtomicInteger writesInFlight = new AtomicInteger();
  private final AtomicInteger maxWritesInFlight = new AtomicInteger();
  /** Writes whose future's callbacks have not all run yet. */
  private final AtomicInteger writesUnsettled = new AtomicInteger();
  private volatile IntFunction<Long> writeDelayMs = n -> 0L;
  private volatile IntFunction<Long> readDelayMs = n -> 0L;
  private volatile IntFunction<Errno> writeFailure = n -> null;
  private volatile IntFunction<Errno> readFailure = n -> null;

  /** Write number {@code n} completes after this many ms (0: before write() returns; negative: never). */
  MemoryDataPath writeDelay(IntFunction<Long> ms) {
    this.writeDelayMs = ms;
    return this;
  }

  MemoryDataPath readDelay(IntFunction<Long> ms) {
    this.readDelayMs = ms;
    return this;
  }

  /** Write number {@code n} fails with this errno (null: succeeds); a failed write stores nothing. */
  MemoryDataPath writeFailure(IntFunction<Errno> errno) {
    this.writeFailure = errno;
    return this;
  }

  MemoryDataPath readFailure(IntFunction<Errno> errno) {
    this.readFailure = errno;
    return this;
  }

  @Override
  public CompletableFuture<Void> write(Layout layout, long offset, ByteBuf data) {
    return write(layout, new long[] {offset}, new long[] {data.readableBytes()}, data);
  }

  /**
   * Logged as one call: the first region's start and the bytes of all of them; a write of more
   * than one region also in {@link #regionWrites()}.
   */
  @Override
  public CompletableFuture<Void> write(Layout layout, long[] starts, long[] lengths, ByteBuf data) {
    for (int i = 1; i < starts.length; i++) {
      if (starts[i] < starts[i - 1] + lengths[i - 1]) {
        data.release();
        throw new IllegalArgumentException("regions not ascending and disjoint: " + Arrays.toString(starts));
      }
    }
    byte[] bytes;
    try {
      bytes = new byte[data.readableBytes()];
      data.getBytes(data.readerIndex(), bytes);
    } finally {
      data.release();
    }
    Call call;
    synchronized (this) {
      call = new Call(writes.size(), starts[0], bytes.length);
      writes.add(call);
      if (starts.length > 1) {
        regionWrites.add(starts.length);
      }
    }
    maxWritesInFlight.accumulateAndGet(writesInFlight.incrementAndGet(), Math::max);
    writesUnsettled.incrementAndGet();
    return complete(writeDelayMs.apply(call.n()), writeFailure.apply(call.n()), () -> {
      int at = 0;
      for (int i = 0; i < starts.length; i++) {
        store(layout, starts[i], Arrays.copyOfRange(bytes, at, at + (int) lengths[i]));
        at += (int) lengths[i];
      }
    }, writesInFlight::decrementAndGet, writesUnsettled::decrementAndGet);
  }

  @Override
  public CompletableFuture<Void> read(Layout layout, long offset, int length, ByteBuf dst) {
    Call call;
    synchronized (this) {
      call = new Call(reads.size(), offset, length);
      reads.add(call);
    }
    int base = dst.writerIndex();
    dst.ensureWritable(length);
    dst.setZero(base, length);
    dst.writerIndex(base + length);
    return complete(readDelayMs.apply(call.n()), readFailure.apply(call.n()),
        () -> dst.setBytes(base, load(layout, offset, length)), () -> { }, () -> { });
  }

  /**
   * A future completed after {@code delayMs}: with {@code fail}, or after {@code success} ran.
   * {@code before} runs just before it completes, {@code after} once its callbacks have run.
   */
  private CompletableFuture<Void> complete(long delayMs, Errno fail, Runnable success, Runnable before, Runnable after) {
    CompletableFuture<Void> f = new CompletableFuture<>();
    Runnable finish = () -> {
      before.run();
      if (fail != null) {
        f.completeExceptionally(new FsException(fail, "injected"));
      } else {
        success.run();
        f.complete(null);
      }
      after.run();
    };
    if (delayMs == 0) {
      finish.run();
    } else if (delayMs > 0) {
      timer.schedule(finish, delayMs, TimeUnit.MILLISECONDS);
    }
    return f;
  }

  /** Puts {@code bytes} at logical {@code offset} of the file, as its datafiles' servers would. */
  synchronized void store(Layout layout, long offset, byte[] bytes) {
    Distribution d = Distributions.of(layout.dist());
    int n = layout.serverCount();
    long pos = offset;
    long end = offset + bytes.length;
    while (pos < end) {
      int s = d.serverOf(pos, n);
      int len = (int) Math.min(d.contiguousLength(pos, n), end - pos);
      long phys = d.logicalToPhysical(pos, n);
      Handle h = layout.datafiles().get(s);
      byte[] df = datafiles.getOrDefault(h, new byte[0]);
      int need = Math.toIntExact(phys + len);
      if (df.length < need) {
        df = Arrays.copyOf(df, Math.max(need, df.length * 2));
        datafiles.put(h, df);
      }
      System.arraycopy(bytes, (int) (pos - offset), df, (int) phys, len);
      sizes.merge(h, need, Math::max);
      pos += len;
    }
  }

  /** The logical bytes {@code [offset, offset + length)}; what no datafile holds reads as zeros. */
  synchronized byte[] load(Layout layout, long offset, int length) {
    Distribution d = Distributions.of(layout.dist());
    int n = layout.serverCount();
    byte[] out = new byte[length];
    long pos = offset;
    long end = offset + length;
    while (pos < end) {
      int s = d.serverOf(pos, n);
      int len = (int) Math.min(d.contiguousLength(pos, n), end - pos);
      long phys = d.logicalToPhysical(pos, n);
      Handle h = layout.datafiles().get(s);
      int have = sizes.getOrDefault(h, 0);
      if (phys < have) {
        System.arraycopy(datafiles.get(h), (int) phys, out, (int) (pos - offset), (int) Math.min(len, have - phys));
      }
      pos += len;
    }
    return out;
  }

  synchronized List<Call> writes() {
    return List.copyOf(writes);
  }

  /** The region count of each noncontiguous write, in order. */
  synchronized List<Integer> regionWrites() {
    return List.copyOf(regionWrites);
  }

  synchronized List<Call> reads() {
    return List.copyOf(reads);
  }

  /** Writes not completed yet. */
  int writesInFlight() {
    return writesInFlight.get();
  }

  /** Writes not completed yet, or whose completion callbacks are still running. */
  int writesUnsettled() {
    return writesUnsettled.get();
  }

  int maxWritesInFlight() {
    return maxWritesInFlight.get();
  }

  @Override
  public void close() {
    timer.shutdownNow();
  }
}
