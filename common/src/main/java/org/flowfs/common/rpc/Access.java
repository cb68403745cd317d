package org.flowfs.common.rpc;

/** Whether an operation only reads server state or modifies it. */
public enum Access {
  READ_ONLY,
  MODIFY
}
