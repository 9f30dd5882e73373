package xorflow.peer.storm;

import java.util.List;
import org.apache.storm.Config;
import org.apache.storm.LocalCluster;
import org.apache.storm.generated.KillOptions;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.topology.BoltDeclarer;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.topology.base.BaseWindowedBolt;
import xorflow.peer.ysb.YsbMain;
import xorflow.peer.ysb.YsbReport;
import xorflow.peer.ysb.YsbStats;

/**
 * The Yahoo Streaming Benchmark on Apache Storm (LocalCluster, one worker, in this JVM; or with
 * {@code --cluster NIMBUS_HOST:PORT} a Storm cluster's --storm-workers worker JVMs,
 * {@link YsbStormCluster}), with the generator inside the topology, following {@code peers/ysb-contract.md} as
 * {@code xorflow-lab bench ysb} does:
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
 * Output: counts.csv (--output) and one JSON object (--json), by {@link YsbMain}: exit 2 on bad
 * input or options (naming what and where), 1 when the run fails.
 */
public final class YsbTopology implements YsbMain.Job<YsbStormArgs> {
    private YsbTopology() {}

    /** Tumbling window length, ms. */
    static final long WINDOW_MS = 10_000;

    /** The command line of {@code peers/ysb-contract.md} (Storm's options: {@link YsbStormArgs}). */
    public static void main(String[] argv) {
        YsbMain.main(new YsbTopology(), argv);
    }

    @Override
    public String engine() {
        return "storm";
    }

    @Override
    public YsbStormArgs parse(String[] argv) {
        return YsbStormArgs.parse(argv);
    }

    /** Storm's lag for --lateness-ms (see the class comment). */
    static long stormLagMs(YsbStormArgs a) {
        return a.latenessMs + 1;
    }

    @Override
    public void run(YsbStormArgs a) throws Exception {
        if (a.cluster()) {
            YsbStormCluster.run(a, t0 -> topology(a, t0));
            return;
        }
        Config conf = new Config();
        conf.setNumWorkers(1);
        conf.setNumAckers(0);
        conf.setNumEventLoggers(0);
        conf.setMessageTimeoutSecs(300);
        try (LocalCluster cluster = new LocalCluster()) {
            cluster.submitTopology("ysb", conf, topology(a, a.startMs));
            // The spouts fix T0 when they open; the run ends at T0 + D plus the windows' firing.
            long deadline = System.nanoTime() + (a.durationS + 600) * 1_000_000_000L;
            while (YsbStormStats.DONE_TASKS.get() < a.workers) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("timed out: " + YsbStormStats.DONE_TASKS.get() + " of " + a.workers
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

    /**
     * The topology of {@code a}, T0 {@code startMs} (0: in a LocalCluster fixed by the first spout
     * that opens; on a cluster the spouts take T0 from {@link YsbStormWorker} instead).
     */
    static StormTopology topology(YsbStormArgs a, long startMs) {
        int s = a.sources;
        TopologyBuilder b = new TopologyBuilder();
        b.setSpout("events", new YsbSpout(a.rate, a.durationS, startMs, stormLagMs(a)), s);
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
        return b.createTopology();
    }

    /** Storm's windowed bolt as the window (--window bolt). */
    static BaseWindowedBolt windowedBolt(YsbStormArgs a) {
        return new YsbWindowBolt(a.durationS * 1000)
                .withTumblingWindow(BaseWindowedBolt.Duration.of((int) WINDOW_MS))
                .withTimestampExtractor(t -> t.getLongByField("event_time") + 1)
                .withLag(BaseWindowedBolt.Duration.of((int) stormLagMs(a)))
                .withWatermarkInterval(BaseWindowedBolt.Duration.of((int) a.watermarkIntervalMs))
                .withLateTupleStream("late");
    }

    /** Fails the run (after printing its figures) when the window bolt lost views. */
    @Override
    public void check(YsbStormArgs a, List<YsbStats.Row> rows) {
        long dropped = dropped(rows);
        if (dropped != 0) {
            System.out.println(YsbMain.output(this, a, rows));
            throw new IllegalStateException(dropped + " views reached the window bolt but were neither counted nor "
                    + "reported late: Storm's window scan stops at the first tuple more than its lag ("
                    + stormLagMs(a) + " ms) past the window's end, so the sources drifted further apart than that; "
                    + "raise --lateness-ms");
        }
    }

    /**
     * Views that reached the window bolt but were neither counted nor sent to the late stream
     * (Storm's WatermarkTimeEvictionPolicy ends a window's scan at the first tuple more than the
     * lag past the window's end, in arrival order; tuples behind it expire unseen).
     */
    static long dropped(List<YsbStats.Row> rows) {
        return YsbStormStats.ARRIVED.sum() - rows.stream().mapToLong(YsbStats.Row::views).sum() - YsbStats.LATE.sum();
    }

    @Override
    public String json(YsbStormArgs a, List<YsbStats.Row> rows) {
        return YsbReport.json("storm", org.apache.storm.utils.VersionInfo.getVersion(), a, rows,
                (a.cluster() ? ",\"storm_workers\":" + a.stormWorkers : "")
                        + ",\"window\":\"" + a.window + "\"" + ",\"lateness_ms\":" + a.latenessMs + ",\"storm_lag_ms\":" + stormLagMs(a)
                        + ",\"watermark_interval_ms\":" + a.watermarkIntervalMs,
                ",\"parse_errors\":" + YsbStormStats.PARSE_ERRORS.sum() + ",\"views_dropped_by_window\":" + dropped(rows));
    }
}
