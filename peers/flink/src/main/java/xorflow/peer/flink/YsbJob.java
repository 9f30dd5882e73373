package xorflow.peer.flink;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import org.HdrHistogram.Histogram;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.SinkFunction;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.util.OutputTag;

/**
 * The Yahoo Streaming Benchmark on Apache Flink (MiniCluster in this JVM), with the generator
 * inside the job, following {@code peers/ysb-contract.md} as {@code xorflow bench ysb} does:
 *
 * <pre>
 * source (S instances, template events on an absolute schedule) -> parse JSON -> filter view
 *   -> project (ad_id, event_time) -> watermarks -> join ad -> campaign
 *   -> keyBy campaign -> 10 s tumbling event-time window (count, largest event time) -> sink
 * </pre>
 *
 * Everything up to the join runs at the source's parallelism S, chained to it; the keyBy crosses
 * to the window's P = --workers * --task-managers subtasks (through Flink's network stack between
 * TaskManagers when there are several). Watermarks: {@code forBoundedOutOfOrderness(--lateness-ms)},
 * emitted every --watermark-interval-ms. Output: counts.csv (--output) and one JSON object
 * (--json). Exit 2 on bad input or options (naming what and where), 1 when the run fails.
 */
public final class YsbJob {
    private YsbJob() {}

    /** Tumbling window length, ms. */
    static final long WINDOW_MS = 10_000;
    /** The template, loaded before the run; the sources read it (same JVM). */
    static volatile YsbTemplate TEMPLATE;
    /** Ad id -> campaign id, loaded before the run; the join reads it (same JVM). */
    static volatile HashMap<String, String> CAMPAIGNS;

    static void run(YsbArgs a) throws Exception {
        Configuration conf = new Configuration();
        conf.set(TaskManagerOptions.MINI_CLUSTER_NUM_TASK_MANAGERS, a.taskManagers);
        conf.set(TaskManagerOptions.NUM_TASK_SLOTS, a.workers);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(a.parallelism(), conf);
        env.setBufferTimeout(a.bufferTimeoutMs);
        env.getConfig().setAutoWatermarkInterval(a.watermarkIntervalMs);
        int s = a.sources;
        DataStream<Tuple2<String, Long>> views = env
                .addSource(new YsbSource(a.rate, a.events(), a.startMs), "events", Types.STRING).setParallelism(s)
                .map(new YsbOperators.Parse()).name("parse").setParallelism(s)
                .filter(e -> e.f4.equals("view")).name("filter-view").setParallelism(s)
                .map(e -> Tuple2.of(e.f2, Long.parseLong(e.f5))).returns(Types.TUPLE(Types.STRING, Types.LONG))
                .name("project").setParallelism(s)
                .assignTimestampsAndWatermarks(WatermarkStrategy
                        .<Tuple2<String, Long>>forBoundedOutOfOrderness(Duration.ofMillis(a.latenessMs))
                        .withTimestampAssigner((e, ts) -> e.f1))
                .name("watermarks").setParallelism(s);
        DataStream<Tuple3<String, String, Long>> joined = views.flatMap(new YsbOperators.Join())
                .returns(Types.TUPLE(Types.STRING, Types.STRING, Types.LONG)).name("join").setParallelism(s);
        OutputTag<Tuple3<String, String, Long>> late =
                new OutputTag<>("late", Types.TUPLE(Types.STRING, Types.STRING, Types.LONG));
        SingleOutputStreamOperator<org.apache.flink.api.java.tuple.Tuple4<String, Long, Long, Long>> windows = joined
                .keyBy(e -> e.f0, Types.STRING)
                .window(TumblingEventTimeWindows.of(Duration.ofMillis(WINDOW_MS)))
                .sideOutputLateData(late)
                .aggregate(new YsbOperators.CountMax(), new YsbOperators.Emit(),
                        PrimitiveArrayTypeInfo.LONG_PRIMITIVE_ARRAY_TYPE_INFO, PrimitiveArrayTypeInfo.LONG_PRIMITIVE_ARRAY_TYPE_INFO,
                        Types.TUPLE(Types.STRING, Types.LONG, Types.LONG, Types.LONG))
                .name("window");
        windows.addSink(new YsbOperators.Measure(a.durationS * 1000)).name("sink");
        windows.getSideOutput(late).addSink(new SinkFunction<>() {
            @Override
            public void invoke(Tuple3<String, String, Long> v, Context ctx) {
                YsbStats.LATE.increment();
            }
        }).name("late");
        env.execute("xorflow-peer-ysb");
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
            if (a.output != null) {
                YsbReport.writeCsv(a.output, rows);
            }
            System.out.println(a.json ? json(a, rows) : text(a, rows));
        } catch (Exception e) {
            System.err.println("error: the run failed: " + e);
            System.exit(1);
        }
        System.exit(0);
    }

    static String json(YsbArgs a, List<YsbStats.Row> rows) {
        long views = rows.stream().mapToLong(YsbStats.Row::views).sum();
        long emitted = YsbStats.EMITTED.sum();
        double span = (YsbStats.LAST_EMIT_NS.get() - YsbStats.FIRST_EMIT_NS.get()) / 1e9;
        Histogram w = YsbStats.WINDOW.copy();
        Histogram u = YsbStats.UPDATED.copy();
        Histogram p = YsbStats.PREWINDOW.copy();
        return "{\"engine\":\"flink\",\"version\":\"" + org.apache.flink.runtime.util.EnvironmentInformation.getVersion() + "\""
                + ",\"rate\":" + a.rate + ",\"duration_s\":" + a.durationS + ",\"sources\":" + a.sources
                + ",\"workers\":" + a.workers + ",\"task_managers\":" + a.taskManagers
                + ",\"window_parallelism\":" + a.parallelism()
                + ",\"lateness_ms\":" + a.latenessMs + ",\"watermark_interval_ms\":" + a.watermarkIntervalMs
                + ",\"buffer_timeout_ms\":" + a.bufferTimeoutMs
                + ",\"start_ms\":" + YsbClock.startMsIfFixed() + ",\"events_expected\":" + a.events() + ",\"events_emitted\":" + emitted
                + ",\"views_counted\":" + views + ",\"windows\":" + rows.size()
                + ",\"late_views\":" + YsbStats.LATE.sum() + ",\"unknown_ad_views\":" + YsbStats.UNKNOWN_AD.sum()
                + ",\"generator_lag_ms_max\":" + YsbReport.num(YsbStats.LAG_MAX_NS.get() / 1e6)
                + ",\"throughput_events_per_s\":" + YsbReport.num(span > 0 ? emitted / span : 0)
                + ",\"window_latency_ms\":" + YsbReport.latency(w)
                + ",\"updated_latency_ms\":" + YsbReport.latency(u)
                + ",\"prewindow_latency_ms\":" + YsbReport.latency(p)
                + ",\"prewindow_p99_ms_by_second\":" + YsbStats.PREWINDOW_BY_SECOND.p99Json() + "}";
    }

    static String text(YsbArgs a, List<YsbStats.Row> rows) {
        Histogram w = YsbStats.WINDOW.copy();
        return String.format(Locale.ROOT, "flink ysb: %d events at %d/s from T0 %d, %d windows, %d views; "
                        + "window latency p50 %.3f ms p99 %.3f ms; generator lag max %.3f ms",
                YsbStats.EMITTED.sum(), a.rate, YsbClock.startMsIfFixed(), rows.size(),
                rows.stream().mapToLong(YsbStats.Row::views).sum(),
                w.getTotalCount() == 0 ? Double.NaN : w.getValueAtPercentile(50) / 1e3,
                w.getTotalCount() == 0 ? Double.NaN : w.getValueAtPercentile(99) / 1e3,
                YsbStats.LAG_MAX_NS.get() / 1e6);
    }
}
