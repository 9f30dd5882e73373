package xorflow.peer.flink;

import java.time.Duration;
import java.util.List;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.util.OutputTag;
import xorflow.peer.ysb.YsbClock;
import xorflow.peer.ysb.YsbMain;
import xorflow.peer.ysb.YsbReport;
import xorflow.peer.ysb.YsbStats;

/**
 * The Yahoo Streaming Benchmark on Apache Flink (a MiniCluster in this JVM, or with {@code
 * --cluster HOST:PORT} a standalone cluster whose JobManager serves REST there), with the
 * generator inside the job, following {@code peers/ysb-contract.md} as {@code xorflow-lab bench ysb} does:
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
 * (--json), by {@link YsbMain}: exit 2 on bad input or options (naming what and where), 1 when
 * the run fails. The tasks' figures come back as Flink accumulators ({@link YsbAccumulator}), so
 * a cluster of other JVMs reports as the MiniCluster does.
 */
public final class YsbJob implements YsbMain.Job<YsbFlinkArgs> {
    private YsbJob() {}

    /** Tumbling window length, ms. */
    static final long WINDOW_MS = 10_000;

    /** The command line of {@code peers/ysb-contract.md} (Flink's options: {@link YsbFlinkArgs}). */
    public static void main(String[] argv) {
        YsbMain.main(new YsbJob(), argv);
    }

    @Override
    public String engine() {
        return "flink";
    }

    @Override
    public YsbFlinkArgs parse(String[] argv) {
        return YsbFlinkArgs.parse(argv);
    }

    @Override
    public void run(YsbFlinkArgs a) throws Exception {
        Configuration conf = new Configuration();
        StreamExecutionEnvironment env;
        long t0 = a.startMs;
        if (a.cluster != null) {
            // A standalone cluster: wait for its TaskManagers, then fix T0 here (its TaskManagers
            // are other JVMs, each with its own clock statics) far enough ahead for deployment.
            a.cluster.awaitTaskManagers(a.taskManagers, a.parallelism());
            if (t0 == 0) {
                t0 = ((YsbClock.nowNs() / 1_000_000L + a.deployMarginMs) / 1000 + 1) * 1000;
            }
            YsbClock.startMs(t0);
            env = StreamExecutionEnvironment.createRemoteEnvironment(a.cluster.host(), a.cluster.port(), conf);
            env.setParallelism(a.parallelism());
        } else {
            conf.set(TaskManagerOptions.MINI_CLUSTER_NUM_TASK_MANAGERS, a.taskManagers);
            conf.set(TaskManagerOptions.NUM_TASK_SLOTS, a.workers);
            env = StreamExecutionEnvironment.createLocalEnvironment(a.parallelism(), conf);
        }
        build(env, a, t0);
        JobExecutionResult result;
        if (a.dataPorts.isEmpty()) {
            result = env.execute("xorflow-peer-ysb");
        } else {
            // TaskManagers behind delay proxies: the same MiniCluster, started by hand so each
            // TaskManager gets its own data ports (ProxiedMiniCluster).
            MiniClusterConfiguration mc = new MiniClusterConfiguration.Builder()
                    .setConfiguration(conf)
                    .setNumTaskManagers(a.taskManagers)
                    .setNumSlotsPerTaskManager(a.workers)
                    .build();
            try (ProxiedMiniCluster cluster = new ProxiedMiniCluster(mc, a.dataPorts)) {
                cluster.start();
                JobGraph job = env.getStreamGraph().getJobGraph();
                result = cluster.executeJobBlocking(job);
            }
        }
        YsbAccumulator.collect(result).pourIntoStats();
    }

    /** The job's graph on {@code env}, T0 {@code t0} (0: fixed by the first source). */
    private static void build(StreamExecutionEnvironment env, YsbFlinkArgs a, long t0) {
        env.setBufferTimeout(a.bufferTimeoutMs);
        // As Flink's own Nexmark setup runs (pipeline.object-reuse: true): every operator here
        // makes a new record, so chained operators may pass records without copying them.
        env.getConfig().enableObjectReuse();
        env.getConfig().setAutoWatermarkInterval(a.watermarkIntervalMs);
        int s = a.sources;
        YsbFiles files = YsbFiles.of(a);
        YsbSchedule schedule = new YsbSchedule(t0, a.durationS);
        DataStream<Tuple2<String, Long>> views = env
                .addSource(new YsbSource(a.rate, a.events(), t0, files), "events", Types.STRING).setParallelism(s)
                .map(new YsbOperators.Parse()).name("parse").setParallelism(s)
                .filter(e -> e.f4.equals("view")).name("filter-view").setParallelism(s)
                .map(e -> Tuple2.of(e.f2, Long.parseLong(e.f5))).returns(Types.TUPLE(Types.STRING, Types.LONG))
                .name("project").setParallelism(s)
                .assignTimestampsAndWatermarks(WatermarkStrategy
                        .<Tuple2<String, Long>>forBoundedOutOfOrderness(Duration.ofMillis(a.latenessMs))
                        .withTimestampAssigner((e, ts) -> e.f1))
                .name("watermarks").setParallelism(s);
        DataStream<Tuple3<String, String, Long>> joined = views.flatMap(new YsbOperators.Join(files))
                .returns(Types.TUPLE(Types.STRING, Types.STRING, Types.LONG)).name("join").setParallelism(s);
        OutputTag<Tuple3<String, String, Long>> late =
                new OutputTag<>("late", Types.TUPLE(Types.STRING, Types.STRING, Types.LONG));
        SingleOutputStreamOperator<org.apache.flink.api.java.tuple.Tuple4<String, Long, Long, Long>> windows = joined
                .keyBy(e -> e.f0, Types.STRING)
                .window(TumblingEventTimeWindows.of(Duration.ofMillis(WINDOW_MS)))
                .sideOutputLateData(late)
                .aggregate(new YsbOperators.CountMax(), new YsbOperators.Emit(schedule),
                        PrimitiveArrayTypeInfo.LONG_PRIMITIVE_ARRAY_TYPE_INFO, PrimitiveArrayTypeInfo.LONG_PRIMITIVE_ARRAY_TYPE_INFO,
                        Types.TUPLE(Types.STRING, Types.LONG, Types.LONG, Types.LONG))
                .name("window");
        windows.addSink(new YsbOperators.Measure(schedule)).name("sink");
        windows.getSideOutput(late).addSink(new YsbOperators.Late()).name("late");
    }

    @Override
    public String json(YsbFlinkArgs a, List<YsbStats.Row> rows) {
        return YsbReport.json("flink", org.apache.flink.runtime.util.EnvironmentInformation.getVersion(), a, rows,
                ",\"task_managers\":" + a.taskManagers + ",\"window_parallelism\":" + a.parallelism()
                        + ",\"lateness_ms\":" + a.latenessMs + ",\"watermark_interval_ms\":" + a.watermarkIntervalMs
                        + ",\"buffer_timeout_ms\":" + a.bufferTimeoutMs + ",\"object_reuse\":true",
                "");
    }
}
