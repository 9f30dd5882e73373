package xorflow.peer.flink;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.LongAccumulator;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.ConcurrentHistogram;

/** What the YSB job's tasks measure, shared through statics: the MiniCluster runs in this JVM. */
final class YsbStats {
    private YsbStats() {}

    /** Histograms hold microseconds, up to an hour. */
    static ConcurrentHistogram histogram() {
        return new ConcurrentHistogram(3_600_000_000L, 3);
    }

    static final LongAdder EMITTED = new LongAdder();
    /** First and last emission by any source, epoch ns. */
    static final LongAccumulator FIRST_EMIT_NS = new LongAccumulator(Long::min, Long.MAX_VALUE);
    static final LongAccumulator LAST_EMIT_NS = new LongAccumulator(Long::max, Long.MIN_VALUE);
    /** Largest lateness of an emission behind its due time, ns. */
    static final LongAccumulator LAG_MAX_NS = new LongAccumulator(Long::max, 0);
    /** now - largest event time of the window, at emission. */
    static final ConcurrentHistogram WINDOW = histogram();
    /** now - window start, at emission (the original YSB's time_updated - window start). */
    static final ConcurrentHistogram UPDATED = histogram();
    /** now - event time, per view arriving at the window operator. */
    static final ConcurrentHistogram PREWINDOW = histogram();
    /** The same latency per second of event time; set by main before the run (D is known then). */
    static volatile YsbSeries PREWINDOW_BY_SECOND;
    static final ConcurrentLinkedQueue<Row> ROWS = new ConcurrentLinkedQueue<>();
    /** Views dropped by the window as late (beyond --lateness-ms); must be 0. */
    static final LongAdder LATE = new LongAdder();
    /** Views whose ad the table lacks (dropped by the join). */
    static final LongAdder UNKNOWN_AD = new LongAdder();

    /** One emitted window. */
    record Row(String campaign, long windowStartMs, long views) {}

    /**
     * Records a view's pre-window latency, now - its event time {@code eventTimeMs} (epoch ms), in
     * {@link #PREWINDOW} and in its second of {@link #PREWINDOW_BY_SECOND}.
     */
    static void prewindow(long eventTimeMs) {
        long ns = YsbClock.nowNs() - eventTimeMs * 1_000_000L;
        record(PREWINDOW, ns);
        PREWINDOW_BY_SECOND.record(YsbClock.startMsIfFixed(), eventTimeMs, ns);
    }

    /** Records a duration in ns, as microseconds (negative: 0). */
    static void record(ConcurrentHistogram h, long ns) {
        h.recordValue(Math.max(0, ns / 1000));
    }
}
