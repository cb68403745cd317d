package org.flowfs.common.flow;

/** The contract for the default protocol: two buffers per flow, disk and network overlapping. */
class DoubleBufferFlowProtocolTest extends FlowProtocolContract {
  @Override
  FlowProtocol protocol() {
    return BufferedFlowProtocol.doubleBuffer(BUF);
  }

  @Override
  int buffers() {
    return 2;
  }
}
