package xorflow.peer.ysb;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import org.HdrHistogram.Histogram;

/** The YSB run's outputs: counts.csv and the JSON figures (see {@code peers/ysb-contract.md}). */
public final class YsbReport {
    private YsbReport() {}

    /** counts.csv's first line. */
    public static final String HEADER = "campaign_id,window_start_ms,views";

    /**
     * The rows sorted by campaign id, then window start.
     *
     * @throws IllegalStateException if a (campaign, window) was emitted twice
     */
    public static List<YsbStats.Row> sorted(Collection<YsbStats.Row> rows) {
        List<YsbStats.Row> s = new ArrayList<>(rows);
        s.sort(Comparator.comparing(YsbStats.Row::campaign).thenComparingLong(YsbStats.Row::windowStartMs));
        for (int i = 1; i < s.size(); i++) {
            YsbStats.Row a = s.get(i - 1);
            YsbStats.Row b = s.get(i);
            if (a.campaign().equals(b.campaign()) && a.windowStartMs() == b.windowStartMs()) {
                throw new IllegalStateException("window (" + a.campaign() + ", " + a.windowStartMs() + ") emitted twice");
            }
        }
        return s;
    }

    /** Writes {@code rows} to a temporary file beside {@code out}, renamed to it when whole. */
    public static void writeCsv(Path out, List<YsbStats.Row> rows) throws IOException {
        Path abs = out.toAbsolutePath();
        Path tmp = Files.createTempFile(abs.getParent(), "." + abs.getFileName(), ".tmp");
        try {
            try (BufferedWriter w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
                w.write(HEADER);
                w.write('\n');
                for (YsbStats.Row r : rows) {
                    w.write(r.campaign() + "," + r.windowStartMs() + "," + r.views() + "\n");
                }
            }
            Files.move(tmp, abs, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** {"p50":..,"p90":..,"p95":..,"p99":..,"max":..,"count":..} in ms (3 decimals) of a µs histogram. */
    public static String latency(Histogram h) {
        return "{\"p50\":" + ms(h, 50) + ",\"p90\":" + ms(h, 90) + ",\"p95\":" + ms(h, 95) + ",\"p99\":" + ms(h, 99) + ",\"max\":" + ms(h, 100)
                + ",\"count\":" + h.getTotalCount() + "}";
    }

    private static String ms(Histogram h, double q) {
        if (h.getTotalCount() == 0) {
            return "null";
        }
        long us = q >= 100 ? h.getMaxValue() : h.getValueAtPercentile(q);
        return String.format(Locale.ROOT, "%.3f", us / 1000.0);
    }

    /** {@code v} with 3 decimals. */
    public static String num(double v) {
        return String.format(Locale.ROOT, "%.3f", v);
    }

    /**
     * The --json object of a run (field order as in the contract's Outputs): the common fields,
     * with the engine's {@code options} (",\"name\":value" pairs, lateness_ms and
     * watermark_interval_ms among them) between "workers" and "start_ms", and its
     * {@code counters} (the same form, possibly empty) after "unknown_ad_views".
     */
    public static String json(String engine, String version, YsbArgs a, List<YsbStats.Row> rows, String options,
            String counters) {
        long views = rows.stream().mapToLong(YsbStats.Row::views).sum();
        long emitted = YsbStats.EMITTED.sum();
        double span = (YsbStats.LAST_EMIT_NS.get() - YsbStats.FIRST_EMIT_NS.get()) / 1e9;
        Histogram w = YsbStats.WINDOW.copy();
        Histogram u = YsbStats.UPDATED.copy();
        Histogram p = YsbStats.PREWINDOW.copy();
        return "{\"engine\":\"" + engine + "\",\"version\":\"" + version + "\""
                + ",\"rate\":" + a.rate + ",\"duration_s\":" + a.durationS + ",\"sources\":" + a.sources
                + ",\"workers\":" + a.workers + options
                + ",\"start_ms\":" + YsbClock.startMsIfFixed() + ",\"events_expected\":" + a.events() + ",\"events_emitted\":" + emitted
                + ",\"views_counted\":" + views + ",\"windows\":" + rows.size()
                + ",\"late_views\":" + YsbStats.LATE.sum() + ",\"unknown_ad_views\":" + YsbStats.UNKNOWN_AD.sum() + counters
                + ",\"generator_lag_ms_max\":" + num(YsbStats.LAG_MAX_NS.get() / 1e6)
                + ",\"throughput_events_per_s\":" + num(span > 0 ? emitted / span : 0)
                + ",\"window_latency_ms\":" + latency(w)
                + ",\"updated_latency_ms\":" + latency(u)
                + ",\"prewindow_latency_ms\":" + latency(p)
                + ",\"prewindow_p99_ms_by_second\":" + YsbStats.PREWINDOW_BY_SECOND.p99Json() + "}";
    }

    /** The one-line text summary of a run (without --json). */
    public static String text(String engine, YsbArgs a, List<YsbStats.Row> rows) {
        Histogram w = YsbStats.WINDOW.copy();
        return String.format(Locale.ROOT, "%s ysb: %d events at %d/s from T0 %d, %d windows, %d views; "
                        + "window latency p50 %.3f ms p99 %.3f ms; generator lag max %.3f ms",
                engine, YsbStats.EMITTED.sum(), a.rate, YsbClock.startMsIfFixed(), rows.size(),
                rows.stream().mapToLong(YsbStats.Row::views).sum(),
                w.getTotalCount() == 0 ? Double.NaN : w.getValueAtPercentile(50) / 1e3,
                w.getTotalCount() == 0 ? Double.NaN : w.getValueAtPercentile(99) / 1e3,
                YsbStats.LAG_MAX_NS.get() / 1e6);
    }
}
