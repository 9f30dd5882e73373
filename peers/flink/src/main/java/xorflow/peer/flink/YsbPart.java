package xorflow.peer.flink;

import java.io.Serializable;
import java.util.ArrayList;
import org.HdrHistogram.Histogram;
import xorflow.peer.ysb.YsbSeries;
import xorflow.peer.ysb.YsbStats;

/**
 * What one Flink task measured of the YSB run: the figures of {@link YsbStats}, kept per task and
 * sent back to the client as the accumulator {@link YsbAccumulator#NAME}, so a run whose
 * TaskManagers are other JVMs (a standalone cluster in network namespaces, docs/wan.md) reports
 * as one in this JVM does. A task fills its own part on its own thread; the parts are merged by
 * Flink and poured into {@link YsbStats} by the client ({@link #pourIntoStats}).
 *
 * <p>Histograms hold µs as {@link YsbStats}'s; the pre-window series one histogram per second of
 * event time after T0, made on the second's first view.
 */
final class YsbPart implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final long MAX_US = 3_600_000_000L;

    /** Events emitted (sources). */
    long emitted;
    /** First and last emission, epoch ns; lateness of an emission behind its due time, ns. */
    long firstEmitNs = Long.MAX_VALUE;
    long lastEmitNs = Long.MIN_VALUE;
    long lagMaxNs;
    /** Views dropped as late by the window (must be 0), views whose ad the table lacks. */
    long late;
    long unknownAd;
    /** Window latency, updated latency, pre-window latency (µs). */
    final Histogram window = new Histogram(MAX_US, 3);
    final Histogram updated = new Histogram(MAX_US, 3);
    final Histogram prewindow = new Histogram(MAX_US, 3);
    /** Pre-window latency per second of event time after T0 (µs; null until the second's first view). */
    final ArrayList<Histogram> prewindowBySecond = new ArrayList<>();
    /** The emitted windows. */
    final ArrayList<YsbStats.Row> rows = new ArrayList<>();

    /**
     * Records a view's pre-window latency, now - its event time {@code eventTimeMs} (epoch ms), in
     * the whole-run histogram and in second {@code (eventTimeMs - t0Ms) / 1000} of the series
     * (left out of the series outside [0, {@code durationS})).
     */
    void prewindow(long t0Ms, long durationS, long eventTimeMs, long nowNs) {
        long us = Math.max(0, (nowNs - eventTimeMs * 1_000_000L) / 1000);
        prewindow.recordValue(us);
        long i = Math.floorDiv(eventTimeMs - t0Ms, 1000);
        if (t0Ms <= 0 || i < 0 || i >= durationS) {
            return;
        }
        while (prewindowBySecond.size() <= i) {
            prewindowBySecond.add(null);
        }
        Histogram h = prewindowBySecond.get((int) i);
        if (h == null) {
            h = new Histogram(MAX_US, 2);
            prewindowBySecond.set((int) i, h);
        }
        h.recordValue(us);
    }

    /** Records a duration in ns as µs (negative: 0) in {@code h}. */
    static void record(Histogram h, long ns) {
        h.recordValue(Math.max(0, ns / 1000));
    }

    /** Adds {@code o} to this part. */
    void merge(YsbPart o) {
        emitted += o.emitted;
        firstEmitNs = Math.min(firstEmitNs, o.firstEmitNs);
        lastEmitNs = Math.max(lastEmitNs, o.lastEmitNs);
        lagMaxNs = Math.max(lagMaxNs, o.lagMaxNs);
        late += o.late;
        unknownAd += o.unknownAd;
        window.add(o.window);
        updated.add(o.updated);
        prewindow.add(o.prewindow);
        for (int i = 0; i < o.prewindowBySecond.size(); i++) {
            Histogram h = o.prewindowBySecond.get(i);
            if (h == null) {
                continue;
            }
            while (prewindowBySecond.size() <= i) {
                prewindowBySecond.add(null);
            }
            if (prewindowBySecond.get(i) == null) {
                prewindowBySecond.set(i, new Histogram(MAX_US, 2));
            }
            prewindowBySecond.get(i).add(h);
        }
        rows.addAll(o.rows);
    }

    /** Adds the whole run's part (every task's, merged) to {@link YsbStats}, which the report reads. */
    void pourIntoStats() {
        YsbStats.EMITTED.add(emitted);
        if (emitted > 0) {
            YsbStats.FIRST_EMIT_NS.accumulate(firstEmitNs);
            YsbStats.LAST_EMIT_NS.accumulate(lastEmitNs);
        }
        YsbStats.LAG_MAX_NS.accumulate(lagMaxNs);
        YsbStats.LATE.add(late);
        YsbStats.UNKNOWN_AD.add(unknownAd);
        YsbStats.WINDOW.add(window);
        YsbStats.UPDATED.add(updated);
        YsbStats.PREWINDOW.add(prewindow);
        YsbSeries series = YsbStats.PREWINDOW_BY_SECOND;
        for (int i = 0; i < prewindowBySecond.size(); i++) {
            series.add(i, prewindowBySecond.get(i));
        }
        YsbStats.ROWS.addAll(rows);
    }
}
