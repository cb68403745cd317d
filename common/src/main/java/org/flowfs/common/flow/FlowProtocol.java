package org.flowfs.common.flow;

import org.flowfs.common.wire.Envelope;

/**
 * A way of moving a flow's data between two kinds of endpoints (seed 001's {@code flowproto_ops}),
 * registered by name with the {@link FlowInterface} and chosen per flow by its {@code type}.
 *
 * <p>A protocol is not autonomous: it does one iteration of work per {@link #service} call, and
 * when an event (a disk operation done, data arrived, a send written) makes a flow ready for more,
 * it hands the flow to the interface's queue with {@link FlowInterface#ready}. {@link #service}
 * is only ever called on the interface's service thread, one flow at a time, so a protocol keeps
 * each flow's private state in {@link FlowDescriptor#protocolData()} without locks, as long as
 * event callbacks only record the event and call {@code ready}.
 */
public interface FlowProtocol {
  /** The name flows select the protocol by (their {@code type}). */
  String name();

  /** Called once before any flow is posted (flowproto_initialize). */
  void initialize(FlowInterface flows);

  /** Stops the protocol, failing the flows it still holds (flowproto_finalize). */
  void shutdown();

  /** Whether it moves data from {@code src} to {@code dest} endpoints of these kinds. */
  boolean supports(Endpoint src, Endpoint dest);

  /** Takes a flow: allocates what it needs and begins datatype processing (flowproto_post). */
  void post(FlowDescriptor d);

  /**
   * Flows of this protocol that are ready for service or done (flowproto_find_serviceable). With
   * the event-driven interface, protocols report readiness through {@link FlowInterface#ready}
   * as it happens; this returns how many flows the protocol holds, for diagnostics.
   */
  int findServiceable();

  /** Does the next piece of work on a ready flow (flowproto_service). */
  void service(FlowDescriptor d);

  /**
   * Releases what a flow holds because it failed (its {@link FlowDescriptor#errorCode()} says
   * why); on the service thread. The interface ends the flow afterwards.
   */
  void cancel(FlowDescriptor d);

  /** A network frame for a flow of this protocol (data, or the peer's trailing ack); any thread. */
  void receive(FlowDescriptor d, Envelope frame);

  /** Reads an optional parameter (flowproto_getinfo); null if unknown. */
  Object getInfo(String key);

  /** Sets an optional parameter (flowproto_setinfo). */
  void setInfo(String key, Object value);
}
