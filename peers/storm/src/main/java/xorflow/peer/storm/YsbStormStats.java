package xorflow.peer.storm;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * What only the Storm topology measures, shared through statics as {@link xorflow.peer.ysb.YsbStats}
 * (the LocalCluster runs in this JVM; a cluster's workers hand theirs over, {@link YsbStormWorker}).
 */
final class YsbStormStats {
    private YsbStormStats() {}

    /** Views that arrived at the window bolt's executor. */
    static final LongAdder ARRIVED = new LongAdder();
    /** Lines the deserialize bolt could not parse (0: the template was checked when loaded). */
    static final LongAdder PARSE_ERRORS = new LongAdder();
    /** Window bolt tasks that fired the window of the first end marker: all their windows fired. */
    static final AtomicInteger DONE_TASKS = new AtomicInteger();
}
