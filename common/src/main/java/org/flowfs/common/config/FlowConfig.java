package org.flowfs.common.config;

import java.util.Set;
import org.flowfs.common.flow.BufferedFlowProtocol;
import org.flowfs.common.wire.ShmSlots;

/**
 * How bytes travel between clients and I/O servers (seed 001).
 *
 * @param protocol the flow protocol flows use by default
 * @param bufferSize size of a flow buffer; {@code auto} (the default): {@link
 *     #HUGE_PAGES_BUFFER_SIZE} when {@code node.shm-dir} is in huge pages (a hugetlbfs), where
 *     larger buffers measured faster, else {@link BufferedFlowProtocol#DEFAULT_BUFFER_SIZE}
 * @param buffers buffers per flow of the default protocol (2: double buffering)
 * @param shortWriteMax contiguous writes smaller than this carry their data in the request
 * @param eagerWriteMax contiguous writes up to this size send request, data, ack: no flow
 * @param eagerReadMax contiguous reads up to this size get their data in the answer: no flow
 */
public record FlowConfig(String protocol, int bufferSize, int buffers, int shortWriteMax, int eagerWriteMax, int eagerReadMax) {
  /** The flow buffer size {@code auto} picks when shared memory is in huge pages. */
  public static final int HUGE_PAGES_BUFFER_SIZE = 1 << 20;

  static FlowConfig from(ConfigSource s, NodeConfig node) {
    long size = s.sizeOrAuto("flow.buffer-size", ConfigSource.AUTO, 4096, 8L << 20);
    FlowConfig c = new FlowConfig(
        s.choice("flow.protocol", BufferedFlowProtocol.DOUBLE_BUFFER,
            Set.of(BufferedFlowProtocol.DOUBLE_BUFFER, BufferedFlowProtocol.SINGLE_BUFFER)),
        (int) (size != ConfigSource.AUTO ? size
            : ShmSlots.hugePagesIn(node.shmDir()) ? HUGE_PAGES_BUFFER_SIZE : BufferedFlowProtocol.DEFAULT_BUFFER_SIZE),
        s.integer("flow.buffers", 2, 1, 64),
        (int) s.size("flow.short-write-max", 15 * 1024, 0, 1L << 20),
        (int) s.size("flow.eager-write-max", 64 * 1024, 0, 4L << 20),
        (int) s.size("flow.eager-read-max", 64 * 1024, 0, 4L << 20));
    if (c.shortWriteMax > c.eagerWriteMax) {
      s.problem("key 'flow.short-write-max' is larger than 'flow.eager-write-max'");
    }
    return c;
  }
}
