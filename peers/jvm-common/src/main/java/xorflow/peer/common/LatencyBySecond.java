package xorflow.peer.common;

import java.util.Locale;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.HdrHistogram.ConcurrentHistogram;

/**
 * Element latency per second of the chain's schedule ({@code --latency-by-second}), as the timely
 * peer and {@code xorflow-lab bench chain} record it: second i holds the measured elements due in
 * [start + i s, start + (i + 1) s), so a backlog shows as latency rising along the series
 * ({@code xorflow-lab bench sustainable --workload chain} judges it: sustainable throughput, the
 * Cloudprofiler paper, section 4.3).
 *
 * <p>One HdrHistogram of µs per second, 1 µs to 100 s (larger values count as 100 s), 2
 * significant digits, made when the second's first element arrives: a record is O(1), lock-free
 * and allocates nothing but that. Seconds from the hour on are left out.
 */
public final class LatencyBySecond {
    /** Seconds kept (one hour), as the timely peer's. */
    public static final int MAX_SECONDS = 3600;
    /** Largest value, µs (100 s). */
    static final long MAX_US = 100_000_000L;

    private final AtomicReferenceArray<ConcurrentHistogram> seconds = new AtomicReferenceArray<>(MAX_SECONDS);

    /** Records an element due at {@code dueNs} (nanoTime) that took {@code latencyNs} to arrive. */
    public void record(long startNs, long dueNs, long latencyNs) {
        long i = Math.floorDiv(dueNs - startNs, 1_000_000_000L);
        if (i < 0 || i >= MAX_SECONDS) {
            return;
        }
        ConcurrentHistogram h = seconds.get((int) i);
        if (h == null) {
            seconds.compareAndSet((int) i, null, new ConcurrentHistogram(MAX_US, 2));
            h = seconds.get((int) i);
        }
        h.recordValue(Math.min(MAX_US, Math.max(1, latencyNs / 1000)));
    }

    /** Forgets every second (before the measured run). */
    public void reset() {
        for (int i = 0; i < MAX_SECONDS; i++) {
            seconds.set(i, null);
        }
    }

    /** Seconds up to the last one with an element. */
    private int length() {
        int n = MAX_SECONDS;
        while (n > 0 && seconds.get(n - 1) == null) {
            n--;
        }
        return n;
    }

    /**
     * The JSON fields {@code "element_p99_ms_by_second":[...],"element_count_by_second":[...]}
     * (the timely peer's names): per second the p99 in ms (0 for a second without elements) and
     * the element count; both empty when nothing was recorded.
     */
    public String json() {
        StringBuilder p99 = new StringBuilder("\"element_p99_ms_by_second\":[");
        StringBuilder count = new StringBuilder("\"element_count_by_second\":[");
        for (int i = 0, n = length(); i < n; i++) {
            ConcurrentHistogram h = seconds.get(i);
            long c = h == null ? 0 : h.getTotalCount();
            long us = c == 0 ? 0 : h.getValueAtPercentile(99);
            String sep = i == 0 ? "" : ",";
            p99.append(sep).append(String.format(Locale.ROOT, "%.3f", us / 1000.0));
            count.append(sep).append(c);
        }
        return p99.append("],").append(count).append(']').toString();
    }
}
