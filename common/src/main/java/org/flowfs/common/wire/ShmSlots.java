package org.flowfs.common.wire;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledUnsafeDirectByteBuf;
import io.netty.util.AttributeKey;
import io.netty.util.internal.PlatformDependent;
import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.flowfs.common.Counters;
import org.flowfs.common.config.NodeConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shared memory between a client and an I/O server on the same machine: slots of {@code
 * slotSize} bytes in a file both map ({@code /dev/shm}, or {@code node.shm-dir}), through which the client hands over a
 * frame's payload instead of writing its bytes to the socket. The frame itself still goes over
 * the connection, carrying the slot's number in place of the payload ({@link Frames#SHM_PAYLOAD});
 * the server's payload is the slot itself, which it writes to the datafile from there. What this
 * spares is the loopback TCP path of bulk bytes on the server's machine: the copy into the socket,
 * the receive processing, the copy out of it.
 *
 * <p>Layout: a header page (a random token that the client proves the file is its own with, the
 * slot count and size, one state word per slot), then the slots, each page aligned. A slot is
 * taken by the client (state 1, its bytes written before the frame is sent) and given back by the
 * server when its payload is released (state 0); each side writes the word only in its own
 * transition, with release semantics, and reads the other's with acquire semantics. When no slot
 * is free the payload goes over the socket as before: nothing waits for a slot. The server hands
 * the payloads of its answers and read flows to the client the same way, in slots of a second file
 * for that direction.
 *
 * <p>Which process makes a file depends on who may open whose: the client makes it, or, when the
 * server may not open the client's files (a mount run as root, I/O servers as their own user),
 * the server makes it for the client. It is unlinked once both mapped it: the mappings are all that
 * is left, and each side unmaps its own when the connection closed and the last buffer over it is
 * released. The sender takes slots from any thread (a storage thread reading into one, {@link
 * #taken}) and hands them over on the connection's event loop; the receiver's releases come from
 * any thread.
 */
public final class ShmSlots {
  /** The channel attribute holding the slots a connection's outgoing payloads may use. */
  public static final AttributeKey<ShmSlots> OUTBOUND = AttributeKey.valueOf("flowfs.shm.outbound");
  /** Where the files are made unless {@code node.shm-dir} names another place: the machine's shared-memory file system. */
  public static final Path DIR = NodeConfig.DEFAULT_SHM_DIR;
  public static final int PAGE = 4096;
  /** Smaller payloads go over the socket: a copy into a slot spares them little. */
  public static final int MIN_PAYLOAD = 16 * 1024;
  public static final int TOKEN = 16;
  /** The most slots and the largest slot a server maps. */
  public static final int MAX_SLOTS = 1000;
  public static final int MAX_SLOT_SIZE = 4 << 20;
  private static final int COUNT_AT = TOKEN;
  private static final int SIZE_AT = TOKEN + 4;
  private static final int STATES_AT = 64;
  private static final VarHandle INT = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.nativeOrder());
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final Logger LOG = LoggerFactory.getLogger(ShmSlots.class);
  private static final AtomicBoolean FELL_BACK = new AtomicBoolean();

  private final Path path;
  private final MappedByteBuffer map;
  private final byte[] token;
  private final int slots;
  private final int slotSize;
  /** Whether the file is in huge pages (a hugetlbfs), not in pages of {@link #PAGE} bytes. */
  private final boolean hugePages;
  /** Payloads and bytes handed over and payloads that found no slot (sender); payloads and bytes taken (receiver). */
  private final LongAdder sent;
  private final LongAdder sentBytes;
  private final LongAdder full;
  private final LongAdder received;
  private final LongAdder receivedBytes;
  /**
   * Who uses the mapping: 1 for the connection until {@link #close}, and 1 for each payload
   * buffer over a slot; at 0 it is unmapped (no longer counted in either process's memory), which
   * a garbage collection might otherwise do much later.
   */
  private final AtomicInteger holds = new AtomicInteger(1);
  private volatile boolean closed;

  private ShmSlots(Path path, MappedByteBuffer map, byte[] token, int slots, int slotSize, boolean hugePages,
      Counters counters) {
    this.sent = counters.counter("shm.sent");
    this.sentBytes = counters.counter("shm.sent-bytes");
    this.full = counters.counter("shm.full");
    this.received = counters.counter("shm.received");
    this.receivedBytes = counters.counter("shm.received-bytes");
    this.path = path;
    this.map = map;
    this.token = token;
    this.slots = slots;
    this.slotSize = slotSize;
    this.hugePages = hugePages;
  }

  /** The size of a file of {@code slots} slots of {@code slotSize} bytes. */
  static long fileSize(int slots, int slotSize) {
    return PAGE + (long) slots * slotSize;
  }

  /**
   * The size of such a file in a directory whose pages are {@code pageSize} bytes ({@link
   * #pageSize}): a whole number of them, which on hugetlbfs are its huge pages (a file there is
   * sized and mapped in whole pages only).
   */
  private static long fileSize(long pageSize, int slots, int slotSize) {
    long n = fileSize(slots, slotSize);
    return Long.bitCount(pageSize) == 1 ? n + pageSize - 1 & -pageSize : n;
  }

  /** Whether files in {@code dir} are in huge pages (a hugetlbfs); false when it cannot be told. */
  public static boolean hugePagesIn(Path dir) {
    try {
      return pageSize(dir) > PAGE;
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /** The size of the pages a file in {@code dir} is mapped in: its file system's block size, at least {@link #PAGE}. */
  private static long pageSize(Path dir) throws IOException {
    return Math.max(PAGE, Files.getFileStore(dir).getBlockSize());
  }

  /**
   * A new file as {@link #create} makes it, in {@code dir} ({@code node.shm-dir}), else in {@link
   * #DIR}: a hugetlbfs mount refuses the mapping when it has too few huge pages left for it (they
   * are reserved when a file is mapped), and the slots are then in the machine's ordinary shared
   * memory (said once in the log, counted in {@code shm.dir-full}).
   */
  public static ShmSlots make(Path dir, int slots, int slotSize, Counters counters) throws IOException {
    try {
      return create(dir, slots, slotSize, counters);
    } catch (IOException e) {
      if (dir.equals(DIR)) {
        throw e;
      }
      counters.increment("shm.dir-full");
      String why = "cannot make shared memory in " + dir + " (" + e + "; on a hugetlbfs: too few huge pages left, see"
          + " vm.nr_hugepages); making it in " + DIR;
      if (FELL_BACK.compareAndSet(false, true)) {
        LOG.warn("{}", why);
      } else {
        LOG.debug("{}", why);
      }
      return create(DIR, slots, slotSize, counters);
    }
  }

  private static void check(int slots, int slotSize) {
    if (slots < 1 || slots > MAX_SLOTS || slotSize < PAGE || slotSize > MAX_SLOT_SIZE || slotSize % PAGE != 0) {
      throw new IllegalArgumentException(slots + " slots of " + slotSize + " bytes");
    }
  }

  /**
   * The maker's side (the client's, or the server's for a client that may not have it open its
   * file): a new file of {@code slots} slots in {@code dir}, readable by its owner only;
   * counts in {@code counters} what goes through it: {@code shm.sent}, {@code shm.sent-bytes},
   * {@code shm.received}, {@code shm.received-bytes}, and {@code shm.full} (payloads sent over the
   * socket because no slot was free).
   */
  public static ShmSlots create(Path dir, int slots, int slotSize, Counters counters) throws IOException {
    check(slots, slotSize);
    byte[] token = new byte[TOKEN];
    RANDOM.nextBytes(token);
    Path p = dir.resolve("flowfs-" + HexFormat.of().formatHex(token, 0, 8));
    Files.createFile(p, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      long pageSize = pageSize(dir);
      MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_WRITE, 0, fileSize(pageSize, slots, slotSize));
      m.order(ByteOrder.nativeOrder());
      m.put(0, token);
      m.putInt(COUNT_AT, slots);
      m.putInt(SIZE_AT, slotSize);
      return new ShmSlots(p, m, token, slots, slotSize, pageSize > PAGE, counters);
    } catch (IOException | RuntimeException e) {
      Files.deleteIfExists(p);
      throw e;
    }
  }

  /**
   * The other side's: maps the regular file at {@code path} (not through a symbolic link) when it
   * has the size of {@code slots} slots of {@code slotSize} bytes and begins with {@code token};
   * else an {@link IOException} saying what differs (another machine's or namespace's file system,
   * another user's, or not the file the peer made). Counts as {@link #create} does.
   */
  public static ShmSlots attach(Path path, byte[] token, int slots, int slotSize, Counters counters) throws IOException {
    check(slots, slotSize);
    if (token.length != TOKEN) {
      throw new IOException("a token of " + token.length + " bytes");
    }
    BasicFileAttributes a = Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    long pageSize = pageSize(path.toAbsolutePath().getParent());
    long size = fileSize(pageSize, slots, slotSize);
    if (!a.isRegularFile() || a.size() != size) {
      throw new IOException(path + " is not a regular file of " + size + " bytes");
    }
    try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
      MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
      m.order(ByteOrder.nativeOrder());
      byte[] there = new byte[TOKEN];
      m.get(0, there);
      if (!Arrays.equals(there, token) || m.getInt(COUNT_AT) != slots || m.getInt(SIZE_AT) != slotSize) {
        PlatformDependent.freeDirectBuffer(m); // unmapped now, not at a garbage collection
        throw new IOException(path + " is not the file the peer made");
      }
      return new ShmSlots(path, m, token.clone(), slots, slotSize, pageSize > PAGE, counters);
    }
  }

  public Path path() {
    return path;
  }

  public byte[] token() {
    return token.clone();
  }

  public int slots() {
    return slots;
  }

  public int slotSize() {
    return slotSize;
  }

  /** Whether the slots are in huge pages ({@code node.shm-dir} on a hugetlbfs). */
  public boolean hugePages() {
    return hugePages;
  }

  /**
   * Whether {@code buf} is a slot taken for a payload made in place ({@link #taken}) in shared
   * memory of huge pages: where a read past the page cache measured faster than through it.
   */
  public static boolean inHugePages(ByteBuf buf) {
    return buf instanceof Taken t && t.slots.hugePages;
  }

  /** Removes the file (the mappings stay). */
  public void unlink() {
    try {
      Files.deleteIfExists(path);
    } catch (IOException e) {
      // nothing more to do: it goes with its file system at the latest
    }
  }

  private int state(int slot) {
    return (int) INT.getAcquire(map, STATES_AT + 4 * slot);
  }

  private void state(int slot, int v) {
    INT.setRelease(map, STATES_AT + 4 * slot, v);
  }

  /**
   * Sender: copies {@code payload}'s readable bytes into a free slot and returns its number, or -1
   * when it does not fit or no slot is free (the payload is then left as it was). A payload that
   * is already in a slot of these ({@link #taken}) is handed over as it is, without a copy.
   */
  public int put(ByteBuf payload) {
    if (payload instanceof Taken t && t.slots == this && t.readerIndex() == 0 && !closed) {
      handedOver(t.readableBytes());
      return t.handOver();
    }
    int n = payload.readableBytes();
    int s = take(n);
    if (s >= 0) {
      payload.getBytes(payload.readerIndex(), slot(s, n));
      handedOver(n);
    }
    return s;
  }

  /** Takes a hold on the mapping; false once it is gone. */
  private boolean enter() {
    for (;;) {
      int h = holds.get();
      if (h == 0) {
        return false;
      }
      if (holds.compareAndSet(h, h + 1)) {
        return true;
      }
    }
  }

  private void exit() {
    if (holds.decrementAndGet() == 0) {
      PlatformDependent.freeDirectBuffer(map); // unmaps
    }
  }

  /**
   * The connection is gone: no slot is taken or handed out from now on, and the mapping goes once
   * the last payload over it is released. Call on the connection's event loop, which also sends.
   */
  public void close() {
    if (!closed) {
      closed = true;
      exit();
    }
  }

  /**
   * Sender: takes a free slot for {@code length} bytes, the lowest numbered (so that a connection
   * that needs few touches few pages); -1 when none is free or it does not fit. {@link #cancel}
   * gives it back unsent. Any thread.
   */
  public int take(int length) {
    if (length <= slotSize && !closed) {
      for (int s = 0; s < slots; s++) {
        if (state(s) == 0 && INT.compareAndSet(map, STATES_AT + 4 * s, 0, 1)) {
          return s;
        }
      }
    }
    full.increment();
    return -1;
  }

  /**
   * Sender: a free slot for {@code length} bytes as an empty buffer of its own (page aligned, as
   * large as the slot), for its payload to be put there where it is made (a datafile read past
   * the page cache goes straight into it); null when none is free. Sent as a payload on this
   * connection, it is handed over as it is ({@link #put}); released unsent, the slot is free again.
   * Any thread.
   */
  public ByteBuf taken(int length) {
    if (!enter()) {
      return null;
    }
    int s = take(length);
    if (s < 0) {
      exit();
      return null;
    }
    return new Taken(this, s, slot(s, slotSize));
  }

  /** The first {@code length} bytes of slot {@code s}. */
  private ByteBuffer slot(int s, int length) {
    return map.slice(PAGE + s * slotSize, length);
  }

  /** Sender: a slot of {@code length} bytes goes to the peer (counts it). */
  private void handedOver(int length) {
    sent.increment();
    sentBytes.add(length);
  }

  /** Sender: gives back a slot it took and did not hand over. */
  public void cancel(int s) {
    if (!closed) {
      state(s, 0);
    }
  }

  /** Slots the receiver holds now (for tests and diagnostics). */
  public int busy() {
    if (!enter()) {
      return 0;
    }
    try {
      int b = 0;
      for (int i = 0; i < slots; i++) {
        b += state(i);
      }
      return b;
    } finally {
      exit();
    }
  }

  /** Whether the mapping is still there (for tests). */
  public boolean mapped() {
    return holds.get() > 0;
  }

  /**
   * Receiver: the first {@code length} bytes of slot {@code slot} as a buffer of their own; its
   * release gives the slot back. A slot the sender did not fill, or a length past it, is a
   * {@link MalformedMessageException}.
   */
  public ByteBuf received(int slot, int length) {
    if (slot < 0 || slot >= slots || length < 0 || length > slotSize) {
      throw new MalformedMessageException("shared memory slot " + slot + " of " + length + " bytes; there are " + slots
          + " of " + slotSize);
    }
    if (!enter()) {
      throw new MalformedMessageException("shared memory slot " + slot + " named after the connection closed");
    }
    if (state(slot) != 1) {
      exit();
      throw new MalformedMessageException("shared memory slot " + slot + " was not filled");
    }
    received.increment();
    receivedBytes.add(length);
    return new SlotBuf(UnpooledByteBufAllocator.DEFAULT, slot(slot, length), () -> {
      state(slot, 0);
      exit();
    }).writerIndex(length);
  }

  /** A slot the sender took for a payload made in place ({@link #taken}). */
  private static final class Taken extends UnpooledUnsafeDirectByteBuf {
    private final ShmSlots slots;
    private final int slot;
    private volatile boolean handedOver;

    Taken(ShmSlots slots, int slot, ByteBuffer memory) {
      super(UnpooledByteBufAllocator.DEFAULT, memory, memory.capacity());
      this.slots = slots;
      this.slot = slot;
      writerIndex(0);
    }

    /** Its slot goes to the peer, which frees it: releasing this buffer no longer does. */
    int handOver() {
      handedOver = true;
      return slot;
    }

    @Override
    protected void deallocate() {
      super.deallocate(); // lets go of the slice; the mapping is not this buffer's to free
      if (!handedOver) {
        slots.cancel(slot);
      }
      slots.exit();
    }
  }

  /** A slot's bytes; freeing it gives the slot back, not memory. */
  private static final class SlotBuf extends UnpooledUnsafeDirectByteBuf {
    private final Runnable freed;

    SlotBuf(ByteBufAllocator alloc, ByteBuffer slot, Runnable freed) {
      super(alloc, slot, slot.capacity());
      this.freed = freed;
    }

    @Override
    protected void deallocate() {
      super.deallocate(); // lets go of the slice; the mapping is not this buffer's to free
      freed.run();
    }
  }
}
