package org.flowfs.common.request;

import java.util.Objects;
import org.flowfs.common.Layout;
import org.flowfs.common.dist.Distribution;
import org.flowfs.common.dist.PastHead;

/**
 * What the request processor needs to know about the file (seed 003's {@code
 * PINT_Request_file_data}): its size, which of its datafiles is being processed, how many there
 * are, its distribution, and whether processing may go past the end of the file.
 *
 * <p><b>{@code fsize} is a logical file size in every mode.</b> The seed gives a server the size of
 * its local datafile instead; FlowFS does not, because the two ends of a flow must agree exactly on
 * which bytes move, and a local datafile size cannot tell a hole from the end of the file (a
 * datafile may be short while a later strip on another server holds data). So:
 *
 * <ul>
 *   <li>a client passes the logical file size it knows (from its attributes, after open);
 *   <li>a server is told by the client how far the request extends: for a read, the client sends
 *       the logical size it used (or the end of the request, if smaller) and both sides process
 *       with that {@code fsize} and {@code extendFlag} off, so the server yields exactly the
 *       segments the client expects; bytes at or past the end of the server's local datafile but
 *       below {@code fsize} are holes and read as zeros;
 *   <li>a write uses {@code extendFlag} on, where {@code fsize} is ignored and the datafiles grow
 *       as needed.
 * </ul>
 *
 * <p>An immutable record; thread safe if the distribution is (all built-in ones are).
 *
 * @param fsize logical size of the file in bytes; processing stops at the first request byte at or
 *     past it unless {@code extendFlag} is set
 * @param serverNr number of this server among the file's datafiles, {@code 0 .. serverCount-1}
 * @param serverCount number of datafiles of the file, at most {@link Layout#MAX_DATAFILES} (a
 *     distribution's tables grow with it, and no layout has more)
 * @param distribution how the file's bytes are spread over its datafiles
 * @param extendFlag true to go on past {@code fsize} (writes), false to stop there (reads)
 */
public record FileData(
    long fsize, int serverNr, int serverCount, Distribution distribution, boolean extendFlag) {

  public FileData {
    if (fsize < 0) {
      throw new IllegalArgumentException("fsize must not be negative: " + fsize);
    }
    int most = distribution instanceof PastHead ? Layout.MAX_DATAFILES + 1 : Layout.MAX_DATAFILES;
    if (serverCount < 1 || serverCount > most || serverNr < 0 || serverNr >= serverCount) {
      throw new IllegalArgumentException(
          "server " + serverNr + " of " + serverCount + " is not a valid server number (a file has 1.."
              + Layout.MAX_DATAFILES + " datafiles)");
    }
    Objects.requireNonNull(distribution, "distribution");
  }

  /**
   * What both ends of a flow process with: datafile {@code serverNr} of {@code serverCount}, laid
   * out by {@code distribution}; with {@code head} above 0, the file's first {@code head} bytes are
   * the metadata server's and no flow moves them ({@link PastHead}).
   */
  public static FileData forFlow(long fsize, int serverNr, int serverCount, Distribution distribution, long head,
      boolean extendFlag) {
    return head > 0
        ? new FileData(fsize, serverNr, serverCount + 1, new PastHead(distribution, head), extendFlag)
        : new FileData(fsize, serverNr, serverCount, distribution, extendFlag);
  }

  /** The same file seen from server {@code nr}. */
  public FileData withServer(int nr) {
    return new FileData(fsize, nr, serverCount, distribution, extendFlag);
  }
}
