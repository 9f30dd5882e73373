package xorflow.peer.flink;

import java.time.Duration;
import xorflow.peer.common.LatencyBySecond;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAccumulator;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkOutput;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.SinkFunction;
import org.apache.flink.streaming.api.functions.source.RichParallelSourceFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * The trAcker paper's chain workload (docs/papers.md) on Apache Flink, measured the way
 * {@code xorflow-lab bench chain} measures itself, for {@code xorflow-lab bench peers}.
 *
 * <p>Graph: a parallel source, K stages of {@code rebalance().map(identity)}, then either a
 * measuring sink (granularity 0: no watermarks, no completeness tracking) or a tumbling
 * event-time window of W (element id = event time) keyed so that each of the P window subtasks
 * owns one key. Source subtask i of P emits ids i, i + P, ... on an absolute schedule (id n is due
 * n / rate seconds after the start) and carries the due time in the element (nanoTime), so
 * latency has no coordinated omission. Watermarks are either punctuated (one per substream of W
 * each source subtask passes: Flink's counterpart of xorflow's markers) or periodic
 * ({@code forMonotonousTimestamps} every {@code --watermark-interval-ms}).
 *
 * <p>Measured after the first {@code --warmup} ids: notification latency (arrival of a window's
 * last element at the window operator to the window firing, per key and window), element latency
 * (due time to arrival at the last operator), with {@code --latency-by-second} also per second of
 * the schedule ({@link LatencyBySecond}), elements/s (all elements over the start to the last
 * event). The JVM is warmed by {@code --warmup-runs} earlier runs of the same job in this JVM.
 */
public final class ChainJob {
    private ChainJob() {}

    /** Measurements shared by the job's tasks: the MiniCluster runs in this JVM. */
    static final class Stats {
        static final AtomicLong START_NS = new AtomicLong();
        static final ConcurrentHistogram NOTIFICATION = new ConcurrentHistogram(3_600_000_000_000L, 3);
        static final ConcurrentHistogram ELEMENT = new ConcurrentHistogram(3_600_000_000_000L, 3);
        /** {@link #ELEMENT} per second of the schedule ({@code --latency-by-second}). */
        static final LatencyBySecond ELEMENT_BY_SECOND = new LatencyBySecond();
        static final LongAccumulator LAST_EVENT_NS = new LongAccumulator(Long::max, 0);
        static final LongAccumulator FIRST_MEASURED_EMIT_NS = new LongAccumulator(Long::min, Long.MAX_VALUE);
        static final LongAccumulator LAST_MEASURED_EMIT_NS = new LongAccumulator(Long::max, 0);
        static final LongAdder MEASURED_EMITTED = new LongAdder();
        static final LongAdder ARRIVED = new LongAdder();
        /** Per fired window: {window end, last arrival, firing}, nanoTime; at most SLOT_LOG_CAP. */
        static final java.util.concurrent.ConcurrentLinkedQueue<long[]> SLOT_LOG =
                new java.util.concurrent.ConcurrentLinkedQueue<>();
        static final AtomicLong SLOT_LOG_SIZE = new AtomicLong();
        static final long SLOT_LOG_CAP = 1L << 21;

        static void reset() {
            SLOT_LOG.clear();
            SLOT_LOG_SIZE.set(0);
            START_NS.set(0);
            NOTIFICATION.reset();
            ELEMENT.reset();
            ELEMENT_BY_SECOND.reset();
            LAST_EVENT_NS.reset();
            FIRST_MEASURED_EMIT_NS.reset();
            LAST_MEASURED_EMIT_NS.reset();
            MEASURED_EMITTED.reset();
            ARRIVED.reset();
        }

        /** The run's start: the first source subtask to ask sets it. */
        static long start() {
            START_NS.compareAndSet(0, System.nanoTime());
            return START_NS.get();
        }
    }

    /** Command-line options (the names of {@code xorflow-lab bench chain} where they mean the same). */
    static final class Args {
        /** Slots per TaskManager, one subtask of each operator per slot. */
        int workers = 2;
        /**
         * TaskManagers of the MiniCluster. With more than one, subtasks spread over them and the
         * re-partitions between them go through Flink's network stack (Netty over loopback), as
         * between the TaskManagers of a standalone cluster.
         */
        int taskManagers = 1;
        int stages = 10;
        long granularity = 0;
        long elements = 1_000_000;
        double rate = 0;
        long warmup = 0;
        long bufferTimeoutMs = 100;
        long watermarkIntervalMs = 200;
        String watermarks = "punctuated";
        int warmupRuns = 2;
        long warmupRunElements = 0;
        boolean json = false;
        /** Element latency per second of the schedule too ({@link LatencyBySecond}). */
        boolean latencyBySecond = false;

        static Args parse(String[] argv) {
            Args a = new Args();
            for (int i = 0; i < argv.length; i++) {
                String k = argv[i];
                if (k.equals("--json")) {
                    a.json = true;
                    continue;
                }
                if (k.equals("--latency-by-second")) {
                    a.latencyBySecond = true;
                    continue;
                }
                if (i + 1 >= argv.length) {
                    throw new IllegalArgumentException("option " + k + " needs a value");
                }
                String v = argv[++i];
                try {
                    switch (k) {
                        case "--workers" -> a.workers = Integer.parseInt(v);
                        case "--task-managers" -> a.taskManagers = Integer.parseInt(v);
                        case "--stages" -> a.stages = Integer.parseInt(v);
                        case "--granularity" -> a.granularity = Long.parseLong(v);
                        case "--elements" -> a.elements = Long.parseLong(v);
                        case "--rate" -> a.rate = Double.parseDouble(v);
                        case "--warmup" -> a.warmup = Long.parseLong(v);
                        case "--buffer-timeout-ms" -> a.bufferTimeoutMs = Long.parseLong(v);
                        case "--watermark-interval-ms" -> a.watermarkIntervalMs = Long.parseLong(v);
                        case "--watermarks" -> a.watermarks = v;
                        case "--warmup-runs" -> a.warmupRuns = Integer.parseInt(v);
                        case "--warmup-run-elements" -> a.warmupRunElements = Long.parseLong(v);
                        default -> throw new IllegalArgumentException("unknown option " + k);
                    }
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("option " + k + ": '" + v + "' is not a number");
                }
            }
            if (a.workers < 1 || a.taskManagers < 1 || a.stages < 0 || a.granularity < 0 || a.elements < 1 || a.rate < 0
                    || a.warmup < 0 || a.bufferTimeoutMs < -1 || a.watermarkIntervalMs < 1
                    || a.warmupRuns < 0 || a.warmupRunElements < 0) {
                throw new IllegalArgumentException(
                        "out of range: --workers >= 1, --task-managers >= 1, --stages >= 0, --elements >= 1, --watermark-interval-ms >= 1 "
                                + "(Flink's minimum), others >= 0 (--buffer-timeout-ms may be -1: flush only when full)");
            }
            if (!a.watermarks.equals("punctuated") && !a.watermarks.equals("periodic")) {
                throw new IllegalArgumentException("--watermarks must be punctuated or periodic, got " + a.watermarks);
            }
            return a;
        }

        /** Subtasks per operator: every slot of every TaskManager. */
        int parallelism() {
            return workers * taskManagers;
        }
    }

    /** Source subtask i of P: ids i, i + P, ... on the absolute schedule. */
    static final class ChainSource extends RichParallelSourceFunction<Tuple2<Long, Long>> {
        private final long elements;
        private final double rate;
        private final long warmup;
        private volatile boolean running = true;

        ChainSource(long elements, double rate, long warmup) {
            this.elements = elements;
            this.rate = rate;
            this.warmup = warmup;
        }

        @Override
        public void run(SourceContext<Tuple2<Long, Long>> ctx) {
            int i = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            int p = getRuntimeContext().getTaskInfo().getNumberOfParallelSubtasks();
            long start = Stats.start();
            double nsPer = rate > 0 ? 1e9 / rate : 0;
            for (long id = i; id < elements && running; id += p) {
                long due;
                if (rate > 0) {
                    due = start + (long) (id * nsPer);
                    long wait;
                    while ((wait = due - System.nanoTime()) > 0) {
                        LockSupport.parkNanos(wait);
                    }
                } else {
                    due = System.nanoTime();
                }
                if (id >= warmup) {
                    long now = System.nanoTime();
                    Stats.FIRST_MEASURED_EMIT_NS.accumulate(now);
                    Stats.LAST_MEASURED_EMIT_NS.accumulate(now);
                    Stats.MEASURED_EMITTED.increment();
                }
                synchronized (ctx.getCheckpointLock()) {
                    ctx.collect(Tuple2.of(id, due));
                }
            }
        }

        @Override
        public void cancel() {
            running = false;
        }
    }

    /** One watermark per substream of W a source subtask enters: everything before it is done. */
    static final class PerSubstream implements WatermarkGenerator<Tuple2<Long, Long>> {
        private final long w;
        private long substream = 0;

        PerSubstream(long w) {
            this.w = w;
        }

        @Override
        public void onEvent(Tuple2<Long, Long> e, long ts, WatermarkOutput out) {
            long s = e.f0 / w;
            if (s > substream) {
                substream = s;
                out.emitWatermark(new Watermark(s * w - 1));
            }
        }

        @Override
        public void onPeriodicEmit(WatermarkOutput out) {}
    }

    static final class Identity implements MapFunction<Tuple2<Long, Long>, Tuple2<Long, Long>> {
        @Override
        public Tuple2<Long, Long> map(Tuple2<Long, Long> e) {
            return e;
        }
    }

    static void arrived(Tuple2<Long, Long> e, long now, long warmup, boolean bySecond) {
        if (e.f0 >= warmup) {
            long l = Math.max(1, now - e.f1);
            Stats.ELEMENT.recordValue(l);
            if (bySecond) {
                Stats.ELEMENT_BY_SECOND.record(Stats.START_NS.get(), e.f1, l);
            }
        }
        Stats.ARRIVED.increment();
        Stats.LAST_EVENT_NS.accumulate(now);
    }

    /** The end of a run without completeness tracking. */
    static final class MeasureSink implements SinkFunction<Tuple2<Long, Long>> {
        private final long warmup;
        private final boolean bySecond;

        MeasureSink(long warmup, boolean bySecond) {
            this.warmup = warmup;
            this.bySecond = bySecond;
        }

        @Override
        public void invoke(Tuple2<Long, Long> e, Context ctx) {
            arrived(e, System.nanoTime(), warmup, bySecond);
        }
    }

    /** A window's accumulator: the arrival of its latest element, nanoTime. */
    static final class LastArrival implements AggregateFunction<Tuple2<Long, Long>, long[], Long> {
        private final long warmup;
        private final boolean bySecond;

        LastArrival(long warmup, boolean bySecond) {
            this.warmup = warmup;
            this.bySecond = bySecond;
        }

        @Override
        public long[] createAccumulator() {
            return new long[1];
        }

        @Override
        public long[] add(Tuple2<Long, Long> e, long[] acc) {
            long now = System.nanoTime();
            arrived(e, now, warmup, bySecond);
            acc[0] = Math.max(acc[0], now);
            return acc;
        }

        @Override
        public Long getResult(long[] acc) {
            return acc[0];
        }

        @Override
        public long[] merge(long[] a, long[] b) {
            a[0] = Math.max(a[0], b[0]);
            return a;
        }
    }

    /** The notification: the window fires; its latency is counted from its last arrival. */
    static final class Notify extends ProcessWindowFunction<Long, Long, Integer, TimeWindow> {
        private final long warmup;

        Notify(long warmup) {
            this.warmup = warmup;
        }

        @Override
        public void process(Integer key, Context ctx, Iterable<Long> lasts, Collector<Long> out) {
            long now = System.nanoTime();
            long last = lasts.iterator().next();
            if (ctx.window().getEnd() > warmup) {
                Stats.NOTIFICATION.recordValue(Math.max(1, now - last));
                if (Stats.SLOT_LOG_SIZE.incrementAndGet() <= Stats.SLOT_LOG_CAP) {
                    Stats.SLOT_LOG.add(new long[] {ctx.window().getEnd(), last, now});
                }
            }
            Stats.LAST_EVENT_NS.accumulate(now);
        }
    }

    /** Keys, one per window subtask: key j lands on subtask j (Flink assigns keys by hash). */
    static int[] keysPerSubtask(int p, int maxParallelism) {
        int[] keys = new int[p];
        boolean[] found = new boolean[p];
        int left = p;
        for (int k = 0; left > 0; k++) {
            int s = KeyGroupRangeAssignment.assignKeyToParallelOperator(k, maxParallelism, p);
            if (!found[s]) {
                found[s] = true;
                keys[s] = k;
                left--;
            }
        }
        return keys;
    }

    static void runJob(Args a, long elements, double rate) throws Exception {
        Configuration conf = new Configuration();
        conf.set(TaskManagerOptions.MINI_CLUSTER_NUM_TASK_MANAGERS, a.taskManagers);
        conf.set(TaskManagerOptions.NUM_TASK_SLOTS, a.workers);
        final int p = a.parallelism();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(p, conf);
        final int maxParallelism = 128;
        env.setMaxParallelism(maxParallelism);
        env.setBufferTimeout(a.bufferTimeoutMs);
        // As Flink's own Nexmark setup runs (pipeline.object-reuse: true): every operator here
        // makes a new record, so chained operators may pass records without copying them.
        env.getConfig().enableObjectReuse();
        env.getConfig().setAutoWatermarkInterval(a.watermarkIntervalMs);
        TypeInformation<Tuple2<Long, Long>> type = Types.TUPLE(Types.LONG, Types.LONG);
        DataStream<Tuple2<Long, Long>> s = env.addSource(new ChainSource(elements, rate, a.warmup), "source", type)
                .setParallelism(p);
        final long w = a.granularity;
        if (w > 0) {
            WatermarkStrategy<Tuple2<Long, Long>> ws = a.watermarks.equals("punctuated")
                    ? WatermarkStrategy.forGenerator(ctx -> new PerSubstream(w))
                    : WatermarkStrategy.<Tuple2<Long, Long>>forMonotonousTimestamps();
            s = s.assignTimestampsAndWatermarks(ws.withTimestampAssigner((e, ts) -> e.f0));
        }
        for (int k = 0; k < a.stages; k++) {
            s = s.rebalance().map(new Identity()).returns(type).name("stage-" + k);
        }
        if (w == 0) {
            s.addSink(new MeasureSink(a.warmup, a.latencyBySecond)).name("sink");
        } else {
            final int[] keys = keysPerSubtask(p, maxParallelism);
            s.keyBy(e -> keys[(int) (e.f0 % p)], Types.INT)
                    .window(TumblingEventTimeWindows.of(Duration.ofMillis(w)))
                    .aggregate(new LastArrival(a.warmup, a.latencyBySecond), new Notify(a.warmup), PrimitiveArrayTypeInfo.LONG_PRIMITIVE_ARRAY_TYPE_INFO, Types.LONG, Types.LONG)
                    .addSink(new SinkFunction<Long>() {})
                    .name("sink");
        }
        env.execute("xorflow-peer-chain");
    }

    /**
     * Notification latency from the window's last arrival at any window subtask (the trAcker
     * paper's definition): each firing minus the latest last arrival over the subtasks of the same
     * window.
     */
    static Histogram fromLastArrivalAnywhere() {
        Histogram h = new Histogram(3_600_000_000_000L, 3);
        java.util.Map<Long, java.util.List<long[]>> byWindow = new java.util.HashMap<>();
        for (long[] r : Stats.SLOT_LOG) {
            byWindow.computeIfAbsent(r[0], k -> new java.util.ArrayList<>()).add(r);
        }
        for (java.util.List<long[]> group : byWindow.values()) {
            long last = 0;
            for (long[] r : group) {
                last = Math.max(last, r[1]);
            }
            for (long[] r : group) {
                h.recordValue(Math.max(1, r[2] - last));
            }
        }
        return h;
    }

    static String percentiles(Histogram h) {
        return "{\"count\":" + h.getTotalCount() + ",\"p50_us\":" + num(us(h, 0.5))
                + ",\"p90_us\":" + num(us(h, 0.9)) + ",\"p95_us\":" + num(us(h, 0.95))
                + ",\"p99_us\":" + num(us(h, 0.99)) + ",\"max_us\":" + num(us(h, 1.0)) + "}";
    }

    static String num(Double v) {
        return v == null ? "null" : String.format(Locale.ROOT, "%.3f", v);
    }

    static Double us(Histogram h, double q) {
        return h.getTotalCount() == 0 ? null : h.getValueAtPercentile(q * 100) / 1e3;
    }

    public static void main(String[] argv) throws Exception {
        Args a;
        try {
            a = Args.parse(argv);
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.exit(2);
            return;
        }
        // Warm the JIT on the same job, as fast as it goes: a cold JVM on 2 cores is many times slower.
        long warmElements = a.warmupRunElements > 0 ? a.warmupRunElements : Math.min(a.elements, 1_000_000);
        for (int r = 0; r < a.warmupRuns; r++) {
            Stats.reset();
            runJob(a, warmElements, 0);
        }
        Stats.reset();
        runJob(a, a.elements, a.rate);
        long start = Stats.START_NS.get();
        double elapsed = (Stats.LAST_EVENT_NS.get() - start) / 1e9;
        long measured = Stats.MEASURED_EMITTED.sum();
        double span = (Stats.LAST_MEASURED_EMIT_NS.get() - Stats.FIRST_MEASURED_EMIT_NS.get()) / 1e9;
        double achieved = span > 0 ? (measured - 1) / span : 0;
        Histogram n = Stats.NOTIFICATION.copy();
        Histogram e = Stats.ELEMENT.copy();
        long arrived = Stats.ARRIVED.sum();
        if (arrived != a.elements) {
            System.err.println("error: " + arrived + " of " + a.elements + " elements arrived");
            System.exit(1);
        }
        String version = org.apache.flink.runtime.util.EnvironmentInformation.getVersion();
        String json = "{\"engine\":\"flink\",\"version\":\"" + version + "\""
                + ",\"stages\":" + a.stages + ",\"workers\":" + a.workers + ",\"task_managers\":" + a.taskManagers + ",\"granularity\":" + a.granularity
                + ",\"tracking\":\"" + (a.granularity == 0 ? "none" : "watermarks-" + a.watermarks) + "\""
                + ",\"elements\":" + a.elements + ",\"warmup\":" + a.warmup + ",\"rate\":" + num(a.rate)
                + ",\"buffer_timeout_ms\":" + a.bufferTimeoutMs + ",\"object_reuse\":true" + ",\"watermark_interval_ms\":" + a.watermarkIntervalMs
                + ",\"warmup_runs\":" + a.warmupRuns + ",\"warmup_run_elements\":" + warmElements
                + ",\"achieved_rate\":" + num(achieved) + ",\"elapsed_s\":" + num(elapsed)
                + ",\"elements_per_s\":" + num(a.elements / Math.max(elapsed, 1e-9))
                + ",\"latency_p50_us\":" + num(us(n, 0.5)) + ",\"latency_p95_us\":" + num(us(n, 0.95))
                + ",\"latency_p99_us\":" + num(us(n, 0.99)) + ",\"notifications\":" + n.getTotalCount()
                + ",\"notification_latency_any\":" + percentiles(fromLastArrivalAnywhere())
                + ",\"slot_log_dropped\":" + Math.max(0, Stats.SLOT_LOG_SIZE.get() - Stats.SLOT_LOG_CAP)
                + ",\"element_latency\":" + percentiles(e) + "," + Stats.ELEMENT_BY_SECOND.json() + "}";
        if (a.json) {
            System.out.println(json);
        } else {
            System.out.printf(Locale.ROOT, "flink %s: K=%d P=%dx%d W=%d %d elements in %.3f s = %.0f elements/s; "
                            + "notification p50 %s us p99 %s us%n", version, a.stages, a.taskManagers, a.workers, a.granularity,
                    a.elements, elapsed, a.elements / Math.max(elapsed, 1e-9), num(us(n, 0.5)), num(us(n, 0.99)));
        }
        System.exit(0);
    }
}
