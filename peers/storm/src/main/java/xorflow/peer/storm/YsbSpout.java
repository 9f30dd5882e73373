package xorflow.peer.storm;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import org.apache.storm.spout.SpoutOutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseRichSpout;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Values;
import xorflow.peer.ysb.YsbClock;
import xorflow.peer.ysb.YsbInputs;
import xorflow.peer.ysb.YsbStats;
import xorflow.peer.ysb.YsbTemplate;

/**
 * The generator inside the topology (the Cloudprofiler paper's ingestion, docs/papers.md): spout
 * task s of S emits events k = s, s + S, ... below R * D, event k at epoch ns
 * {@code T0 * 1e6 + k * 1e9 / R} (parked until due, never a relative sleep), as template line
 * {@code k mod N} with event_time {@code T0 + (k * 1e9 / R) / 1e6}; tuples (source, line,
 * end_ms = 0). The template is {@link YsbInputs#TEMPLATE}, loaded once before the run (same JVM; a
 * cluster's worker loads it when its first task opens, {@link YsbStormWorker}).
 *
 * <p>After its last event it emits two end markers (line "", end_ms = their event time): the
 * first lies in the window after the run's last, the second far enough beyond it that the window
 * bolt's watermark passes the first marker's window. Storm's windows have no end of input; the
 * markers end the run: every data window fires before the first marker's window, whose firing
 * tells the driver the task is done.
 */
final class YsbSpout extends BaseRichSpout {
    private static final long serialVersionUID = 1L;
    /** Events emitted per call of nextTuple at most, so Storm's executor loop keeps turning. */
    private static final int BATCH = 1024;
    private final long rate;
    private final long events;
    private final long startMs;
    private final long durationMs;
    private final long lagMs;
    private transient SpoutOutputCollector out;
    private transient YsbTemplate template;
    private int source;
    private int sources;
    private long t0;
    /** In a cluster's worker: T0 comes later (the client's start file), ready-{task} not yet written. */
    private boolean cluster;
    private boolean announced;
    private int task;
    private long next;
    private boolean ended;
    private long emitted;
    private long lagMax;
    private long first = Long.MAX_VALUE;
    private long last = Long.MIN_VALUE;

    /** R events/s, D s, T0 (0: chosen by {@link YsbClock#startMs}), the window bolt's lag ms. */
    YsbSpout(long rate, long durationS, long startMs, long lagMs) {
        this.rate = rate;
        this.events = rate * durationS;
        this.startMs = startMs;
        this.durationMs = durationS * 1000;
        this.lagMs = lagMs;
    }

    @Override
    public void open(Map<String, Object> conf, TopologyContext ctx, SpoutOutputCollector out) {
        YsbStormWorker.setUp(conf, ctx);
        this.out = out;
        this.template = YsbInputs.TEMPLATE;
        this.source = ctx.getThisTaskIndex();
        this.sources = ctx.getComponentTasks(ctx.getThisComponentId()).size();
        this.next = source;
        this.task = ctx.getThisTaskId();
        this.cluster = conf.get(YsbStormWorker.STATS_DIR) != null;
        // In a cluster T0 is the client's: 0 until its start file arrives (YsbStormWorker).
        this.t0 = cluster ? YsbClock.startMsIfFixed() : YsbClock.startMs(startMs);
    }

    private long due(long k) {
        return t0 * 1_000_000L + k * 1_000_000_000L / rate;
    }

    @Override
    public void nextTuple() {
        if (cluster && (t0 == 0 || !announced)) {
            if (!announced) {
                announced = true;
                YsbStormWorker.spoutReady(task);
            }
            t0 = YsbClock.startMsIfFixed();
            if (t0 == 0) {
                LockSupport.parkNanos(1_000_000);
                return;
            }
        }
        if (next >= events) {
            end();
            return;
        }
        long now = YsbClock.nowNs();
        long due = due(next);
        if (due - now > 2_000_000) {
            // Before T0: return to Storm's loop now and then.
            LockSupport.parkNanos(1_000_000);
            return;
        }
        for (int b = 0; b < BATCH && next < events; b++) {
            due = due(next);
            while (now < due) {
                if (b > 0) {
                    return;
                }
                LockSupport.parkNanos(due - now);
                now = YsbClock.nowNs();
            }
            lagMax = Math.max(lagMax, now - due);
            long offset = next * 1_000_000_000L / rate;
            String line = new String(template.event(next, t0 + offset / 1_000_000L), StandardCharsets.UTF_8);
            out.emit(new Values(source, line, 0L));
            first = Math.min(first, now);
            last = now;
            emitted++;
            next += sources;
            now = YsbClock.nowNs();
        }
    }

    /** Once: publishes this task's figures and emits the two end markers. */
    private void end() {
        if (ended) {
            LockSupport.parkNanos(1_000_000);
            return;
        }
        ended = true;
        YsbStats.EMITTED.add(emitted);
        YsbStats.LAG_MAX_NS.accumulate(lagMax);
        if (emitted > 0) {
            YsbStats.FIRST_EMIT_NS.accumulate(first);
            YsbStats.LAST_EMIT_NS.accumulate(last);
        }
        long w = YsbTopology.WINDOW_MS;
        long firstMarker = ((t0 + durationMs - 1) / w + 1) * w;
        out.emit(new Values(source, "", firstMarker));
        out.emit(new Values(source, "", firstMarker + w + lagMs));
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer d) {
        d.declare(new Fields("source", "line", "end_ms"));
    }
}
