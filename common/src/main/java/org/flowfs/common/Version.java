package org.flowfs.common;

/** The FlowFS release and protocol version this build speaks. */
public final class Version {
  public static final String RELEASE = "0.1.0";

  private Version() {}

  public static String describe() {
    return "FlowFS " + RELEASE + " (protocol " + org.flowfs.common.wire.Frames.VERSION + ")";
  }
}
