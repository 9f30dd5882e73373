package xorflow.peer.storm;

import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAccumulator;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import org.apache.storm.Config;
import xorflow.peer.common.LatencyBySecond;
import org.apache.storm.LocalCluster;
import org.apache.storm.generated.KillOptions;
import org.apache.storm.spout.SpoutOutputCollector;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.topology.base.BaseRichSpout;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.tuple.Values;

/**
 * The trAcker paper's chain workload (docs/papers.md) on Apache Storm, measured the way
 * {@code xorflow-lab bench chain} measures itself, so {@code xorflow-lab bench peers} can put the two side
 * by side.
 *
 * <p>Topology: a spout of P tasks, K pass-through bolts of P tasks each fed by a shuffle grouping
 * (the counterpart of xorflow's per-stage re-partition), and a sink bolt; one worker in a
 * LocalCluster in this JVM. Spout task i emits ids i, i + P, ... on an absolute schedule (id n is due
 * n / rate seconds after the start) and carries the due time in the tuple.
 *
 * <p>With {@code --granularity W > 0} acking is on: every tuple is a spout tuple with its id as
 * message id, every bolt anchors its output and acks its input, and Storm's acker executors XOR the
 * tuple ids of each tuple tree (the mechanism trAcker generalises). A spout task knows its part of
 * substream s (its ids in [sW, (s+1)W)) is complete when the acker has reported every one of its
 * tuple trees there. Storm has no notion of a substream spanning spout tasks, so that per-task
 * completeness is what is measured. With W = 0 acking is off (no acker executors, no anchoring).
 *
 * <p>Measured after the first {@code --warmup} ids: notification latency from the last arrival at
 * the sink (any sink task) of a spout task's ids of a substream to that spout task learning they are
 * complete (the {@code notification_latency_any} of the other systems; there is no per-instance
 * figure, because the notified spout receives nothing); element latency (due time to arrival at the
 * sink), with {@code --latency-by-second} also per second of the schedule ({@link LatencyBySecond});
 * elements/s over the time from the first emission to the last arrival or completion.
 */
public final class ChainTopology {
    private ChainTopology() {}

    /** Measurements shared by the topology's executors: the LocalCluster runs in this JVM. */
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
        static final LongAdder ACKED = new LongAdder();
        static final LongAdder FAILED = new LongAdder();
        /** Latest arrival at the sink per (substream, spout task): key substream * P + task. */
        static final ConcurrentHashMap<Long, Long> LAST_ARRIVAL = new ConcurrentHashMap<>();

        static void reset() {
            START_NS.set(0);
            NOTIFICATION.reset();
            ELEMENT.reset();
            ELEMENT_BY_SECOND.reset();
            LAST_EVENT_NS.reset();
            FIRST_MEASURED_EMIT_NS.reset();
            LAST_MEASURED_EMIT_NS.reset();
            MEASURED_EMITTED.reset();
            ARRIVED.reset();
            ACKED.reset();
            FAILED.reset();
            LAST_ARRIVAL.clear();
        }

        /** The run's start: the first spout task to emit sets it. */
        static long start() {
            START_NS.compareAndSet(0, System.nanoTime());
            return START_NS.get();
        }
    }

    /** Command-line options (the names of {@code xorflow-lab bench chain} where they mean the same). */
    static final class Args {
        int workers = 2;
        int stages = 10;
        long granularity = 0;
        long elements = 1_000_000;
        double rate = 0;
        long warmup = 0;
        int maxSpoutPending = 16_384;
        int warmupRuns = 1;
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
                        case "--stages" -> a.stages = Integer.parseInt(v);
                        case "--granularity" -> a.granularity = Long.parseLong(v);
                        case "--elements" -> a.elements = Long.parseLong(v);
                        case "--rate" -> a.rate = Double.parseDouble(v);
                        case "--warmup" -> a.warmup = Long.parseLong(v);
                        case "--max-spout-pending" -> a.maxSpoutPending = Integer.parseInt(v);
                        case "--warmup-runs" -> a.warmupRuns = Integer.parseInt(v);
                        case "--warmup-run-elements" -> a.warmupRunElements = Long.parseLong(v);
                        default -> throw new IllegalArgumentException("unknown option " + k);
                    }
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("option " + k + ": '" + v + "' is not a number");
                }
            }
            if (a.workers < 1 || a.stages < 0 || a.granularity < 0 || a.elements < 1 || a.rate < 0
                    || a.warmup < 0 || a.maxSpoutPending < 1 || a.warmupRuns < 0 || a.warmupRunElements < 0) {
                throw new IllegalArgumentException("out of range: --workers, --elements and --max-spout-pending "
                        + ">= 1, others >= 0");
            }
            return a;
        }
    }

    /** Spout task i of P: ids i, i + P, ... on the absolute schedule; with acking, one tree each. */
    static final class ChainSpout extends BaseRichSpout {
        private final long elements;
        private final double rate;
        private final long warmup;
        private final long w;
        private SpoutOutputCollector out;
        private int task;
        private int p;
        private long next;
        private long start;
        /** Acked trees per substream of this task (acking only). */
        private final Map<Long, long[]> acked = new HashMap<>();

        ChainSpout(long elements, double rate, long warmup, long w) {
            this.elements = elements;
            this.rate = rate;
            this.warmup = warmup;
            this.w = w;
        }

        @Override
        public void open(Map<String, Object> conf, TopologyContext ctx, SpoutOutputCollector out) {
            this.out = out;
            this.task = ctx.getThisTaskIndex();
            this.p = ctx.getComponentTasks(ctx.getThisComponentId()).size();
            this.next = task;
            this.start = 0;
        }

        @Override
        public void nextTuple() {
            if (next >= elements) {
                return;
            }
            if (start == 0) {
                start = Stats.start();
            }
            double nsPer = rate > 0 ? 1e9 / rate : 0;
            long now = System.nanoTime();
            // A few ids per call; when none is due Storm's spout wait strategy idles the executor.
            for (int b = 0; b < 64 && next < elements; b++) {
                long due = rate > 0 ? start + (long) (next * nsPer) : now;
                if (due > now) {
                    return;
                }
                if (next >= warmup) {
                    Stats.FIRST_MEASURED_EMIT_NS.accumulate(now);
                    Stats.LAST_MEASURED_EMIT_NS.accumulate(now);
                    Stats.MEASURED_EMITTED.increment();
                }
                if (w > 0) {
                    out.emit(new Values(next, due), next);
                } else {
                    out.emit(new Values(next, due));
                }
                next += p;
            }
        }

        /** This task's ids in substream s: those in [sW, min((s+1)W, N)) congruent to task mod P. */
        private long idsIn(long s) {
            long lo = s * w;
            long hi = Math.min(lo + w, elements);
            long first = lo + Math.floorMod(task - lo, (long) p);
            return first >= hi ? 0 : (hi - 1 - first) / p + 1;
        }

        @Override
        public void ack(Object msgId) {
            long id = (Long) msgId;
            long now = System.nanoTime();
            Stats.ACKED.increment();
            Stats.LAST_EVENT_NS.accumulate(now);
            long s = id / w;
            long[] n = acked.computeIfAbsent(s, k -> new long[1]);
            if (++n[0] == idsIn(s)) {
                acked.remove(s);
                Long last = Stats.LAST_ARRIVAL.remove(s * p + task);
                if (last != null && s * w >= warmup) {
                    Stats.NOTIFICATION.recordValue(Math.max(1, now - last));
                }
            }
        }

        @Override
        public void fail(Object msgId) {
            Stats.FAILED.increment();
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
            d.declare(new Fields("id", "due"));
        }
    }

    /** A pass-through stage; with acking it anchors its output to its input and acks the input. */
    static final class Stage extends BaseRichBolt {
        private final boolean acking;
        private OutputCollector out;

        Stage(boolean acking) {
            this.acking = acking;
        }

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector out) {
            this.out = out;
        }

        @Override
        public void execute(Tuple t) {
            Values v = new Values(t.getLong(0), t.getLong(1));
            if (acking) {
                out.emit(t, v);
                out.ack(t);
            } else {
                out.emit(v);
            }
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
            d.declare(new Fields("id", "due"));
        }
    }

    /** The sink: element latency, and the last arrival per (substream, spout task) before acking. */
    static final class Sink extends BaseRichBolt {
        private final long warmup;
        private final long w;
        private final int p;
        private final boolean bySecond;
        private OutputCollector out;

        Sink(long warmup, long w, int p, boolean bySecond) {
            this.warmup = warmup;
            this.w = w;
            this.p = p;
            this.bySecond = bySecond;
        }

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector out) {
            this.out = out;
        }

        @Override
        public void execute(Tuple t) {
            long now = System.nanoTime();
            long id = t.getLong(0);
            if (id >= warmup) {
                long due = t.getLong(1);
                long l = Math.max(1, now - due);
                Stats.ELEMENT.recordValue(l);
                if (bySecond) {
                    Stats.ELEMENT_BY_SECOND.record(Stats.START_NS.get(), due, l);
                }
            }
            if (w > 0) {
                // Recorded before the ack, so it is in place when the tree completes.
                Stats.LAST_ARRIVAL.merge((id / w) * p + id % p, now, Math::max);
                out.ack(t);
            }
            Stats.ARRIVED.increment();
            Stats.LAST_EVENT_NS.accumulate(now);
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {}
    }

    static int runs = 0;

    /** Submits the chain for {@code elements} ids, waits until every id arrived (and was acked). */
    static void runTopology(LocalCluster cluster, Args a, long elements, double rate) throws Exception {
        boolean acking = a.granularity > 0;
        TopologyBuilder b = new TopologyBuilder();
        b.setSpout("source", new ChainSpout(elements, rate, a.warmup, a.granularity), a.workers);
        String prev = "source";
        for (int k = 0; k < a.stages; k++) {
            b.setBolt("stage-" + k, new Stage(acking), a.workers).shuffleGrouping(prev);
            prev = "stage-" + k;
        }
        b.setBolt("sink", new Sink(a.warmup, a.granularity, a.workers, a.latencyBySecond), a.workers).shuffleGrouping(prev);
        Config conf = new Config();
        conf.setNumWorkers(1);
        conf.setNumAckers(acking ? a.workers : 0);
        conf.setNumEventLoggers(0);
        conf.setMessageTimeoutSecs(300);
        if (acking) {
            conf.setMaxSpoutPending(a.maxSpoutPending);
        }
        String name = "chain-" + (runs++);
        cluster.submitTopology(name, conf, b.createTopology());
        long deadline = System.nanoTime() + 1_200_000_000_000L;
        while (Stats.ARRIVED.sum() < elements || (acking && Stats.ACKED.sum() + Stats.FAILED.sum() < elements)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out after 1200 s: " + Stats.ARRIVED.sum() + " of "
                        + elements + " arrived, " + Stats.ACKED.sum() + " acked");
            }
            Thread.sleep(1);
        }
        KillOptions now = new KillOptions();
        now.set_wait_secs(0);
        cluster.killTopologyWithOpts(name, now);
    }

    static String num(Double v) {
        return v == null ? "null" : String.format(Locale.ROOT, "%.3f", v);
    }

    static Double us(Histogram h, double q) {
        return h.getTotalCount() == 0 ? null : h.getValueAtPercentile(q * 100) / 1e3;
    }

    static String percentiles(Histogram h) {
        return "{\"count\":" + h.getTotalCount() + ",\"p50_us\":" + num(us(h, 0.5))
                + ",\"p90_us\":" + num(us(h, 0.9)) + ",\"p95_us\":" + num(us(h, 0.95))
                + ",\"p99_us\":" + num(us(h, 0.99)) + ",\"max_us\":" + num(us(h, 1.0)) + "}";
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
        long warmElements = a.warmupRunElements > 0 ? a.warmupRunElements : Math.min(a.elements, 200_000);
        long arrived;
        long failed;
        try (LocalCluster cluster = new LocalCluster()) {
            // Warm the JIT on the same topology, as fast as it goes.
            for (int r = 0; r < a.warmupRuns; r++) {
                Stats.reset();
                runTopology(cluster, a, warmElements, 0);
            }
            Stats.reset();
            runTopology(cluster, a, a.elements, a.rate);
            arrived = Stats.ARRIVED.sum();
            failed = Stats.FAILED.sum();
        }
        long start = Stats.START_NS.get();
        double elapsed = (Stats.LAST_EVENT_NS.get() - start) / 1e9;
        long measured = Stats.MEASURED_EMITTED.sum();
        double span = (Stats.LAST_MEASURED_EMIT_NS.get() - Stats.FIRST_MEASURED_EMIT_NS.get()) / 1e9;
        double achieved = span > 0 ? (measured - 1) / span : 0;
        if (arrived != a.elements || failed > 0) {
            System.err.println("error: " + arrived + " of " + a.elements + " elements arrived, " + failed
                    + " tuple trees failed");
            System.exit(1);
        }
        Histogram n = Stats.NOTIFICATION.copy();
        Histogram e = Stats.ELEMENT.copy();
        String version = org.apache.storm.utils.VersionInfo.getVersion();
        String json = "{\"engine\":\"storm\",\"version\":\"" + version + "\""
                + ",\"stages\":" + a.stages + ",\"workers\":" + a.workers + ",\"granularity\":" + a.granularity
                + ",\"tracking\":\"" + (a.granularity == 0 ? "none" : "acker") + "\""
                + ",\"elements\":" + a.elements + ",\"warmup\":" + a.warmup + ",\"rate\":" + num(a.rate)
                + ",\"max_spout_pending\":" + a.maxSpoutPending
                + ",\"warmup_runs\":" + a.warmupRuns + ",\"warmup_run_elements\":" + warmElements
                + ",\"achieved_rate\":" + num(achieved) + ",\"elapsed_s\":" + num(elapsed)
                + ",\"elements_per_s\":" + num(a.elements / Math.max(elapsed, 1e-9))
                + ",\"latency_p50_us\":null,\"latency_p95_us\":null,\"latency_p99_us\":null"
                + ",\"notifications\":" + n.getTotalCount()
                + ",\"notification_latency_any\":" + percentiles(n)
                + ",\"element_latency\":" + percentiles(e) + "," + Stats.ELEMENT_BY_SECOND.json() + "}";
        if (a.json) {
            System.out.println(json);
        } else {
            System.out.printf(Locale.ROOT, "storm %s: K=%d P=%d W=%d %d elements in %.3f s = %.0f elements/s; "
                            + "notification (from the last arrival) p50 %s us p99 %s us%n", version, a.stages,
                    a.workers, a.granularity, a.elements, elapsed, a.elements / Math.max(elapsed, 1e-9),
                    num(us(n, 0.5)), num(us(n, 0.99)));
        }
        System.out.flush();
        // LocalCluster leaves non-daemon threads behind.
        System.exit(0);
    }
}
