package xorflow.peer.storm;

import java.util.ArrayList;
import java.util.List;
import org.apache.storm.generated.GlobalStreamId;
import org.apache.storm.grouping.CustomStreamGrouping;
import org.apache.storm.task.WorkerTopologyContext;

/**
 * The topology's two groupings. By source: every tuple of source instance s goes to target task
 * s mod n, so each source's events pass every pre-window bolt in one FIFO path and reach the
 * window bolt in event-time order (its watermarks then need no slack for reordering). By campaign:
 * a view goes to the task of its campaign (as a fields grouping), an end marker to every task.
 * Field 0 is the source; by campaign, field 1 is the campaign id and field 4 the end marker's time
 * (0 for an event).
 */
final class YsbGrouping implements CustomStreamGrouping {
    private static final long serialVersionUID = 1L;
    private final boolean byCampaign;
    private List<List<Integer>> one;
    private List<Integer> all;

    /** By campaign (the window's input) or by source (the pre-window bolts' inputs). */
    YsbGrouping(boolean byCampaign) {
        this.byCampaign = byCampaign;
    }

    @Override
    public void prepare(WorkerTopologyContext ctx, GlobalStreamId stream, List<Integer> targetTasks) {
        all = List.copyOf(targetTasks);
        one = new ArrayList<>();
        for (Integer t : all) {
            one.add(List.of(t));
        }
    }

    @Override
    public List<Integer> chooseTasks(int taskId, List<Object> values) {
        if (!byCampaign) {
            return one.get((Integer) values.get(0) % one.size());
        }
        if ((Long) values.get(4) != 0) {
            return all;
        }
        return one.get(Math.floorMod(values.get(1).hashCode(), one.size()));
    }
}
