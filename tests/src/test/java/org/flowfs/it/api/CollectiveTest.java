package org.flowfs.it.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import org.flowfs.cli.EmbeddedCluster;
import org.flowfs.cli.LoopbackPorts;
import org.flowfs.client.Caller;
import org.flowfs.client.FileSystemClient;
import org.flowfs.client.OpenFile;
import org.flowfs.client.api.AccessMode;
import org.flowfs.client.api.FlowFile;
import org.flowfs.client.api.FlowIo;
import org.flowfs.client.api.Group;
import org.flowfs.client.api.Hints;
import org.flowfs.client.api.Memory;
import org.flowfs.client.api.View;
import org.flowfs.common.config.FlowFsConfig;
import org.flowfs.common.datarep.Datarep;
import org.flowfs.common.datarep.NativeOrder;
import org.flowfs.common.request.Request;
import org.flowfs.common.rpc.NetRuntime;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Collective two-phase I/O: ranks as threads with a client each, and ranks as separate processes
 * meeting over TCP. The file must hold exactly the matrix, and aggregators must have moved it in
 * a few large contiguous transfers, not one per piece.
 */
class CollectiveTest {
  static Path conf;
  static EmbeddedCluster cluster;
  static NetRuntime net;
  static FileSystemClient checker;
  static final AtomicInteger files = new AtomicInteger();

  @BeforeAll
  static void up(@TempDir Path dir) throws Exception {
    // fixed ports in the config file, so member processes find the servers from it
    conf = dir.resolve("flowfs.conf");
    Files.writeString(conf, EmbeddedCluster.configText(dir, 4, LoopbackPorts.block(5)));
    cluster = EmbeddedCluster.start(FlowFsConfig.load(conf));
    net = NetRuntime.create("collective", 2);
    checker = new FileSystemClient(cluster.config(), net);
  }

  @AfterAll
  static void down() {
    if (checker != null) {
      checker.close();
    }
    if (net != null) {
      net.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }


  /** Runs {@code body(file, rank)} in {@code size} threads, each a rank with its own client. */
  static <T> List<T> ranks(int size, String path, EnumSet<AccessMode> mode, Hints hints,
      BiFunction<FlowFile, Integer, T> body, long[] typedWrites) throws Exception {
    List<Group> group = Group.local(size, Duration.ofSeconds(60));
    ExecutorService pool = Executors.newFixedThreadPool(size);
    try {
      List<Future<T>> out = new ArrayList<>();
      for (int r = 0; r < size; r++) {
        int rank = r;
        out.add(pool.submit((Callable<T>) () -> {
          try (FileSystemClient client = new FileSystemClient(cluster.config(), net)) {
            FlowIo io = FlowIo.over(client, Caller.ROOT);
            try (FlowFile f = io.open(group.get(rank), path, mode, hints)) {
              T t = body.apply(f, rank);
              if (typedWrites != null) {
                synchronized (typedWrites) {
                  typedWrites[0] += client.counters().get("write.typed-async");
                  typedWrites[1] += client.counters().get("read.typed-async");
                }
              }
              return t;
            } finally {
              io.close();
            }
          }
        }));
      }
      List<T> results = new ArrayList<>();
      for (Future<T> f : out) {
        results.add(f.get(120, TimeUnit.SECONDS));
      }
      return results;
    } finally {
      pool.shutdownNow();
    }
  }

  /** The whole file through a client of its own (opened after the writers closed it). */
  static ByteBuf wholeFile(String path) {
    OpenFile f = checker.open(path, 0);
    try {
      long size = checker.getattr(path).size();
      ByteBuf b = Unpooled.buffer((int) size, (int) size).writeZero((int) size);
      checker.read(f, Request.bytes(size), 0, size, b, null);
      return b;
    } finally {
      checker.release(f);
    }
  }

  static void checkMatrix(ByteBuf file, boolean bigEndian) {
    assertEquals(8 * Collective.ROWS * Collective.COLS, file.readableBytes());
    for (int i = 0; i < Collective.ROWS; i++) {
      for (int j = 0; j < Collective.COLS; j++) {
        int at = 8 * (i * Collective.COLS + j);
        long v = bigEndian ? file.getLong(at) : NativeOrder.getLong(file, at);
        assertEquals(Collective.value(i, j), v, "element (" + i + "," + j + ")");
      }
    }
  }

  @ParameterizedTest(name = "{0} ranks, cb_buffer_size {1}, cb_nodes {2}, {3}")
  @CsvSource({"4, 16777216, 0, native", "4, 1000, 2, native", "4, 777, 3, external32", "2, 4096, 0, native",
      "1, 512, 0, native"})
  void threadRanks_writeAndReadAMatrixCollectively(int size, String cb, int nodes, String datarep) throws Exception {
    String path = "/coll-" + files.incrementAndGet();
    Hints h = Hints.of(Hints.CB_BUFFER_SIZE, cb, Hints.STRIPING_UNIT, "1024");
    if (nodes > 0) {
      h = h.with(Hints.CB_NODES, Integer.toString(nodes));
    }
    long[] ops = new long[2];
    ranks(size, path, EnumSet.of(AccessMode.CREATE, AccessMode.READ_WRITE), h, (f, rank) -> {
      Collective.write(f, rank, size, datarep);
      return null;
    }, ops);
    checkMatrix(wholeFile(path), datarep.equals(Datarep.EXTERNAL32));
    long windows = (8L * Collective.ROWS * Collective.COLS + Long.parseLong(cb) - 1) / Long.parseLong(cb);
    int aggs = nodes > 0 ? nodes : Math.min(size, 4);
    assertTrue(ops[0] <= windows + aggs, ops[0] + " typed writes for " + windows + " windows: aggregators write whole windows");
    assertEquals(0, ops[1], "the blocks cover every window: no read-modify-write");

    List<String> problems = ranks(size, path, EnumSet.of(AccessMode.READ_ONLY), h,
        (f, rank) -> Collective.readAndCheck(f, rank, size, datarep), null);
    for (String p : problems) {
      assertNull(p);
    }
  }

  @Test
  void collectiveWrite_withHoles_keepsTheBytesBetween() throws Exception {
    String path = "/coll-" + files.incrementAndGet();
    int longs = 8 * 500;
    ByteBuf pattern = Unpooled.buffer(8 * longs).writeZero(8 * longs);
    for (int i = 0; i < 8 * longs; i++) {
      pattern.setByte(i, 0xAB);
    }
    try (FileSystemClient client = new FileSystemClient(cluster.config(), net)) {
      OpenFile of = client.create(path, 0644, 0, Caller.ROOT);
      client.write(of, Request.bytes(8L * longs), 0, 8L * longs, pattern, null);
      client.release(of);
    }
    int size = 4;
    ranks(size, path, EnumSet.of(AccessMode.READ_WRITE), Hints.of(Hints.CB_BUFFER_SIZE, "3000"), (f, rank) -> {
      // rank r writes long 2r of every 8: longs 2r+1 stay as they were
      f.setView(View.of(16L * rank, Request.INT64, Request.resized(0, 64, Request.INT64)));
      int n = longs / 8;
      ByteBuf m = Unpooled.buffer(8 * n, 8 * n).writeZero(8 * n);
      for (int k = 0; k < n; k++) {
        NativeOrder.setLong(m, 8 * k, 100L * k + rank);
      }
      f.writeAtAll(0, Memory.of(m, n, Request.INT64));
      return null;
    }, null);
    ByteBuf file = wholeFile(path);
    for (int k = 0; k < longs / 8; k++) {
      for (int slot = 0; slot < 8; slot++) {
        int at = 8 * (8 * k + slot);
        if (slot % 2 == 0) {
          assertEquals(100L * k + slot / 2, NativeOrder.getLong(file, at), "written long " + (8 * k + slot));
        } else {
          assertEquals(0xABABABABABABABABL, file.getLong(at), "hole " + (8 * k + slot));
        }
      }
    }
  }

  @Test
  void groupOpen_createsOnce_failsTogether_andDeletesOnCloseOnce() throws Exception {
    String path = "/coll-" + files.incrementAndGet();
    List<String> seen = ranks(3, path, EnumSet.of(AccessMode.CREATE, AccessMode.EXCLUSIVE, AccessMode.READ_WRITE,
        AccessMode.DELETE_ON_CLOSE), Hints.of(Hints.STRIPING_FACTOR, "2", "unknown_key", "x"),
        (f, rank) -> f.hints().get(Hints.STRIPING_FACTOR).orElseThrow() + " " + f.ignoredHints().keySet(), null);
    assertEquals(List.of("2 [unknown_key]", "2 [unknown_key]", "2 [unknown_key]"), seen);
    org.flowfs.common.FsException gone = org.junit.jupiter.api.Assertions.assertThrows(
        org.flowfs.common.FsException.class, () -> checker.getattr(path));
    assertEquals(org.flowfs.common.Errno.ENOENT, gone.errno());

    java.util.concurrent.ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(
        java.util.concurrent.ExecutionException.class,
        () -> ranks(3, path + "-missing", EnumSet.of(AccessMode.READ_ONLY), Hints.NONE, (f, rank) -> null, null));
    assertEquals(org.flowfs.common.Errno.ENOENT, ((org.flowfs.common.FsException) e.getCause()).errno());
  }

  @Test
  void processRanks_writeAndReadCollectively() throws Exception {
    int size = 3;
    String path = "/coll-proc-" + files.incrementAndGet();
    for (String phase : new String[] {"write", "read"}) {
      int port = LoopbackPorts.block(1);
      List<Process> procs = new ArrayList<>();
      Path log = conf.getParent().resolve("member-" + phase + ".log");
      for (int r = 0; r < size; r++) {
        procs.add(new ProcessBuilder(command(conf.toString(), Integer.toString(r), Integer.toString(size),
            Integer.toString(port), path, phase, Datarep.EXTERNAL32))
            .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start());
      }
      for (Process p : procs) {
        assertTrue(p.waitFor(90, TimeUnit.SECONDS), "member did not finish");
        assertEquals(0, p.exitValue(), () -> phase + " failed:\n" + read(log));
      }
      if (phase.equals("write")) {
        checkMatrix(wholeFile(path), true);
      }
    }
  }

  static String read(Path p) {
    try {
      return Files.readString(p);
    } catch (IOException e) {
      return e.toString();
    }
  }

  static List<String> command(String... args) {
    return org.flowfs.cli.RoleProcess.java("256m", CollectiveMember.class.getName(), List.of(args));
  }
}
