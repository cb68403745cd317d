package org.flowfs.common.request;

/**
 * The named elementary types a {@link Request} is ultimately built of (MPI's predefined
 * datatypes). Each has a name, used by datareps and hints, and a size in bytes, which is the same
 * in the native and the {@code external32} representation for every type listed here.
 *
 * <p>{@link #BYTE} is the default unit: a request built only for moving bytes uses it, and no
 * datarep converts it. {@link #CHAR} is MPI's {@code MPI_CHAR}, one byte (not Java's two-byte
 * {@code char}).
 *
 * <p>An enum: immutable and thread safe.
 */
public enum Elementary {
  BYTE("byte", 1),
  CHAR("char", 1),
  INT8("int8", 1),
  UINT8("uint8", 1),
  INT16("int16", 2),
  UINT16("uint16", 2),
  INT32("int32", 4),
  UINT32("uint32", 4),
  INT64("int64", 8),
  UINT64("uint64", 8),
  FLOAT("float", 4),
  DOUBLE("double", 8);

  private final String typeName;
  private final int size;

  Elementary(String typeName, int size) {
    this.typeName = typeName;
    this.size = size;
  }

  /** The lower-case name of the type ({@code "int32"}, {@code "double"}, ...). */
  public String typeName() {
    return typeName;
  }

  /** The size of one value in bytes. */
  public int size() {
    return size;
  }

  /** The type called {@code typeName}, or {@code IllegalArgumentException}. */
  public static Elementary byName(String typeName) {
    for (Elementary e : values()) {
      if (e.typeName.equals(typeName)) {
        return e;
      }
    }
    throw new IllegalArgumentException("unknown elementary type '" + typeName + "'");
  }
}
