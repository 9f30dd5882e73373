package xorflow.peer.ysb;

import java.io.Serializable;
import java.util.ArrayList;
import org.HdrHistogram.Histogram;

/**
 * What one task or one JVM measured of the YSB run: the figures of {@link YsbStats}, kept apart
 * and sent back to the client, so a run whose tasks are other JVMs (a standalone cluster in
 * network namespaces, docs/wan.md) reports as one in this JVM does. Flink: each task fills its
 * own part on its own thread and sends it as an accumulator (peers/flink's YsbAccumulator).
 * Storm: each worker JVM snapshots its statics into one ({@link #ofStats}) and writes it to a
 * file (peers/storm's YsbStormCluster). The parts are merged ({@link #merge}) and poured into
 * {@link YsbStats} by the client ({@link #pourIntoStats}).
 *
 * <p>Histograms hold µs as {@link YsbStats}'s; the pre-window series one histogram per second of
 * event time after T0, made on the second's first view.
 */
public final class YsbPart implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final long MAX_US = 3_600_000_000L;

    /** Events emitted (sources). */
    public long emitted;
    /** First and last emission, epoch ns; lateness of an emission behind its due time, ns. */
    public long firstEmitNs = Long.MAX_VALUE;
    public long lastEmitNs = Long.MIN_VALUE;
    public long lagMaxNs;
    /** Views dropped as late by the window (must be 0), views whose ad the table lacks. */
    public long late;
    public long unknownAd;
    /** Window latency, updated latency, pre-window latency (µs). */
    public final Histogram window = new Histogram(MAX_US, 3);
    public final Histogram updated = new Histogram(MAX_US, 3);
    public final Histogram prewindow = new Histogram(MAX_US, 3);
    /** Pre-window latency per second of event time after T0 (µs; null until the second's first view). */
    public final ArrayList<Histogram> prewindowBySecond = new ArrayList<>();
    /** The emitted windows. */
    public final ArrayList<YsbStats.Row> rows = new ArrayList<>();

    /**
     * Records a view's pre-window latency, now - its event time {@code eventTimeMs} (epoch ms), in
     * the whole-run histogram and in second {@code (eventTimeMs - t0Ms) / 1000} of the series
     * (left out of the series outside [0, {@code durationS})).
     */
    public void prewindow(long t0Ms, long durationS, long eventTimeMs, long nowNs) {
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
    public static void record(Histogram h, long ns) {
        h.recordValue(Math.max(0, ns / 1000));
    }

    /** Adds {@code o} to this part. */
    public void merge(YsbPart o) {
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

    /**
     * A copy of what this JVM recorded in {@link YsbStats} (Storm's tasks record there, in every
     * worker JVM of a cluster): the per-second series as far as it exists.
     */
    public static YsbPart ofStats() {
        YsbPart p = new YsbPart();
        p.emitted = YsbStats.EMITTED.sum();
        p.firstEmitNs = YsbStats.FIRST_EMIT_NS.get();
        p.lastEmitNs = YsbStats.LAST_EMIT_NS.get();
        p.lagMaxNs = YsbStats.LAG_MAX_NS.get();
        p.late = YsbStats.LATE.sum();
        p.unknownAd = YsbStats.UNKNOWN_AD.sum();
        p.window.add(YsbStats.WINDOW);
        p.updated.add(YsbStats.UPDATED);
        p.prewindow.add(YsbStats.PREWINDOW);
        YsbSeries series = YsbStats.PREWINDOW_BY_SECOND;
        for (int i = 0; series != null && i < series.length(); i++) {
            org.HdrHistogram.AbstractHistogram h = series.second(i);
            Histogram c = null;
            if (h != null && h.getTotalCount() > 0) {
                c = new Histogram(MAX_US, 2);
                c.add(h);
            }
            p.prewindowBySecond.add(c);
        }
        p.rows.addAll(YsbStats.ROWS);
        return p;
    }

    /** Adds the whole run's part (every task's, merged) to {@link YsbStats}, which the report reads. */
    public void pourIntoStats() {
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
