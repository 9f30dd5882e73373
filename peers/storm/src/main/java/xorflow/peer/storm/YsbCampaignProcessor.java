package xorflow.peer.storm;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.storm.Config;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.utils.TupleUtils;
import xorflow.peer.ysb.YsbClock;
import xorflow.peer.ysb.YsbStats;

/**
 * The original YSB's window on Storm (CampaignProcessorCommon): a count per (campaign, 10 s
 * bucket of event time) updated per view, and every second (a tick tuple, so on the executor's
 * thread) the buckets changed since the last flush are written out with time_updated = now. No
 * watermark and nothing is ever late: a bucket's final value is the one of its last flush, and
 * that flush is its emission (window latency = its time_updated - the bucket's largest event
 * time; updated latency = its time_updated - the bucket's start). A task ends after the first end
 * marker of every source (grouping by source keeps each source's tuples in order): it flushes
 * once more and reports the figures.
 */
final class YsbCampaignProcessor extends BaseRichBolt {
    private static final long serialVersionUID = 1L;
    private final long durationMs;
    private final int sources;
    /** Per bucket {views, largest event time, start, last flush ns, changed since it (0/1)}. */
    private transient Map<String, long[]> buckets;
    private transient List<long[]> changed;
    private int markers;
    private int task;

    YsbCampaignProcessor(long durationMs, int sources) {
        this.durationMs = durationMs;
        this.sources = sources;
    }

    @Override
    public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector out) {
        YsbStormWorker.setUp(conf, ctx);
        task = ctx.getThisTaskId();
        buckets = new HashMap<>();
        changed = new ArrayList<>();
    }

    @Override
    public Map<String, Object> getComponentConfiguration() {
        Map<String, Object> c = new HashMap<>();
        c.put(Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 1);
        return c;
    }

    @Override
    public void execute(Tuple t) {
        if (TupleUtils.isTick(t)) {
            flush();
            return;
        }
        YsbStormWorker.ensureStart();
        long end = t.getLong(4);
        if (end != 0) {
            // The first marker of a source follows all its views; its second is ignored.
            long firstMarker = ((YsbClock.startMsIfFixed() + durationMs - 1) / YsbTopology.WINDOW_MS + 1) * YsbTopology.WINDOW_MS;
            if (end == firstMarker && ++markers == sources) {
                flush();
                finish();
            }
            return;
        }
        long time = t.getLong(3);
        YsbStormStats.ARRIVED.increment();
        YsbStats.prewindow(time);
        long start = Math.floorDiv(time, YsbTopology.WINDOW_MS) * YsbTopology.WINDOW_MS;
        String campaign = t.getString(1);
        long[] b = buckets.computeIfAbsent(campaign + "," + start, k -> new long[] {0, Long.MIN_VALUE, start, 0, 0});
        b[0]++;
        b[1] = Math.max(b[1], time);
        if (b[4] == 0) {
            b[4] = 1;
            changed.add(b);
        }
    }

    /** Writes out the changed buckets: their time_updated is now. */
    private void flush() {
        long now = YsbClock.nowNs();
        for (long[] b : changed) {
            b[3] = now;
            b[4] = 0;
        }
        changed.clear();
    }

    /** The final values and, for buckets wholly inside the run, the latencies of their last flush. */
    private void finish() {
        long t0 = YsbClock.startMsIfFixed();
        for (Map.Entry<String, long[]> e : buckets.entrySet()) {
            long[] b = e.getValue();
            String campaign = e.getKey().substring(0, e.getKey().lastIndexOf(','));
            YsbStats.ROWS.add(new YsbStats.Row(campaign, b[2], b[0]));
            if (b[2] >= t0 && b[2] + YsbTopology.WINDOW_MS <= t0 + durationMs) {
                YsbStats.record(YsbStats.WINDOW, b[3] - b[1] * 1_000_000L);
                YsbStats.record(YsbStats.UPDATED, b[3] - b[2] * 1_000_000L);
            }
        }
        YsbStormWorker.taskDone(task);
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer d) {}
}
