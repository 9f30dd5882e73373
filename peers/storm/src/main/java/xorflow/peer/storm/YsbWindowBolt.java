package xorflow.peer.storm;

import java.util.HashMap;
import java.util.Map;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.IWindowedBolt;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.WindowedBoltExecutor;
import org.apache.storm.topology.base.BaseWindowedBolt;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.windowing.TupleWindow;
import xorflow.peer.ysb.YsbClock;
import xorflow.peer.ysb.YsbStats;

/**
 * The 10 s tumbling event-time window per campaign on Storm's windowed bolt, and the sink: Storm
 * calls {@link #execute(TupleWindow)} (on its watermark thread) with a window's views, which are
 * counted per (campaign, window start) and handed to the in-process sink right there, timed as
 * they are (window latency, updated latency; see {@code peers/ysb-contract.md}). Handing them over
 * in place, instead of emitting to a sink bolt, keeps emits off the watermark thread, where
 * Storm's output collector is not safe to use.
 *
 * <p>Storm's event-time windows are (end - 10 s, end], ends multiples of 10 s; the timestamp
 * extractor gives Storm event_time + 1, so a Storm window is exactly the contract's
 * [start, start + 10 s) of event times.
 */
final class YsbWindowBolt extends BaseWindowedBolt {
    private static final long serialVersionUID = 1L;
    private final long durationMs;
    private int task;

    YsbWindowBolt(long durationMs) {
        this.durationMs = durationMs;
    }

    @Override
    public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector out) {
        YsbStormWorker.setUp(conf, ctx);
        task = ctx.getThisTaskId();
    }

    @Override
    public void execute(TupleWindow window) {
        Map<String, long[]> counts = new HashMap<>();
        boolean marker = false;
        for (Tuple t : window.get()) {
            if (t.getLong(4) != 0) {
                marker = true;
                continue;
            }
            long time = t.getLong(3);
            long start = Math.floorDiv(time, YsbTopology.WINDOW_MS) * YsbTopology.WINDOW_MS;
            long[] c = counts.computeIfAbsent(t.getString(1) + "," + start, k -> new long[] {0, Long.MIN_VALUE, start});
            c[0]++;
            c[1] = Math.max(c[1], time);
        }
        long t0 = YsbClock.startMsIfFixed();
        for (Map.Entry<String, long[]> e : counts.entrySet()) {
            long[] c = e.getValue();
            long now = YsbClock.nowNs();
            String campaign = e.getKey().substring(0, e.getKey().lastIndexOf(','));
            YsbStats.ROWS.add(new YsbStats.Row(campaign, c[2], c[0]));
            if (c[2] >= t0 && c[2] + YsbTopology.WINDOW_MS <= t0 + durationMs) {
                YsbStats.record(YsbStats.WINDOW, now - c[1] * 1_000_000L);
                YsbStats.record(YsbStats.UPDATED, now - c[2] * 1_000_000L);
            }
        }
        if (marker) {
            YsbStormWorker.taskDone(task);
        }
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer d) {}

    /** Storm's executor of a windowed bolt, timing each view's arrival (pre-window latency). */
    static final class Timed extends WindowedBoltExecutor {
        private static final long serialVersionUID = 1L;

        Timed(IWindowedBolt bolt) {
            super(bolt);
        }

        @Override
        public void execute(Tuple t) {
            YsbStormWorker.ensureStart();
            if (t.getLong(4) == 0) {
                YsbStormStats.ARRIVED.increment();
                YsbStats.prewindow(t.getLong(3));
            }
            super.execute(t);
        }
    }
}
