package xorflow.peer.ysb;

import java.util.Locale;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.HdrHistogram.ConcurrentHistogram;

/**
 * The pre-window latency per second of event time ({@code prewindow_p99_ms_by_second} in
 * {@code peers/ysb-contract.md}): second i holds the views whose event time lies in
 * [T0 + 1000 i, T0 + 1000 (i + 1)), 0 <= i < D. A latency that grows along the series means a
 * backlog built up during the run ({@code xorflow-lab bench sustainable} reads it).
 *
 * <p>One HdrHistogram of µs per second, 2 significant digits (a reported value is within 1 % of
 * the recorded one; ~50 KB each), made when the second's first view arrives. Recording is
 * lock-free, as for the whole-run histogram beside it.
 */
public final class YsbSeries {
    /** Largest value, µs (an hour), as the other histograms. */
    private static final long MAX_US = 3_600_000_000L;

    private final AtomicReferenceArray<ConcurrentHistogram> seconds;

    /** A series of {@code durationS} seconds (1..=1_000_000, checked by {@link YsbArgs}). */
    public YsbSeries(long durationS) {
        seconds = new AtomicReferenceArray<>(Math.toIntExact(durationS));
    }

    /**
     * Records a view's pre-window latency {@code latencyNs} (negative: 0) in the second of its
     * event time {@code eventTimeMs} (epoch ms) after T0 {@code t0Ms}. A view outside
     * [T0, T0 + D s) is left out: the generator makes none.
     */
    public void record(long t0Ms, long eventTimeMs, long latencyNs) {
        long i = Math.floorDiv(eventTimeMs - t0Ms, 1000);
        if (i < 0 || i >= seconds.length()) {
            return;
        }
        ConcurrentHistogram h = seconds.get((int) i);
        if (h == null) {
            seconds.compareAndSet((int) i, null, new ConcurrentHistogram(MAX_US, 2));
            h = seconds.get((int) i);
        }
        h.recordValue(Math.max(0, latencyNs / 1000));
    }

    /**
     * Adds the µs histogram {@code h} of second {@code i} (recorded elsewhere, e.g. in a Flink
     * TaskManager's JVM) to this series; a second outside [0, D) is left out.
     */
    public void add(int i, org.HdrHistogram.AbstractHistogram h) {
        if (i < 0 || i >= seconds.length() || h == null || h.getTotalCount() == 0) {
            return;
        }
        seconds.compareAndSet(i, null, new ConcurrentHistogram(MAX_US, 2));
        seconds.get(i).add(h);
    }

    /** D, the seconds of the series. */
    public int length() {
        return seconds.length();
    }

    /** Second {@code i}'s histogram (µs), or null before its first view. */
    public ConcurrentHistogram second(int i) {
        return seconds.get(i);
    }

    /** The JSON array of the D seconds' 99th percentiles, ms with 3 decimals; 0 for a second without views. */
    public String p99Json() {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < seconds.length(); i++) {
            ConcurrentHistogram h = seconds.get(i);
            long us = h == null || h.getTotalCount() == 0 ? 0 : h.getValueAtPercentile(99);
            b.append(i == 0 ? "" : ",").append(String.format(Locale.ROOT, "%.3f", us / 1000.0));
        }
        return b.append(']').toString();
    }
}
