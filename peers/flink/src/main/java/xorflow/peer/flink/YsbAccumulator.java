package xorflow.peer.flink;

import org.apache.flink.api.common.accumulators.Accumulator;
import org.apache.flink.api.common.functions.RuntimeContext;
import xorflow.peer.ysb.YsbPart;

/**
 * A Flink accumulator holding one function's {@link YsbPart}; every function of the YSB job that
 * measures registers one under {@link #PREFIX} and its own name (operators chained into one task
 * share its registry, which refuses a name twice). Flink merges each name over the parallel
 * instances into the job's result, whether they ran in this JVM's MiniCluster or in TaskManagers
 * elsewhere, and {@link #collect} merges the names.
 */
final class YsbAccumulator implements Accumulator<YsbPart, YsbPart> {
    private static final long serialVersionUID = 1L;

    /** The accumulators' names in the job start with this. */
    static final String PREFIX = "xorflow-ysb/";

    private YsbPart part = new YsbPart();

    /**
     * Registers a fresh accumulator for function {@code name} with the task of {@code ctx} and
     * returns the part the function fills (on the task's thread).
     */
    static YsbPart register(RuntimeContext ctx, String name) {
        YsbAccumulator a = new YsbAccumulator();
        ctx.addAccumulator(PREFIX + name, a);
        return a.part;
    }

    /** The whole run's part: every {@link #PREFIX} accumulator of a job's result, merged. */
    static YsbPart collect(org.apache.flink.api.common.JobExecutionResult r) {
        YsbPart all = new YsbPart();
        r.getAllAccumulatorResults().forEach((k, v) -> {
            if (k.startsWith(PREFIX)) {
                all.merge((YsbPart) v);
            }
        });
        return all;
    }

    @Override
    public void add(YsbPart value) {
        part.merge(value);
    }

    @Override
    public YsbPart getLocalValue() {
        return part;
    }

    @Override
    public void resetLocal() {
        part = new YsbPart();
    }

    @Override
    public void merge(Accumulator<YsbPart, YsbPart> other) {
        part.merge(other.getLocalValue());
    }

    @Override
    public YsbAccumulator clone() {
        YsbAccumulator c = new YsbAccumulator();
        c.part.merge(part);
        return c;
    }
}
