package org.flowfs.common.flow;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.util.ReferenceCounted;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.flowfs.common.Errno;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.request.FileData;
import org.flowfs.common.request.RequestCursor;
import org.flowfs.common.request.RequestProcessor;
import org.flowfs.common.request.RequestProcessor.Mode;
import org.flowfs.common.request.Segments;
import org.flowfs.common.wire.Envelope;
import org.flowfs.common.wire.FileFlowData;
import org.flowfs.common.wire.IoOp.FlowData;
import org.flowfs.common.wire.IoOp.FlowDone;
import org.flowfs.common.wire.ShmSlots;

/**
 * Moves a flow's data in buffers of {@code bufferSize} bytes, with at most {@code buffers} of them
 * in use per flow at once (seed 001's {@code flowproto_bmi_trove}): memory to network and network
 * to memory on a client, network to storage and storage to network on a server.
 *
 * <p>With two buffers (the default protocol, {@link #DOUBLE_BUFFER}) the next network transfer and
 * the current disk read or write overlap; with one ({@link #SINGLE_BUFFER}) every buffer is read,
 * then sent, then the next one read. Which bytes go where comes from the request processor: CLIENT
 * mode gives a client's positions in its contiguous buffer (mapped through the memory request when
 * memory is noncontiguous), SERVER mode a server's offsets in its datafile, so the n-th byte of a
 * flow's stream is the n-th byte at both ends.
 *
 * <p>Backpressure: a sender keeps at most {@code buffers} sends unwritten; a receiver that has
 * more than {@code buffers} pieces waiting for the disk stops reading from that connection until
 * it catches up. Nothing is queued without bound.
 */
public class BufferedFlowProtocol implements FlowProtocol {
  public static final String DOUBLE_BUFFER = "double_buffer";
  public static final String SINGLE_BUFFER = "single_buffer";
  public static final int DEFAULT_BUFFER_SIZE = 256 * 1024;
  /**
   * Segments per request processor call at first: as many as one vectored system call takes
   * (IOV_MAX). A buffer is filled by as many calls as it takes, so this bounds only the arrays, not
   * the buffer; a flow whose calls fill all its segments gets twice as many, up to {@link
   * #SEGMAX_MOST}, so that a fine-grained request takes a few calls per buffer rather than hundreds.
   */
  private static final int SEGMAX = 1024;

  private static final int SEGMAX_MOST = 8192;

  private final String name;
  private volatile int bufferSize;
  private volatile int buffers;
  private final ByteBufAllocator alloc = PooledByteBufAllocator.DEFAULT;
  private final AtomicInteger held = new AtomicInteger();
  private FlowInterface flows;

  public BufferedFlowProtocol(String name, int bufferSize, int buffers) {
    if (bufferSize < 4096 || buffers < 1) {
      throw new IllegalArgumentException("buffer size " + bufferSize + ", buffers " + buffers);
    }
    this.name = name;
    this.bufferSize = bufferSize;
    this.buffers = buffers;
  }

  /** The default protocol: double buffering. */
  public static BufferedFlowProtocol doubleBuffer(int bufferSize) {
    return new BufferedFlowProtocol(DOUBLE_BUFFER, bufferSize, 2);
  }

  /** One buffer per flow: no overlap of network and disk, least memory. */
  public static BufferedFlowProtocol singleBuffer(int bufferSize) {
    return new BufferedFlowProtocol(SINGLE_BUFFER, bufferSize, 1);
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public void initialize(FlowInterface f) {
    this.flows = f;
  }

  @Override
  public void shutdown() {
    // flows were failed (and released) by the interface before
  }

  @Override
  public boolean supports(Endpoint src, Endpoint dest) {
    return src instanceof MemEndpoint && dest instanceof NetEndpoint
        || src instanceof NetEndpoint && dest instanceof MemEndpoint
        || src instanceof NetEndpoint && dest instanceof StoreEndpoint
        || src instanceof StoreEndpoint && dest instanceof NetEndpoint;
  }

  @Override
  public int findServiceable() {
    return held.get();
  }

  @Override
  public Object getInfo(String key) {
    return switch (key) {
      case "buffer-size" -> bufferSize;
      case "buffers" -> buffers;
      case "flows" -> held.get();
      default -> null;
    };
  }

  @Override
  public void setInfo(String key, Object value) {
    switch (key) {
      case "buffer-size" -> bufferSize = (Integer) value;
      case "buffers" -> buffers = (Integer) value;
      default -> throw new IllegalArgumentException(name + " has no parameter " + key);
    }
  }

  // ---- per-flow state ---------------------------------------------------------------------------

  /** What happened to a flow outside the service thread. */
  private sealed interface Event permits Received, Done, Sent, Stored, Loaded {}

  private record Received(ByteBuf data) implements Event {}

  private record Done(FlowDone done) implements Event {}

  private record Sent(long bytes, Throwable failure) implements Event {}

  private record Stored(long bytes, Throwable failure) implements Event {}

  private record Loaded(long seq, ByteBuf data, Throwable failure) implements Event {}

  /**
   * The frames of a flow that arrived before its post was serviced, in arrival order: the flow's
   * protocol data until {@link #post} replaces it with the {@link Run}. Closed (its frames
   * released, later ones too) when the flow fails before that. Guarded by the descriptor's lock.
   */
  private static final class Early {
    final List<Envelope> frames = new ArrayList<>();
    boolean closed;
  }

  /** One flow's private state (flow_protocol_data); only touched on the service thread. */
  private final class Run {
    final FlowDescriptor d;
    final FileData file;
    Segments segs = new Segments(SEGMAX);
    final Segments memSegs = new Segments(SEGMAX);
    final ConcurrentLinkedQueue<Event> events = new ConcurrentLinkedQueue<>();
    /** Pieces received and not yet stored or copied out: past 2 x buffers, the connection pauses. */
    final AtomicInteger backlog = new AtomicInteger();
    final ArrayDeque<ByteBuf> received = new ArrayDeque<>();
    /** Buffers read, or parts to send from the page cache, by their place in the flow's order. */
    final TreeMap<Long, Object> loaded = new TreeMap<>();
    final long total;
    long streamPos;
    long produced;
    long finished;
    int inFlight;
    long nextLoad;
    long nextSend;
    FlowDone done;
    volatile boolean ended;

    Run(FlowDescriptor d) {
      this.d = d;
      this.file = d.fileData();
      RequestCursor c = RequestCursor.of(d.fileReq(), d.fileReqOffset(), d.aggregateSize());
      d.fileReqState(c);
      if (d.memReq() != null) {
        d.memReqState(RequestCursor.of(d.memReq(), 0, d.aggregateSize()));
      }
      d.result(segs);
      this.total = d.bytesForServer();
    }

    Channel channel() {
      return ((NetEndpoint) (d.src() instanceof NetEndpoint ? d.src() : d.dest())).channel();
    }
  }

  @Override
  public void post(FlowDescriptor d) {
    Run r = new Run(d);
    synchronized (d) {
      Object early = d.protocolData();
      d.protocolData(r);
      held.incrementAndGet();
      if (early instanceof Early e) {
        // before any later frame: those find the Run only once we let go of the lock
        e.frames.forEach(f -> enqueue(r, f));
      }
    }
    service(d);
  }

  @Override
  public void receive(FlowDescriptor d, Envelope frame) {
    Run r;
    synchronized (d) {
      Object pd = d.protocolData();
      if (pd instanceof Run x) {
        r = x;
      } else {
        // posted but not yet taken up by the service thread: keep the frame, in order, for post
        if (pd == null && d.state() == FlowState.IN_SERVICE) {
          pd = new Early();
          d.protocolData(pd);
        }
        if (pd instanceof Early e && !e.closed) {
          e.frames.add(frame);
        } else {
          frame.release(); // the flow ended before its protocol took it
        }
        return;
      }
    }
    enqueue(r, frame);
  }

  /**
   * Hands a received frame to the flow; after the flow ended, releases it. The flow is made ready
   * outside the lock: waking the service thread is a system call, and the storage threads' events
   * wait for the same lock (a flow that ended meanwhile is not made ready, or ignores it).
   */
  private void enqueue(Run r, Envelope frame) {
    synchronized (r) {
      if (r.ended) {
        frame.release();
        return;
      }
      if (frame.message() instanceof FlowData data) {
        if (r.backlog.incrementAndGet() > 2 * buffers) {
          // stop reading the connection until the backlog drains; under the lock, so that
          // release (which turns reading back on) cannot have run already
          r.channel().config().setAutoRead(false);
        }
        r.events.add(new Received(data.payload()));
      } else {
        r.events.add(new Done((FlowDone) frame.message()));
      }
    }
    flows.ready(r.d);
  }

  /** Records an event and makes the flow ready; after the flow ended, drops it (releasing its data). */
  private void post(Run r, Event e) {
    synchronized (r) {
      if (r.ended) {
        discard(e);
        return;
      }
      r.events.add(e);
    }
    flows.ready(r.d);
  }

  private static void releaseLoaded(Object loaded) {
    if (loaded instanceof FileFlowData parts) {
      parts.release();
    } else {
      ((ByteBuf) loaded).release();
    }
  }

  private static void discard(Event e) {
    if (e instanceof Received x) {
      x.data().release();
    } else if (e instanceof Loaded x) {
      x.data().release();
    }
  }

  /** One piece of the backlog is done: resume reading the connection when it is short again. */
  private void drained(Run r) {
    if (r.backlog.decrementAndGet() <= buffers) {
      Channel ch = r.channel();
      if (!ch.config().isAutoRead()) {
        ch.eventLoop().execute(() -> ch.config().setAutoRead(true));
      }
    }
  }

  @Override
  public void service(FlowDescriptor d) {
    if (!(d.protocolData() instanceof Run r) || r.ended) {
      return;
    }
    Event e;
    while ((e = r.events.poll()) != null) {
      if (!take(r, e)) {
        return;
      }
    }
    if (d.src() instanceof MemEndpoint m) {
      sendFromMemory(r, m);
    } else if (d.dest() instanceof MemEndpoint m) {
      receiveIntoMemory(r, m);
    } else if (d.dest() instanceof StoreEndpoint s) {
      store(r, s);
    } else {
      load(r, (StoreEndpoint) d.src());
    }
  }

  /** Applies one event; false if the flow ended because of it. */
  private boolean take(Run r, Event e) {
    if (e instanceof Received x) {
      r.received.add(x.data());
    } else if (e instanceof Done x) {
      r.done = x.done();
    } else if (e instanceof Sent x) {
      r.inFlight--;
      if (x.failure() != null) {
        return end(r, Errno.EIO, "send failed: " + x.failure());
      }
      r.finished += x.bytes();
      r.d.transferred(x.bytes());
    } else if (e instanceof Stored x) {
      r.inFlight--;
      drained(r);
      if (x.failure() != null) {
        return end(r, Errno.from(x.failure()), "storage write failed: " + x.failure().getMessage());
      }
      r.finished += x.bytes();
      r.d.transferred(x.bytes());
    } else if (e instanceof Loaded x) {
      if (x.failure() != null) {
        x.data().release();
        r.inFlight--;
        return end(r, Errno.from(x.failure()), "storage read failed: " + x.failure().getMessage());
      }
      r.loaded.put(x.seq(), x.data());
    }
    return true;
  }

  // ---- client: memory -> network ----------------------------------------------------------------

  private void sendFromMemory(Run r, MemEndpoint m) {
    Channel ch = r.channel();
    while (r.inFlight < buffers && r.produced < r.total) {
      Pieces pieces = nextBuffer(r, Mode.CLIENT);
      long n = pieces.bytes();
      if (n == 0) {
        break;
      }
      CompositeByteBuf chunk = alloc.compositeDirectBuffer(Math.max(2, pieces.count()));
      try {
        for (int i = 0; i < pieces.count(); i++) {
          addMemory(r, m, pieces.offset(i), pieces.length(i), chunk);
        }
      } catch (RuntimeException e) {
        chunk.release(); // and with it the slices of memory added so far
        throw e;
      }
      r.produced += n;
      r.inFlight++;
      send(r, ch, chunk, n);
    }
    if (r.done != null) {
      finishFromPeer(r);
    }
  }

  /**
   * The pieces of this server's next buffer to send, up to the buffer size; no bytes means the
   * request is done.
   */
  private Pieces nextBuffer(Run r, Mode mode) {
    return nextBuffer(r, mode, bufferSize);
  }

  /**
   * The pieces of this server's next {@code size} bytes: one processor call after another,
   * resuming where the last stopped, until they hold {@code size} bytes or the request is done
   * (then fewer). The flow's stream position moves past them.
   */
  private static Pieces nextBuffer(Run r, Mode mode, long size) {
    Pieces pieces = new Pieces(8);
    long pos = r.streamPos;
    while (pos != RequestProcessor.DONE && pieces.bytes() < size) {
      pos = process(r, pos, size - pieces.bytes(), mode);
      pieces.add(r.segs);
    }
    r.streamPos = pos;
    return pieces;
  }

  /**
   * The next file-side processor call of a flow, into {@code r.segs}; if the call before filled
   * them all, into twice as many first (up to {@link #SEGMAX_MOST}).
   */
  private static long process(Run r, long pos, long bytemax, Mode mode) {
    Segments segs = r.segs;
    if (segs.count() == segs.capacity() && segs.capacity() < SEGMAX_MOST) {
      segs = new Segments(2 * segs.capacity());
      r.segs = segs;
      r.d.result(segs);
    }
    return RequestProcessor.process(r.d.fileReqState(), r.file, segs.capacity(), segs, pos, bytemax, mode);
  }

  /** Adds memory for stream bytes [pos, pos + len) to {@code out}, as slices (no copy). */
  private void addMemory(Run r, MemEndpoint m, long pos, long len, CompositeByteBuf out) {
    ByteBuf buf = m.buffer();
    if (buf == null) {
      throw new FsException(Errno.EINVAL, "a flow from memory needs the memory's buffer, not views");
    }
    if (r.d.memReqState() == null) {
      out.addComponent(true, buf.retainedSlice(MemEndpoint.index(buf, pos, len), (int) len));
      return;
    }
    long at = pos;
    long end = pos + len;
    while (at < end) {
      long next = RequestProcessor.processMemory(r.d.memReqState(), SEGMAX, r.memSegs, at, end - at);
      for (int i = 0; i < r.memSegs.count(); i++) {
        out.addComponent(true, buf.retainedSlice(MemEndpoint.index(buf, r.memSegs.offset(i), r.memSegs.size(i)),
            (int) r.memSegs.size(i)));
      }
      at += r.memSegs.bytes();
      if (r.memSegs.bytes() == 0 || next == RequestProcessor.DONE) {
        break;
      }
    }
  }

  /**
   * Sends a piece of the flow (consuming {@code payload}); {@link Sent} follows. Netty releases a
   * payload it could not send only once the frame reached the encoder: on a connection that is
   * closed and deregistered the envelope goes straight to the transport, which cannot release it.
   */
  private void send(Run r, Channel ch, ByteBuf payload, long bytes) {
    ch.writeAndFlush(Envelope.oneway(r.d.tag(), new FlowData(payload))).addListener(f -> {
      if (!f.isSuccess() && payload.refCnt() > 0) {
        payload.release();
      }
      post(r, new Sent(bytes, f.cause()));
    });
  }

  // ---- client: network -> memory ----------------------------------------------------------------

  private void receiveIntoMemory(Run r, MemEndpoint m) {
    ByteBuf data;
    while ((data = r.received.poll()) != null) {
      try {
        int n = data.readableBytes();
        int at = data.readerIndex();
        Pieces pieces = nextBuffer(r, Mode.CLIENT, n);
        if (pieces.bytes() < n) {
          end(r, Errno.EIO, "received " + (n - pieces.bytes()) + " bytes more than the flow holds");
          return;
        }
        for (int i = 0; i < pieces.count(); i++) {
          at = copyToMemory(r, m, data, at, pieces.offset(i), pieces.length(i));
        }
        r.finished += n;
        r.d.transferred(n);
      } finally {
        data.release();
        drained(r);
      }
    }
    if (r.done != null) {
      finishFromPeer(r);
    }
  }

  /**
   * Places {@code len} bytes of {@code data} at {@code at} at stream position {@code pos} of
   * memory: copied into its buffer, or as slices of {@code data} into its views.
   */
  private int copyToMemory(Run r, MemEndpoint m, ByteBuf data, int at, long pos, long len) {
    if (r.d.memReqState() == null) {
      place(m, data, at, pos, (int) len);
      return at + (int) len;
    }
    long p = pos;
    long end = pos + len;
    while (p < end) {
      long next = RequestProcessor.processMemory(r.d.memReqState(), SEGMAX, r.memSegs, p, end - p);
      for (int i = 0; i < r.memSegs.count(); i++) {
        int n = (int) r.memSegs.size(i);
        place(m, data, at, r.memSegs.offset(i), n);
        at += n;
      }
      p += r.memSegs.bytes();
      if (r.memSegs.bytes() == 0 || next == RequestProcessor.DONE) {
        break;
      }
    }
    return at;
  }

  /** A client flow ends when the server's FlowDone arrives and everything it announced moved. */
  private void finishFromPeer(Run r) {
    FlowDone done = r.done;
    if (done.errno() != 0) {
      end(r, Errno.ofCode(done.errno()), "the server ended the flow");
      return;
    }
    if (r.inFlight > 0 || !r.received.isEmpty()) {
      return;
    }
    if (r.finished != r.total || done.transferred() != r.total) {
      end(r, Errno.EIO, "flow moved " + r.finished + " bytes, server " + done.transferred() + ", expected " + r.total);
      return;
    }
    end(r, Errno.OK, null);
  }

  /** Puts {@code n} bytes of {@code data} at {@code at} at {@code offset} of memory. */
  private static void place(MemEndpoint m, ByteBuf data, int at, long offset, int n) {
    if (m.views() != null) {
      m.views().add(offset, data.retainedSlice(at, n));
    } else {
      ByteBuf buf = m.buffer();
      buf.setBytes(MemEndpoint.index(buf, offset, n), data, at, n);
    }
  }

  // ---- server: network -> storage ---------------------------------------------------------------

  private void store(Run r, StoreEndpoint s) {
    while (r.inFlight < buffers && !r.received.isEmpty()) {
      ByteBuf data = r.received.poll();
      int n = data.readableBytes();
      Pieces pieces = nextBuffer(r, Mode.SERVER, n);
      if (pieces.bytes() < n) {
        data.release();
        end(r, Errno.EIO, "client sent more than the " + r.total + " bytes of the flow");
        return;
      }
      r.produced += n;
      r.inFlight++;
      Handle h = s.handle();
      s.storage().executor().execute(() -> {
        Throwable failure = null;
        try {
          s.storage().write(h, pieces, data);
        } catch (Throwable t) {
          failure = t;
        } finally {
          data.release();
        }
        post(r, new Stored(n, failure));
      });
    }
    if (r.finished == r.total && r.inFlight == 0) {
      r.channel().writeAndFlush(Envelope.oneway(r.d.tag(), new FlowDone(0, r.finished, 0)));
      end(r, Errno.OK, null);
    }
  }

  // ---- server: storage -> network ---------------------------------------------------------------

  private void load(Run r, StoreEndpoint s) {
    Channel ch = r.channel();
    sendLoaded(r, ch);
    int size = loadSize(ch);
    while (r.inFlight < buffers && r.produced < r.total) {
      Pieces pieces = nextBuffer(r, Mode.SERVER, size);
      long n = pieces.bytes();
      if (n == 0) {
        break;
      }
      r.produced += n;
      r.inFlight++;
      long seqNo = r.nextLoad++;
      Handle h = s.handle();
      ByteBuf slot = n >= ShmSlots.MIN_PAYLOAD ? slotFor(ch, (int) n) : null;
      if (slot != null) {
        // a client on this machine: a storage thread reads the bytes into its shared memory (from
        // the device itself with io.direct-read, where aligned), and the slot goes as it is
        s.storage().readExecutor().execute(() -> {
          Throwable failure = null;
          try {
            if (!s.storage().readDirect(h, pieces, slot)) {
              readPieces(s.storage(), h, pieces, slot);
            }
          } catch (Throwable t) {
            failure = t;
          }
          post(r, new Loaded(seqNo, slot, failure));
        });
        continue;
      }
      List<ReferenceCounted> parts = coarse(pieces) ? s.storage().regions(h, pieces) : null;
      if (parts != null) {
        // no read here: the connection sends these from the page cache, in turn with the others
        r.loaded.put(seqNo, new FileFlowData(r.d.tag(), parts, n));
        continue;
      }
      ByteBuf buf = alloc.directBuffer((int) n);
      s.storage().readExecutor().execute(() -> {
        Throwable failure = null;
        try {
          readPieces(s.storage(), h, pieces, buf);
        } catch (Throwable t) {
          failure = t;
        }
        post(r, new Loaded(seqNo, buf, failure));
      });
    }
    sendLoaded(r, ch);
    if (r.finished == r.total && r.inFlight == 0 && r.loaded.isEmpty()) {
      ch.writeAndFlush(Envelope.oneway(r.d.tag(), new FlowDone(0, r.finished, 0)));
      end(r, Errno.OK, null);
    }
  }

  /**
   * The size of a read flow's buffers on {@code ch}: the flow buffer size, but at most a slot of
   * the memory the connection shares with its client, so that every buffer goes through a slot
   * (a client whose flow buffers are smaller than this server's has slots of its own size).
   */
  private int loadSize(Channel ch) {
    ShmSlots out = ch.attr(ShmSlots.OUTBOUND).get();
    return out == null || out.slotSize() < ShmSlots.MIN_PAYLOAD ? bufferSize : Math.min(bufferSize, out.slotSize());
  }

  /** A slot of the memory the connection shares with its client, for a payload of {@code n} bytes; null if none. */
  private static ByteBuf slotFor(Channel ch, int n) {
    ShmSlots out = ch.attr(ShmSlots.OUTBOUND).get();
    return out == null ? null : out.taken(n);
  }

  /** Sends the loaded buffers that are next in the flow's order. */
  private void sendLoaded(Run r, Channel ch) {
    Object ready;
    while ((ready = r.loaded.remove(r.nextSend)) != null) {
      r.nextSend++;
      if (ready instanceof FileFlowData parts) {
        sendParts(r, ch, parts);
      } else {
        ByteBuf b = (ByteBuf) ready;
        send(r, ch, b, b.readableBytes());
      }
    }
  }

  /**
   * Pieces few and large enough to send as file regions: below this average a {@code sendfile}
   * per piece costs more than the copy it saves (and many small pieces are read as their covering
   * range instead, {@link #readPieces}).
   */
  static final int REGION_MIN_AVERAGE = 32 * 1024;

  private static boolean coarse(Pieces pieces) {
    return pieces.bytes() >= (long) REGION_MIN_AVERAGE * pieces.count();
  }

  /** Sends a piece of the flow given as parts (consuming them); {@link Sent} follows. */
  private void sendParts(Run r, Channel ch, FileFlowData parts) {
    ch.writeAndFlush(parts).addListener(f -> {
      if (!f.isSuccess()) {
        parts.release(); // those the encoder never took
      }
      post(r, new Sent(parts.length(), f.cause()));
    });
  }

  /** Pieces closer together than this (in the datafile) are read as one range and copied out. */
  static final int SIEVE_GAP = 64 * 1024;
  private static final long SIEVE_MAX = 16L << 20;

  /**
   * Reads the datafile pieces {@code (offset, length)} one after another into {@code buf}; bytes
   * no datafile holds read as zeros. Many small pieces close together (a strided view) are read
   * as their covering range, once, and copied out: one disk read rather than one per piece
   * (data sieving, done where the data is).
   */
  static void readPieces(FlowStorage storage, Handle h, Pieces pieces, ByteBuf buf) {
    final int n = pieces.count();
    long lo = pieces.low();
    long span = pieces.high() - lo;
    if (n > 2 && span <= SIEVE_MAX && span <= pieces.bytes() + (long) SIEVE_GAP * (n - 1)) {
      ByteBuf cover = buf.alloc().directBuffer((int) span);
      try {
        int got = storage.read(h, lo, (int) span, cover);
        for (int i = 0; i < n; i++) {
          int len = pieces.length(i);
          int rel = (int) (pieces.offset(i) - lo);
          int have = Math.max(0, Math.min(len, got - rel));
          buf.writeBytes(cover, rel, have);
          buf.writeZero(len - have); // past this datafile's end: zeros
        }
      } finally {
        cover.release();
      }
      return;
    }
    for (int i = 0; i < n; i++) {
      int len = pieces.length(i);
      int start = buf.writerIndex();
      int got = storage.read(h, pieces.offset(i), len, buf);
      if (got < len) {
        buf.writeZero(len - got); // a hole, or past this datafile's end: zeros
      }
      buf.writerIndex(start + len);
    }
  }

  // ---- ending -----------------------------------------------------------------------------------

  /** Ends the flow: OK completes it, anything else fails it (which releases via {@link #cancel}). */
  private boolean end(Run r, Errno errno, String detail) {
    if (errno == Errno.OK) {
      release(r);
      flows.complete(r.d);
    } else {
      if (r.d.src() instanceof StoreEndpoint || r.d.dest() instanceof StoreEndpoint) {
        // tell the client why, so its flow ends with the same errno
        r.channel().writeAndFlush(Envelope.oneway(r.d.tag(), new FlowDone(errno.code(), r.finished, 0)));
      }
      flows.fail(r.d, errno, detail);
    }
    return false;
  }

  @Override
  public void cancel(FlowDescriptor d) {
    Object pd;
    synchronized (d) {
      pd = d.protocolData();
      if (!(pd instanceof Run)) {
        // failed before post took it: drop the frames that came, and any that still come
        Early e = pd instanceof Early x ? x : new Early();
        e.closed = true;
        e.frames.forEach(Envelope::release);
        e.frames.clear();
        d.protocolData(e);
        return;
      }
    }
    release((Run) pd);
  }

  private void release(Run r) {
    synchronized (r) {
      if (r.ended) {
        return;
      }
      r.ended = true;
    }
    Event e;
    while ((e = r.events.poll()) != null) {
      discard(e);
    }
    held.decrementAndGet();
    r.received.forEach(ByteBuf::release);
    r.received.clear();
    r.loaded.values().forEach(BufferedFlowProtocol::releaseLoaded);
    r.loaded.clear();
    Channel ch = r.channel();
    if (!ch.config().isAutoRead()) {
      ch.eventLoop().execute(() -> ch.config().setAutoRead(true));
    }
  }
}
