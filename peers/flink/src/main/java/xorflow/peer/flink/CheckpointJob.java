package xorflow.peer.flink;

import java.time.Duration;
import java.util.Locale;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.checkpoint.CheckpointStatsSnapshot;
import org.apache.flink.runtime.checkpoint.StatsSummarySnapshot;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.DiscardingSink;
import org.apache.flink.streaming.api.functions.source.RichParallelSourceFunction;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;

/**
 * The checkpoint-cost workload of {@code xorflow-lab bench checkpoints} on Apache Flink: the same
 * graph as {@code xorflow-lab bench chain --keyed-window W --keys K --stages S}, with RocksDB
 * incremental checkpoints at the same interval (or none).
 *
 * <p>Graph: a parallel source (subtask i of P emits ids i, i + P, ... as fast as flow control
 * allows; event time = id, monotonous watermarks), S stages of {@code rebalance().map(identity)},
 * {@code keyBy(id % K)}, a tumbling event-time window of W ids counting per key, a discarding
 * sink. The job runs on a MiniCluster in this JVM with P slots, so its checkpoint statistics
 * (Flink's own: end-to-end duration from trigger to the last acknowledgement, and checkpointed
 * size) are read from the archived execution graph after the run. Prints one JSON object with
 * the field names xorflow's checkpoint measures use.
 */
public final class CheckpointJob {
    private CheckpointJob() {}

    /** Emits its share of ids 0..n as fast as the network stack takes them. */
    static final class Ids extends RichParallelSourceFunction<Long> {
        private final long total;
        private volatile boolean running = true;

        Ids(long total) {
            this.total = total;
        }

        @Override
        public void run(SourceContext<Long> ctx) {
            int p = getRuntimeContext().getTaskInfo().getNumberOfParallelSubtasks();
            int i = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            for (long id = i; id < total && running; id += p) {
                // Emission and checkpoint barriers are serialized by the checkpoint lock.
                synchronized (ctx.getCheckpointLock()) {
                    ctx.collect(id);
                }
            }
        }

        @Override
        public void cancel() {
            running = false;
        }
    }

    /** Counts the elements of a key's window. */
    static final class Count implements AggregateFunction<Long, Long, Long> {
        @Override
        public Long createAccumulator() {
            return 0L;
        }

        @Override
        public Long add(Long value, Long acc) {
            return acc + 1;
        }

        @Override
        public Long getResult(Long acc) {
            return acc;
        }

        @Override
        public Long merge(Long a, Long b) {
            return a + b;
        }
    }

    private static long arg(String[] args, String name, long dflt) {
        for (int i = 0; i + 1 < args.length; i++) {
            if (args[i].equals(name)) {
                return Long.parseLong(args[i + 1]);
            }
        }
        return dflt;
    }

    private static String strArg(String[] args, String name, String dflt) {
        for (int i = 0; i + 1 < args.length; i++) {
            if (args[i].equals(name)) {
                return args[i + 1];
            }
        }
        return dflt;
    }

    /**
     * Options: --elements N --keys K --keyed-window W --stages S --workers P
     * --checkpoint-interval-ms MS (0: no checkpoints) --checkpoint-dir DIR.
     */
    public static void main(String[] args) throws Exception {
        long elements = arg(args, "--elements", 100_000_000L);
        long keys = arg(args, "--keys", 10_000L);
        long window = arg(args, "--keyed-window", 1_000_000L);
        int stages = (int) arg(args, "--stages", 2);
        int workers = (int) arg(args, "--workers", 2);
        long intervalMs = arg(args, "--checkpoint-interval-ms", 0);
        String dir = strArg(args, "--checkpoint-dir", "/tmp/xorflow-flink-checkpoints");

        Configuration conf = new Configuration();
        conf.setString("taskmanager.memory.managed.size", "256m");
        conf.setString("taskmanager.memory.network.min", "128m");
        conf.setString("taskmanager.memory.network.max", "128m");
        // RocksDB with and without checkpoints: the checkpoint interval is the only difference.
        conf.setString("state.backend.type", "rocksdb");
        conf.setString("execution.checkpointing.incremental", "true");
        conf.setString("state.checkpoints.dir", "file://" + dir);
        if (intervalMs > 0) {
            conf.setString("execution.checkpointing.interval", intervalMs + " ms");
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(workers);
        DataStream<Long> s = env.addSource(new Ids(elements))
                .assignTimestampsAndWatermarks(
                        WatermarkStrategy.<Long>forMonotonousTimestamps()
                                .withTimestampAssigner((id, ts) -> id));
        for (int k = 0; k < stages; k++) {
            s = s.rebalance().map(x -> x).returns(Long.class);
        }
        s.keyBy(id -> id % keys)
                .window(TumblingEventTimeWindows.of(Duration.ofMillis(window)))
                .aggregate(new Count())
                .addSink(new DiscardingSink<>());
        JobGraph graph = env.getStreamGraph().getJobGraph();

        MiniClusterConfiguration mc = new MiniClusterConfiguration.Builder()
                .setConfiguration(conf)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(workers)
                .build();
        try (MiniCluster cluster = new MiniCluster(mc)) {
            cluster.start();
            long t0 = System.nanoTime();
            JobID id = cluster.submitJob(graph).get().getJobID();
            cluster.requestJobResult(id).get();
            double elapsed = (System.nanoTime() - t0) / 1e9;
            AccessExecutionGraph g = cluster.getArchivedExecutionGraph(id).get();
            CheckpointStatsSnapshot cs = g.getCheckpointStatsSnapshot();
            long completed = cs == null ? 0 : cs.getCounts().getNumberOfCompletedCheckpoints();
            double p50 = 0, p99 = 0, max = 0;
            long bytes = 0;
            if (completed > 0) {
                StatsSummarySnapshot d = cs.getSummaryStats().getEndToEndDurationStats();
                p50 = d.getQuantile(0.5);
                p99 = d.getQuantile(0.99);
                max = d.getMaximum();
                StatsSummarySnapshot size = cs.getSummaryStats().getCheckpointedSize();
                bytes = (long) (size.getAverage() * completed);
            }
            System.out.println(String.format(Locale.ROOT,
                    "{\"system\":\"flink\",\"elements\":%d,\"elapsed_s\":%.6f,\"elements_per_s\":%.1f,"
                            + "\"checkpoints\":{\"completed\":%d,\"bytes\":%d,\"duration_p50_ms\":%.3f,"
                            + "\"duration_p99_ms\":%.3f,\"duration_max_ms\":%.3f}}",
                    elements, elapsed, elements / elapsed, completed, bytes, p50, p99, max));
        }
    }
}
