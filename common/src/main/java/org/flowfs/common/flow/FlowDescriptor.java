package org.flowfs.common.flow;

import java.util.concurrent.CompletableFuture;
import org.flowfs.common.Errno;
import org.flowfs.common.request.FileData;
import org.flowfs.common.request.Request;
import org.flowfs.common.request.RequestCursor;
import org.flowfs.common.request.RequestProcessor;
import org.flowfs.common.request.Segments;

/**
 * One movement of data from a source to a destination endpoint (seed 001's flow descriptor), with
 * every field the seed names.
 *
 * <p><b>Who may touch what.</b> Before {@link FlowInterface#post} the caller sets the inputs
 * ({@code src}, {@code dest}, {@code tag}, {@code userPtr}, {@code type}, {@code fileReq}, {@code
 * fileReqOffset}, {@code memReq}, {@code aggregateSize}, {@code fileData}). While the flow is in
 * service only the interface and its protocol touch it; the caller waits on {@link #completion()}
 * or uses the interface's test calls. Once done, the caller reads {@code state}, {@code
 * errorCode} and {@code totalTransferred}. The internal fields belong to the interface and the
 * protocol and are only touched on the service thread.
 */
public final class FlowDescriptor {
  // ---- set by the caller before posting
  private Endpoint src;
  private Endpoint dest;
  private long tag;
  private Object userPtr;
  private String type;
  private Request fileReq;
  private long fileReqOffset;
  private Request memReq;
  private long aggregateSize = -1;
  private FileData fileData;

  // ---- read by the caller after completion
  private volatile FlowState state = FlowState.INITIAL;
  private volatile Errno errorCode = Errno.OK;
  private volatile String errorDetail;
  private volatile long totalTransferred;

  // ---- internal: the flow interface's and the protocol's
  int contextId;
  FlowProtocol flowproto;
  volatile int priority;
  /** Whether the flow sits in the service queue (sched_queue_link). */
  final java.util.concurrent.atomic.AtomicBoolean queued = new java.util.concurrent.atomic.AtomicBoolean();
  long queueSeq;
  private Object flowProtocolData;
  private RequestCursor fileReqState;
  private RequestCursor memReqState;
  private Segments result;
  volatile long lastProgressNanos;
  private CompletableFuture<FlowDescriptor> completion = new CompletableFuture<>();

  FlowDescriptor() {}

  /** Back to the initial state and values (PINT_flow_reset). */
  void reset() {
    src = null;
    dest = null;
    tag = 0;
    userPtr = null;
    type = null;
    fileReq = null;
    fileReqOffset = 0;
    memReq = null;
    aggregateSize = -1;
    fileData = null;
    state = FlowState.INITIAL;
    errorCode = Errno.OK;
    errorDetail = null;
    totalTransferred = 0;
    flowproto = null;
    priority = 0;
    flowProtocolData = null;
    fileReqState = null;
    memReqState = null;
    result = null;
    completion = new CompletableFuture<>();
  }

  // ---- inputs -----------------------------------------------------------------------------------

  public FlowDescriptor src(Endpoint e) {
    this.src = e;
    return this;
  }

  public FlowDescriptor dest(Endpoint e) {
    this.dest = e;
    return this;
  }

  public FlowDescriptor tag(long t) {
    this.tag = t;
    return this;
  }

  public FlowDescriptor userPtr(Object p) {
    this.userPtr = p;
    return this;
  }

  /** The flow protocol to use, by name; null for the interface's default. */
  public FlowDescriptor type(String t) {
    this.type = t;
    return this;
  }

  public FlowDescriptor fileReq(Request r) {
    this.fileReq = r;
    return this;
  }

  public FlowDescriptor fileReqOffset(long o) {
    this.fileReqOffset = o;
    return this;
  }

  public FlowDescriptor memReq(Request r) {
    this.memReq = r;
    return this;
  }

  /** Bytes of the (tiled) file request the flow covers, over all servers; -1: one whole request. */
  public FlowDescriptor aggregateSize(long n) {
    this.aggregateSize = n;
    return this;
  }

  public FlowDescriptor fileData(FileData f) {
    this.fileData = f;
    return this;
  }

  public Endpoint src() {
    return src;
  }

  public Endpoint dest() {
    return dest;
  }

  public long tag() {
    return tag;
  }

  public Object userPtr() {
    return userPtr;
  }

  public String type() {
    return type;
  }

  public Request fileReq() {
    return fileReq;
  }

  public long fileReqOffset() {
    return fileReqOffset;
  }

  public Request memReq() {
    return memReq;
  }

  public long aggregateSize() {
    return aggregateSize >= 0 || fileReq == null ? aggregateSize : fileReq.size();
  }

  public FileData fileData() {
    return fileData;
  }

  /**
   * How many bytes this flow moves: the bytes of its file request (tiled, {@code aggregateSize}
   * of them) that its {@code fileData}'s server holds, short of the end of the file when the
   * flow does not extend it. Both ends of a flow compute the same count.
   */
  public long bytesForServer() {
    Segments s = new Segments(1);
    RequestProcessor.process(RequestCursor.of(fileReq, fileReqOffset, aggregateSize()), fileData, 0, s, 0,
        Long.MAX_VALUE, RequestProcessor.Mode.CKSIZE);
    return s.bytes();
  }

  // ---- results ----------------------------------------------------------------------------------

  public FlowState state() {
    return state;
  }

  public Errno errorCode() {
    return errorCode;
  }

  /** Why the flow ended in the ERROR state, as its end said it; null otherwise. */
  public String errorDetail() {
    return errorDetail;
  }

  public long totalTransferred() {
    return totalTransferred;
  }

  public int priority() {
    return priority;
  }

  public int contextId() {
    return contextId;
  }

  /** Completes (normally, also for the ERROR state) when the flow is done. */
  public CompletableFuture<FlowDescriptor> completion() {
    return completion;
  }

  // ---- for protocols ----------------------------------------------------------------------------

  /** The protocol's private state for this flow (flow_protocol_data). */
  public Object protocolData() {
    return flowProtocolData;
  }

  public void protocolData(Object o) {
    this.flowProtocolData = o;
  }

  /** The file request's processing state (file_req_state). */
  public RequestCursor fileReqState() {
    return fileReqState;
  }

  public void fileReqState(RequestCursor c) {
    this.fileReqState = c;
  }

  /** The memory request's processing state (mem_req_state). */
  public RequestCursor memReqState() {
    return memReqState;
  }

  public void memReqState(RequestCursor c) {
    this.memReqState = c;
  }

  /** The segments of the last processing iteration (result). */
  public Segments result() {
    return result;
  }

  public void result(Segments s) {
    this.result = s;
  }

  /** Counts bytes moved; also marks progress for the stall timeout. */
  public void transferred(long n) {
    totalTransferred += n;
    lastProgressNanos = System.nanoTime();
  }

  void state(FlowState s) {
    this.state = s;
  }

  void errorCode(Errno e) {
    this.errorCode = e;
  }

  void errorDetail(String detail) {
    this.errorDetail = detail;
  }

  @Override
  public String toString() {
    return "flow " + tag + " " + (src == null ? "?" : src.getClass().getSimpleName()) + "->"
        + (dest == null ? "?" : dest.getClass().getSimpleName()) + " " + state + " " + totalTransferred + " bytes" + (errorDetail == null ? "" : " (" + errorDetail + ")");
  }
}
