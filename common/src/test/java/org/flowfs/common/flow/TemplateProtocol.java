package org.flowfs.common.flow;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.flowfs.common.wire.Envelope;

/**
 * The template protocol (OrangeFS keeps {@code flowproto-template.c}): it moves no data. It records
 * what the flow interface asks of it, in order and with the calling thread, and does on each
 * service what the test says ({@link #onService}; nothing by default, so a flow stays in service
 * until the test completes or fails it). Moves flows from memory to memory or to the network.
 */
final class TemplateProtocol implements FlowProtocol {
  private final String name;
  private volatile FlowInterface flows;
  /** Flows the interface handed over, in order. */
  final List<FlowDescriptor> posted = new CopyOnWriteArrayList<>();
  /** Tags of the flows serviced, in service order. */
  final List<Long> serviced = new CopyOnWriteArrayList<>();
  /** Flows cancelled, in order, and the threads that cancelled them. */
  final List<FlowDescriptor> cancelled = new CopyOnWriteArrayList<>();
  final List<String> cancelThreads = new CopyOnWriteArrayList<>();
  /** Frame ids received. */
  final List<Long> received = new CopyOnWriteArrayList<>();
  final Map<String, Object> info = new ConcurrentHashMap<>();
  volatile boolean initialized;
  volatile boolean shutdown;
  /** What a service call does to the flow, after it is recorded. */
  volatile Consumer<FlowDescriptor> onService = d -> { };

  TemplateProtocol(String name) {
    this.name = name;
  }

  FlowInterface flows() {
    return flows;
  }

  /** Makes every service call complete its flow. */
  TemplateProtocol completing() {
    onService = d -> flows.complete(d);
    return this;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public void initialize(FlowInterface f) {
    this.flows = f;
    initialized = true;
  }

  @Override
  public void shutdown() {
    shutdown = true;
  }

  @Override
  public boolean supports(Endpoint src, Endpoint dest) {
    return src instanceof MemEndpoint && (dest instanceof MemEndpoint || dest instanceof NetEndpoint);
  }

  @Override
  public void post(FlowDescriptor d) {
    posted.add(d);
  }

  @Override
  public int findServiceable() {
    return posted.size();
  }

  @Override
  public void service(FlowDescriptor d) {
    serviced.add(d.tag());
    onService.accept(d);
  }

  @Override
  public void cancel(FlowDescriptor d) {
    cancelled.add(d);
    cancelThreads.add(Thread.currentThread().getName());
  }

  @Override
  public void receive(FlowDescriptor d, Envelope frame) {
    received.add(frame.id());
    frame.release();
  }

  @Override
  public Object getInfo(String key) {
    return info.get(key);
  }

  @Override
  public void setInfo(String key, Object value) {
    if (key.startsWith("readonly")) {
      throw new IllegalArgumentException(name + ": " + key + " is read-only");
    }
    info.put(key, value);
  }
}
