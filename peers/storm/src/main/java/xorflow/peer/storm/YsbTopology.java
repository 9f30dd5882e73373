package xorflow.peer.storm;

import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import org.HdrHistogram.Histogram;
import org.apache.storm.Config;
import org.apache.storm.LocalCluster;
import org.apache.storm.generated.KillOptions;
import org.apache.storm.topology.BoltDeclarer;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.topology.base.BaseWindowedBolt;

/**
 * The Yahoo Streaming Benchmark on Apache Storm (LocalCluster, one worker, in this JVM), with the
 * generator inside the topology, following {@code peers/ysb-contract.md} as
 * {@code xorflow bench ysb} does:
 *
 * <pre>
 * spout "events" (S tasks) -> deserialize -> filter view -> projection -> join   (S tasks each,
 *   grouped by source; one join output stream per source) -> window (P tasks, by campaign) -> sink
 * </pre>
 *
 * The window, --window:
 * <ul>
 *   <li>{@code processor} (default): the original YSB's CampaignProcessor
 *       ({@link YsbCampaignProcessor}), buckets flushed every second. Exact at any load.
 *   <li>{@code bolt}: Storm's windowed bolt ({@link YsbWindowBolt}): {@code withTumblingWindow(10 s)},
 *       event time from event_time + 1 (Storm's windows are (end - 10 s, end]),
 *       {@code withLag(--lateness-ms + 1)} (Storm accepts a tuple whose time equals the watermark
 *       although the window ending there has fired; one more ms keeps it out of a fired window, the
 *       counterpart of Flink's bounded out-of-orderness), watermarks every --watermark-interval-ms
 *       (the least over the per-source streams, as Flink's), late views counted on the late-tuple
 *       stream. Exact only while the sources stay within the lag of each other: Storm's window scan
 *       stops at the first tuple (in arrival order) more than the lag past the window's end, and
 *       the views queued behind it expire uncounted. The run detects that and exits 1.
 * </ul>
 * Output: counts.csv (--output) and one JSON object (--json). Exit 2 on bad input or options
 * (naming what and where), 1 when the run fails.
 */
public final class YsbTopology {
    private YsbTopology() {}

    /** Tumbling window length, ms. */
    static final long WINDOW_MS = 10_000;
    /** The template, loaded before the run; the spouts read it (same JVM). */
    static volatile YsbTemplate TEMPLATE;
    /** Ad id -> campaign id, loaded before the run; the join reads it (same JVM). */
    static volatile HashMap<String, String> CAMPAIGNS;

    /** Storm's lag for --lateness-ms (see the class comment). */
    static long stormLagMs(YsbArgs a) {
        return a.latenessMs + 1;
    }

    static void run(YsbArgs a) throws Exception {
        int s = a.sources;
        TopologyBuilder b = new TopologyBuilder();
        b.setSpout("events", new YsbSpout(a.rate, a.durationS, a.startMs, stormLagMs(a)), s);
        b.setBolt("deserialize", new YsbBolts.Deserialize(), s).customGrouping("events", new YsbGrouping(false));
        b.setBolt("filter", new YsbBolts.Filter(), s).customGrouping("deserialize", new YsbGrouping(false));
        b.setBolt("projection", new YsbBolts.Project(), s).customGrouping("filter", new YsbGrouping(false));
        b.setBolt("join", new YsbBolts.Join(s), s).customGrouping("projection", new YsbGrouping(false));
        BoltDeclarer w = a.window.equals("processor")
                ? b.setBolt("window", new YsbCampaignProcessor(a.durationS * 1000, s), a.workers)
                : b.setBolt("window", new YsbWindowBolt.Timed(windowedBolt(a)), a.workers);
        for (int i = 0; i < s; i++) {
            w.customGrouping("join", YsbBolts.Join.stream(i), new YsbGrouping(true));
        }
        if (a.window.equals("bolt")) {
            b.setBolt("late", new YsbBolts.Late(), 1).shuffleGrouping("window", "late");
        }
        Config conf = new Config();
        conf.setNumWorkers(1);
        conf.setNumAckers(0);
        conf.setNumEventLoggers(0);
        conf.setMessageTimeoutSecs(300);
        try (LocalCluster cluster = new LocalCluster()) {
            cluster.submitTopology("ysb", conf, b.createTopology());
            // The spouts fix T0 when they open; the run ends at T0 + D plus the windows' firing.
            long deadline = System.nanoTime() + (a.durationS + 600) * 1_000_000_000L;
            while (YsbStats.DONE_TASKS.get() < a.workers) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("timed out: " + YsbStats.DONE_TASKS.get() + " of " + a.workers
                            + " window tasks saw the end of the run");
                }
                Thread.sleep(10);
            }
            // Late views go to the late bolt on another executor: let the last of them arrive.
            Thread.sleep(500);
            KillOptions now = new KillOptions();
            now.set_wait_secs(0);
            cluster.killTopologyWithOpts("ysb", now);
        }
    }

    /** Storm's windowed bolt as the window (--window bolt). */
    static BaseWindowedBolt windowedBolt(YsbArgs a) {
        return new YsbWindowBolt(a.durationS * 1000)
                .withTumblingWindow(BaseWindowedBolt.Duration.of((int) WINDOW_MS))
                .withTimestampExtractor(t -> t.getLongByField("event_time") + 1)
                .withLag(BaseWindowedBolt.Duration.of((int) stormLagMs(a)))
                .withWatermarkInterval(BaseWindowedBolt.Duration.of((int) a.watermarkIntervalMs))
                .withLateTupleStream("late");
    }

    public static void main(String[] argv) {
        YsbArgs a;
        try {
            a = YsbArgs.parse(argv);
            TEMPLATE = YsbTemplate.load(a.events);
            CAMPAIGNS = YsbCampaigns.load(a.adCampaigns);
            YsbStats.PREWINDOW_BY_SECOND = new YsbSeries(a.durationS);
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.exit(2);
            return;
        }
        try {
            run(a);
            List<YsbStats.Row> rows = YsbReport.sorted(YsbStats.ROWS);
            long emitted = YsbStats.EMITTED.sum();
            if (emitted != a.events()) {
                throw new IllegalStateException(emitted + " of " + a.events() + " events emitted");
            }
            long dropped = dropped(rows);
            if (dropped != 0) {
                System.out.println(a.json ? json(a, rows) : text(a, rows));
                throw new IllegalStateException(dropped + " views reached the window bolt but were neither counted nor "
                        + "reported late: Storm's window scan stops at the first tuple more than its lag ("
                        + stormLagMs(a) + " ms) past the window's end, so the sources drifted further apart than that; "
                        + "raise --lateness-ms");
            }
            if (a.output != null) {
                YsbReport.writeCsv(a.output, rows);
            }
            System.out.println(a.json ? json(a, rows) : text(a, rows));
        } catch (Exception e) {
            System.err.println("error: the run failed: " + e);
            System.out.flush();
            System.exit(1);
        }
        System.out.flush();
        // LocalCluster leaves non-daemon threads behind.
        System.exit(0);
    }

    /**
     * Views that reached the window bolt but were neither counted nor sent to the late stream
     * (Storm's WatermarkTimeEvictionPolicy ends a window's scan at the first tuple more than the
     * lag past the window's end, in arrival order; tuples behind it expire unseen).
     */
    static long dropped(List<YsbStats.Row> rows) {
        return YsbStats.ARRIVED.sum() - rows.stream().mapToLong(YsbStats.Row::views).sum() - YsbStats.LATE.sum();
    }

    static String json(YsbArgs a, List<YsbStats.Row> rows) {
        long views = rows.stream().mapToLong(YsbStats.Row::views).sum();
        long emitted = YsbStats.EMITTED.sum();
        double span = (YsbStats.LAST_EMIT_NS.get() - YsbStats.FIRST_EMIT_NS.get()) / 1e9;
        Histogram w = YsbStats.WINDOW.copy();
        Histogram u = YsbStats.UPDATED.copy();
        Histogram p = YsbStats.PREWINDOW.copy();
        return "{\"engine\":\"storm\",\"version\":\"" + org.apache.storm.utils.VersionInfo.getVersion() + "\""
                + ",\"rate\":" + a.rate + ",\"duration_s\":" + a.durationS + ",\"sources\":" + a.sources
                + ",\"workers\":" + a.workers + ",\"window\":\"" + a.window + "\""
                + ",\"lateness_ms\":" + a.latenessMs + ",\"storm_lag_ms\":" + stormLagMs(a)
                + ",\"watermark_interval_ms\":" + a.watermarkIntervalMs
                + ",\"start_ms\":" + YsbClock.startMsIfFixed() + ",\"events_expected\":" + a.events() + ",\"events_emitted\":" + emitted
                + ",\"views_counted\":" + views + ",\"windows\":" + rows.size()
                + ",\"late_views\":" + YsbStats.LATE.sum() + ",\"unknown_ad_views\":" + YsbStats.UNKNOWN_AD.sum()
                + ",\"parse_errors\":" + YsbStats.PARSE_ERRORS.sum() + ",\"views_dropped_by_window\":" + dropped(rows)
                + ",\"generator_lag_ms_max\":" + YsbReport.num(YsbStats.LAG_MAX_NS.get() / 1e6)
                + ",\"throughput_events_per_s\":" + YsbReport.num(span > 0 ? emitted / span : 0)
                + ",\"window_latency_ms\":" + YsbReport.latency(w)
                + ",\"updated_latency_ms\":" + YsbReport.latency(u)
                + ",\"prewindow_latency_ms\":" + YsbReport.latency(p)
                + ",\"prewindow_p99_ms_by_second\":" + YsbStats.PREWINDOW_BY_SECOND.p99Json() + "}";
    }

    static String text(YsbArgs a, List<YsbStats.Row> rows) {
        Histogram w = YsbStats.WINDOW.copy();
        return String.format(Locale.ROOT, "storm ysb: %d events at %d/s from T0 %d, %d windows, %d views; "
                        + "window latency p50 %.3f ms p99 %.3f ms; generator lag max %.3f ms",
                YsbStats.EMITTED.sum(), a.rate, YsbClock.startMsIfFixed(), rows.size(),
                rows.stream().mapToLong(YsbStats.Row::views).sum(),
                w.getTotalCount() == 0 ? Double.NaN : w.getValueAtPercentile(50) / 1e3,
                w.getTotalCount() == 0 ? Double.NaN : w.getValueAtPercentile(99) / 1e3,
                YsbStats.LAG_MAX_NS.get() / 1e6);
    }
}
