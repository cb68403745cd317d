package org.flowfs.common.flow;

/** The contract for the single-buffer protocol: one buffer per flow, read then sent, or received then stored. */
class SingleBufferFlowProtocolTest extends FlowProtocolContract {
  @Override
  FlowProtocol protocol() {
    return BufferedFlowProtocol.singleBuffer(BUF);
  }

  @Override
  int buffers() {
    return 1;
  }
}
