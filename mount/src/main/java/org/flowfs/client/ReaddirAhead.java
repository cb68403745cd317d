package org.flowfs.client;

import com.github.benmanes.caffeine.cache.Cache;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.flowfs.common.Counters;
import org.flowfs.common.FileType;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.wire.MetaOp.Dirent;
import org.flowfs.common.wire.MetaOp.ReaddirResp;

/**
 * Listings asked for ahead of a walk of a tree ({@code find}, {@code du}, {@code ls -R}, {@code
 * diff -r}): a walker that opens a directory a listing here just showed as a subdirectory opens
 * the subdirectories listed after it next, so the first pages of the next few of them are asked
 * for now, while the walker works in this one, and their reads take an answer that is there
 * rather than wait a round trip each. How many are asked for ahead starts at {@link
 * #FIRST_WINDOW} for a listing and doubles with each one used, up to {@code client.readdir-ahead}: one
 * {@code cd} into a directory after an {@code ls} costs the server a couple of listings nobody
 * reads, a walk soon keeps the server a window ahead.
 *
 * <p><b>What holds.</b> A listing asked for ahead is read only by the first reading of its
 * directory, within {@code client.entry-timeout} of when it was asked for, and only when this
 * client made no change since ({@link #changed}: every change answered by the metadata server)
 * and holds no lease: it shows this client's own changes as a listing asked for at the read
 * would, and other clients' changes within the entry timeout, as the names this client caches
 * do. With an entry timeout of 0, or {@code client.readdir-ahead} 0, nothing is asked for ahead.
 *
 * <p>Bounded: {@link #MAX_SUBDIRS} subdirectories remembered of a listing, {@link #MAX_SENT}
 * listings held, each a first page. Thread safe.
 */
final class ReaddirAhead {
  static final int FIRST_WINDOW = 2;
  static final int MAX_SUBDIRS = 4096;
  static final int MAX_SENT = 64;

  /** The subdirectories of one listing, in its order, and how far ahead of its walker they were asked for. */
  private static final class Walk {
    final List<Handle> subdirs = new ArrayList<>();
    int next;
    int window;

    Walk(int window) {
      this.window = window;
    }
  }

  /** Where a subdirectory is in the listing of its parent. */
  private record Place(Walk walk, int index) {}

  /** A first page asked for ahead: when, at which count of this client's changes, for which walk. */
  private record Sent(CompletableFuture<ReaddirResp> page, long changesAt, long sentNanos, Walk walk) {}

  private final long ttlNanos;
  private final int maxWindow;
  private final Duration timeout;
  private final Function<Handle, CompletableFuture<ReaddirResp>> send;
  private final BooleanSupplier leasesIdle;
  private final Counters counters;
  private final AtomicLong changes = new AtomicLong();
  /** The listing being read of each directory (its pages after the first add to it). */
  private final Cache<Handle, Walk> walks;
  private final Cache<Handle, Place> places;
  private final Cache<Handle, Sent> sent;
  /** Directories whose first page was taken from ahead, not yet {@link #listed}, with the window of the walk. */
  private final Cache<Handle, Integer> walking;

  /**
   * @param send asks for the first page of a directory's listing, with attributes
   * @param leasesIdle whether this client holds no lease and asked for none
   */
  ReaddirAhead(Duration ttl, int maxWindow, Duration timeout, Function<Handle, CompletableFuture<ReaddirResp>> send,
      BooleanSupplier leasesIdle, Counters counters) {
    this.ttlNanos = maxWindow == 0 ? 0 : ttl.toNanos();
    this.maxWindow = maxWindow;
    this.timeout = timeout;
    this.send = send;
    this.leasesIdle = leasesIdle;
    this.counters = counters;
    Duration kept = ttl.isZero() ? Duration.ofNanos(1) : ttl;
    this.walks = Caches.expiring(kept, 256);
    this.places = Caches.expiring(kept, 4L * MAX_SUBDIRS);
    this.sent = Caches.expiring(kept, MAX_SENT);
    this.walking = Caches.expiring(kept, MAX_SENT);
  }

  /** This client changed something on the metadata server (the change was answered, or failed). */
  void changed() {
    changes.incrementAndGet();
  }

  /**
   * A page of {@code dir}'s listing was read, its first when {@code first}: remembers its
   * subdirectories. A first page {@link #take taken} from ahead shows a walk under way, which
   * opens the subdirectories it lists next: the first of them are asked for at once.
   */
  void listed(Handle dir, boolean first, List<Dirent> page) {
    if (ttlNanos == 0) {
      return;
    }
    Walk w = first ? null : walks.getIfPresent(dir);
    Integer window = first ? walking.asMap().remove(dir) : null;
    if (w == null) {
      w = new Walk(Math.min(FIRST_WINDOW, maxWindow));
      walks.put(dir, w);
    }
    List<Handle> ask = new ArrayList<>();
    synchronized (w) {
      for (Dirent e : page) {
        if (e.type() == FileType.DIRECTORY && w.subdirs.size() < MAX_SUBDIRS) {
          places.put(e.handle(), new Place(w, w.subdirs.size()));
          w.subdirs.add(e.handle());
        }
      }
      if (window != null && leasesIdle.getAsBoolean()) {
        w.window = window;
        w.next = Math.min(window, w.subdirs.size());
        ask.addAll(w.subdirs.subList(0, w.next));
      }
    }
    send(ask, w);
  }

  /** Directory {@code dir} is opened: when a listing here showed it, asks for the ones listed after it. */
  void opened(Handle dir) {
    Place p = places.getIfPresent(dir);
    if (p == null || !leasesIdle.getAsBoolean()) {
      return;
    }
    Walk w = p.walk();
    List<Handle> ask = new ArrayList<>();
    synchronized (w) {
      int end = Math.min(w.subdirs.size(), p.index() + 1 + w.window);
      for (int i = Math.max(w.next, p.index() + 1); i < end; i++) {
        ask.add(w.subdirs.get(i));
      }
      w.next = Math.max(w.next, end);
    }
    send(ask, w);
  }

  private void send(List<Handle> ask, Walk w) {
    for (Handle h : ask) {
      if (sent.estimatedSize() >= MAX_SENT || sent.getIfPresent(h) != null) {
        continue;
      }
      long at = changes.get(); // before the request leaves: a change answered after it may be missing from the page
      sent.put(h, new Sent(send.apply(h), at, System.nanoTime(), w));
      counters.increment("readdir-ahead.sent");
    }
  }

  /**
   * The first page of {@code dir}'s listing asked for ahead, when it still shows what a listing
   * asked for now would (see the class comment), else null: the caller asks itself.
   */
  ReaddirResp take(Handle dir) {
    Sent s = sent.asMap().remove(dir);
    if (s == null) {
      return null;
    }
    if (System.nanoTime() - s.sentNanos() > ttlNanos) {
      counters.increment("readdir-ahead.dropped");
      return null;
    }
    ReaddirResp page;
    boolean onItsWay = !s.page().isDone();
    long t0 = System.nanoTime();
    try {
      page = Await.get(s.page(), timeout);
    } catch (FsException e) {
      counters.increment("readdir-ahead.dropped");
      return null;
    }
    if (onItsWay) {
      counters.increment("readdir-ahead.waited");
      counters.add("readdir-ahead.wait-us", (System.nanoTime() - t0) / 1000);
    }
    if (changes.get() != s.changesAt() || !leasesIdle.getAsBoolean()) {
      counters.increment("readdir-ahead.dropped");
      return null;
    }
    int window;
    synchronized (s.walk()) {
      window = s.walk().window = Math.min(maxWindow, s.walk().window * 2);
    }
    walking.put(dir, window);
    counters.increment("readdir-ahead.used");
    return page;
  }
}
