package xorflow.peer.storm;

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
final class YsbReport {
    private YsbReport() {}

    static final String HEADER = "campaign_id,window_start_ms,views";

    /**
     * The rows sorted by campaign id, then window start.
     *
     * @throws IllegalStateException if a (campaign, window) was emitted twice
     */
    static List<YsbStats.Row> sorted(Collection<YsbStats.Row> rows) {
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
    static void writeCsv(Path out, List<YsbStats.Row> rows) throws IOException {
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

    /** {"p50":..,"p90":..,"p99":..,"max":..,"count":..} in ms (3 decimals) of a µs histogram. */
    static String latency(Histogram h) {
        return "{\"p50\":" + ms(h, 50) + ",\"p90\":" + ms(h, 90) + ",\"p99\":" + ms(h, 99) + ",\"max\":" + ms(h, 100)
                + ",\"count\":" + h.getTotalCount() + "}";
    }

    private static String ms(Histogram h, double q) {
        if (h.getTotalCount() == 0) {
            return "null";
        }
        long us = q >= 100 ? h.getMaxValue() : h.getValueAtPercentile(q);
        return String.format(Locale.ROOT, "%.3f", us / 1000.0);
    }

    static String num(double v) {
        return String.format(Locale.ROOT, "%.3f", v);
    }
}
