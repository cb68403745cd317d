package org.flowfs.common.wire;

import io.netty.buffer.ByteBuf;
import java.util.List;
import java.util.Objects;
import org.flowfs.common.DistSpec;
import org.flowfs.common.Handle;

/** The I/O servers' operations on datafiles ("bstreams"). Ids 200..299. */
public sealed interface IoOp extends Message {
  int MAX_BATCH = 65536;

  /** Reserves {@code count} new datafile handles (the metadata server's precreate pool). */
  @Wire(200)
  record PrecreateReq(int count) implements IoOp, Req<HandlesResp> {
    public PrecreateReq {
      if (count <= 0 || count > MAX_BATCH) {
        throw new IllegalArgumentException("count " + count);
      }
    }
  }

  @Wire(201)
  record HandlesResp(List<Handle> handles) implements IoOp {}

  /** Writes the payload at {@code offset} of a datafile. */
  @Wire(202)
  record WriteReq(Handle handle, long offset, ByteBuf payload) implements IoOp, HasPayload, Req<WriteResp> {
    public WriteReq {
      Objects.requireNonNull(handle, "handle");
      if (offset < 0 || offset > Long.MAX_VALUE - payload.readableBytes()) {
        throw new IllegalArgumentException("offset " + offset);
      }
    }
  }

  /** Bytes written and the datafile's size afterwards. */
  @Wire(203)
  record WriteResp(long written, long size) implements IoOp {}

  /** Reads up to {@code length} bytes at {@code offset}; fewer at the end of the datafile. */
  @Wire(204)
  record ReadReq(Handle handle, long offset, int length) implements IoOp, Req<ReadResp> {
    public ReadReq {
      Objects.requireNonNull(handle, "handle");
      if (offset < 0 || length < 0 || offset > Long.MAX_VALUE - length) {
        throw new IllegalArgumentException("offset or length");
      }
    }
  }

  @Wire(205)
  record ReadResp(ByteBuf payload) implements IoOp, HasPayload {}

  /** Sets a datafile's size. */
  @Wire(206)
  record TruncateReq(Handle handle, long size) implements IoOp, Req<CommonOp.OkResp> {
    public TruncateReq {
      Objects.requireNonNull(handle, "handle");
      if (size < 0) {
        throw new IllegalArgumentException("size");
      }
    }
  }

  /**
   * Reserves storage for {@code [offset, offset + length)} of a datafile, or with {@code punch}
   * frees it (the range then reads as zeros); the datafile's size stays as it is either way
   * ({@code fallocate(2)} with {@code FALLOC_FL_KEEP_SIZE}, with {@code FALLOC_FL_PUNCH_HOLE} too).
   */
  @Wire(226)
  record AllocateReq(Handle handle, long offset, long length, boolean punch) implements IoOp, Req<CommonOp.OkResp> {
    public AllocateReq {
      Objects.requireNonNull(handle, "handle");
      if (offset < 0 || length <= 0 || offset > Long.MAX_VALUE - length) {
        throw new IllegalArgumentException("offset or length");
      }
    }
  }

  /** The sizes of several datafiles of this server, in order; a never-written one is 0. */
  @Wire(207)
  record SizesReq(List<Handle> handles) implements IoOp, Req<SizesResp> {
    public SizesReq {
      handles = List.copyOf(handles); // no null list, no null handle
      if (handles.size() > MAX_BATCH) {
        throw new IllegalArgumentException("too many handles");
      }
    }
  }

  @Wire(208)
  record SizesResp(long[] sizes) implements IoOp {}

  /** Removes datafiles; missing ones are fine. */
  @Wire(209)
  record DataRemoveReq(List<Handle> handles) implements IoOp, Req<CommonOp.OkResp> {
    public DataRemoveReq {
      handles = List.copyOf(handles); // no null list, no null handle
      if (handles.size() > MAX_BATCH) {
        throw new IllegalArgumentException("too many handles");
      }
    }
  }

  /** Makes a datafile's data durable ({@code fsync}). */
  @Wire(210)
  record SyncReq(Handle handle, boolean dataOnly) implements IoOp, Req<CommonOp.OkResp> {
    public SyncReq {
      Objects.requireNonNull(handle, "handle");
    }
  }

  @Wire(211)
  record IoStatfsReq() implements IoOp, Req<IoStatfsResp> {}

  /**
   * Capacity of the file system holding the server's storage directory, in bytes, which file
   * system that is ({@link org.flowfs.common.StorageSpace#device}), and the datafile count.
   */
  @Wire(212)
  record IoStatfsResp(long total, long free, long available, long device, long datafiles) implements IoOp {
    public org.flowfs.common.StorageSpace space() {
      return new org.flowfs.common.StorageSpace(total, free, available, device);
    }
  }

  /** Datafile handles stored on this server, in order, after {@code cursor} (for fsck). */
  @Wire(213)
  record ListReq(long cursor, int max) implements IoOp, Req<HandlesResp> {
    public ListReq {
      if (max <= 0 || max > MAX_BATCH) {
        throw new IllegalArgumentException("max");
      }
    }
  }

  /**
   * Shares memory with this server: the client made the file {@code path} ({@link
   * org.flowfs.common.wire.ShmSlots}: {@code slots} slots of {@code slotSize} bytes, beginning with
   * {@code token}; or the server made it on the client's {@link ShmMakeReq}), and from the answer
   * on the payloads of frames on this connection go over in its slots: the client's ({@code
   * toClient} false), or the server's ({@code toClient} true). A server that cannot map that very
   * file (another machine's, another mount namespace's, another user's, not the client's) answers
   * an error, and the connection goes on without.
   */
  @Wire(214)
  record ShmAttachReq(String path, byte[] token, int slots, int slotSize, boolean toClient)
      implements IoOp, Req<CommonOp.OkResp> {
    public ShmAttachReq {
      Objects.requireNonNull(path, "path");
      Objects.requireNonNull(token, "token");
    }
  }

  /**
   * Asks this server to make a file of shared memory for this connection ({@link
   * org.flowfs.common.wire.ShmSlots}: {@code slots} slots of {@code slotSize} bytes), for a client
   * that the server could not share its own file with: one whose files the server may not open
   * (a mount run as root, servers as their own user), but that may open the server's. The client
   * maps the file named in the answer and then attaches it like its own ({@link ShmAttachReq}). The
   * file goes when attached, or when the connection closes; at most two per connection.
   */
  @Wire(215)
  record ShmMakeReq(int slots, int slotSize) implements IoOp, Req<ShmMadeResp> {}

  /** The file of shared memory a server made ({@link ShmMakeReq}), and the token it begins with. */
  @Wire(216)
  record ShmMadeResp(String path, byte[] token) implements IoOp {
    public ShmMadeResp {
      Objects.requireNonNull(path, "path");
      Objects.requireNonNull(token, "token");
    }
  }

  // ---- flows and the eager path (seed 001) ----------------------------------------------------

  /**
   * Asks for a flow between the client and this server's datafile {@code handle}: the server's
   * share (server {@code serverNr} of {@code serverCount} under {@code dist}) of {@code
   * aggregateSize} bytes of {@code fileReq} tiled from {@code fileReqOffset}. For a read the file
   * is {@code fsize} bytes long (nothing past it is sent); a write extends the file. The flows at
   * both ends carry {@code tag}; the answer, {@link FlowAck}, says the server is ready, and a write's
   * data may follow. {@code protocol} names the flow protocol (null: the server's default). A file
   * whose first {@code head} bytes the metadata server keeps (0: none) moves none of them: both
   * ends process with {@link org.flowfs.common.request.FileData#forFlow}.
   */
  @Wire(220)
  record FlowReq(long tag, Handle handle, boolean write, RequestSpec fileReq, long fileReqOffset, long aggregateSize,
      DistSpec dist, int serverNr, int serverCount, long fsize, String protocol, long head) implements IoOp, Req<FlowAck> {
    public FlowReq {
      if (fileReqOffset < 0 || aggregateSize < 0 || fsize < 0 || serverCount <= 0 || serverNr < 0 || serverNr >= serverCount
          || fileReq == null || dist == null || handle == null || head < 0 || head > org.flowfs.common.Layout.MAX_HEAD) {
        throw new IllegalArgumentException("flow request out of range");
      }
    }

    /** A flow of a file without a head. */
    public FlowReq(long tag, Handle handle, boolean write, RequestSpec fileReq, long fileReqOffset, long aggregateSize,
        DistSpec dist, int serverNr, int serverCount, long fsize, String protocol) {
      this(tag, handle, write, fileReq, fileReqOffset, aggregateSize, dist, serverNr, serverCount, fsize, protocol, 0);
    }
  }

  /** The server's ready for a flow: it will move {@code bytes} bytes. */
  @Wire(221)
  record FlowAck(long tag, long bytes) implements IoOp {}

  /** A piece of a flow's data, sent one-way with the flow's tag as the frame id. */
  @Wire(222)
  record FlowData(ByteBuf payload) implements IoOp, HasPayload {}

  /**
   * The end of a flow, sent one-way with its tag: for a write, the trailing ack after the data is
   * stored ({@code size}: the datafile's size); for a read, after the last data. A non-zero
   * {@code errno} ends the flow in error.
   */
  @Wire(223)
  record FlowDone(int errno, long transferred, long size) implements IoOp {}

  /** The eager write: this request, then an {@link EagerData} with {@code tag}, then the answer; no flow. */
  @Wire(224)
  record EagerWriteReq(long tag, Handle handle, long offset, int length) implements IoOp, Req<WriteResp> {
    public EagerWriteReq {
      Objects.requireNonNull(handle, "handle");
      if (offset < 0 || length < 0 || offset > Long.MAX_VALUE - length) {
        throw new IllegalArgumentException("offset or length");
      }
    }
  }

  /** The data of an eager write, one-way with the request's tag as the frame id. */
  @Wire(225)
  record EagerData(ByteBuf payload) implements IoOp, HasPayload {}
}
