package org.flowfs.common.wire;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.slf4j.LoggerFactory;

/**
 * Fails a test class when Netty's leak detector reported a buffer that was never released. The
 * tests run with {@code -Dio.netty.leakDetection.level=paranoid} (root pom), so every buffer is
 * tracked; a leak is only noticed once the garbage collector has found the lost buffer and the
 * next buffer allocation polls the detector, which {@link #assertNoLeaks()} forces.
 *
 * <p>Use as {@code @ExtendWith(LeakCheck.class)} on a JUnit class, or call {@link #assertNoLeaks()}
 * from a jqwik {@code @AfterContainer}. A leak is reported by the first check after it is found,
 * which may be a later class than the one that leaked: the report's access records say where.
 */
public final class LeakCheck implements AfterAllCallback {
  private static final List<String> LEAKS = new ArrayList<>();

  static {
    Logger detector = (Logger) LoggerFactory.getLogger(ResourceLeakDetector.class);
    AppenderBase<ILoggingEvent> a = new AppenderBase<>() {
      @Override
      protected void append(ILoggingEvent e) {
        if (e.getLevel().isGreaterOrEqual(Level.ERROR) && e.getFormattedMessage().contains("LEAK")) {
          synchronized (LEAKS) {
            LEAKS.add(e.getFormattedMessage());
          }
        }
      }
    };
    a.setName("leak-check");
    a.setContext(detector.getLoggerContext());
    a.start();
    detector.addAppender(a);
  }

  @Override
  public void afterAll(ExtensionContext context) {
    assertNoLeaks();
  }

  /** Collects garbage, makes the detector look, and throws if it reported any leak. */
  public static void assertNoLeaks() {
    if (ResourceLeakDetector.getLevel() != ResourceLeakDetector.Level.PARANOID) {
      throw new AssertionError("tests must run with -Dio.netty.leakDetection.level=paranoid, not "
          + ResourceLeakDetector.getLevel());
    }
    for (int round = 0; round < 3; round++) {
      System.gc();
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      for (int i = 0; i < 16; i++) {
        ByteBufAllocator.DEFAULT.heapBuffer(1).release();
        ByteBufAllocator.DEFAULT.directBuffer(1).release();
      }
    }
    List<String> found;
    synchronized (LEAKS) {
      found = new ArrayList<>(LEAKS);
      LEAKS.clear();
    }
    if (!found.isEmpty()) {
      throw new AssertionError(found.size() + " buffer(s) leaked:\n" + String.join("\n\n", found));
    }
  }
}
