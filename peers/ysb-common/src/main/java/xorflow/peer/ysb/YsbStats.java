package xorflow.peer.ysb;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.LongAccumulator;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.ConcurrentHistogram;

/**
 * What the YSB run measured, which the report reads. Storm's tasks record here directly (its
 * LocalCluster runs in this JVM; on a Storm cluster each worker JVM records in its own statics
 * and hands a {@link YsbPart#ofStats} copy to the client, which adds the parts here); Flink's
 * tasks keep their own parts, which come back as accumulators and are added here by the client
 * (so its TaskManagers may be other JVMs).
 * Engine-only figures live beside the engine's job.
 */
public final class YsbStats {
    private YsbStats() {}

    /** Histograms hold microseconds, up to an hour. */
    public static ConcurrentHistogram histogram() {
        return new ConcurrentHistogram(3_600_000_000L, 3);
    }

    /** Events emitted by all sources (each adds its count when it ends). */
    public static final LongAdder EMITTED = new LongAdder();
    /** First and last emission by any source, epoch ns. */
    public static final LongAccumulator FIRST_EMIT_NS = new LongAccumulator(Long::min, Long.MAX_VALUE);
    public static final LongAccumulator LAST_EMIT_NS = new LongAccumulator(Long::max, Long.MIN_VALUE);
    /** Largest lateness of an emission behind its due time, ns. */
    public static final LongAccumulator LAG_MAX_NS = new LongAccumulator(Long::max, 0);
    /** now - largest event time of the window, at emission. */
    public static final ConcurrentHistogram WINDOW = histogram();
    /** now - window start, at emission (the original YSB's time_updated - window start). */
    public static final ConcurrentHistogram UPDATED = histogram();
    /** now - event time, per view arriving at the window operator (Flink) or bolt executor (Storm). */
    public static final ConcurrentHistogram PREWINDOW = histogram();
    /** The same latency per second of event time; set by main before the run (D is known then). */
    public static volatile YsbSeries PREWINDOW_BY_SECOND;
    /** The emitted windows, in emission order. */
    public static final ConcurrentLinkedQueue<Row> ROWS = new ConcurrentLinkedQueue<>();
    /** Views dropped by the window as late (beyond --lateness-ms); must be 0. */
    public static final LongAdder LATE = new LongAdder();
    /** Views whose ad the table lacks (dropped by the join). */
    public static final LongAdder UNKNOWN_AD = new LongAdder();

    /** One emitted window (serializable: Flink's TaskManagers in other JVMs send rows back). */
    public record Row(String campaign, long windowStartMs, long views) implements java.io.Serializable {}

    /**
     * Records a view's pre-window latency, now - its event time {@code eventTimeMs} (epoch ms), in
     * {@link #PREWINDOW} and in its second of {@link #PREWINDOW_BY_SECOND}.
     */
    public static void prewindow(long eventTimeMs) {
        long ns = YsbClock.nowNs() - eventTimeMs * 1_000_000L;
        record(PREWINDOW, ns);
        PREWINDOW_BY_SECOND.record(YsbClock.startMsIfFixed(), eventTimeMs, ns);
    }

    /** Records a duration in ns, as microseconds (negative: 0). */
    public static void record(ConcurrentHistogram h, long ns) {
        h.recordValue(Math.max(0, ns / 1000));
    }
}
