package org.flowfs.common.flow;

/** Where a flow is in its life (seed 001's descriptor {@code state}). */
public enum FlowState {
  /** Allocated or reset; the caller may set its fields. */
  INITIAL,
  /** Posted: the flow interface and its protocol own it. */
  IN_SERVICE,
  /** Every byte moved. */
  COMPLETE,
  /** Stopped by a failure; {@link FlowDescriptor#errorCode()} says which. */
  ERROR;

  public boolean isDone() {
    return this == COMPLETE || this == ERROR;
  }
}
