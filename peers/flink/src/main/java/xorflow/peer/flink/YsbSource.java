package xorflow.peer.flink;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.locks.LockSupport;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.streaming.api.functions.source.RichParallelSourceFunction;
import xorflow.peer.ysb.YsbClock;
import xorflow.peer.ysb.YsbInputs;
import xorflow.peer.ysb.YsbPart;
import xorflow.peer.ysb.YsbTemplate;

/**
 * The generator inside the job (the Cloudprofiler paper's ingestion, docs/papers.md): instance s of
 * S emits events k = s, s + S, ... below R * D, event k at epoch ns {@code T0 * 1e6 + k * 1e9 / R}
 * (parked until due, never a relative sleep), as template line {@code k mod N} with event_time
 * {@code T0 + (k * 1e9 / R) / 1e6}. The template is {@link YsbInputs#TEMPLATE}, loaded once per
 * JVM (by the client before the run, or from the file by a TaskManager of a standalone cluster)
 * instead of shipped in the job graph. Returning ends the stream, and Flink then sends the final
 * watermark that fires every window. What it emitted goes to its {@link YsbPart}.
 */
final class YsbSource extends RichParallelSourceFunction<String> {
    private static final long serialVersionUID = 1L;
    private final long rate;
    private final long events;
    private final long startMs;
    private final YsbFiles files;
    private volatile boolean running = true;
    private transient YsbPart part;

    /** R events/s, R * D events, T0 (0: chosen by {@link YsbClock#startMs}), the input files. */
    YsbSource(long rate, long events, long startMs, YsbFiles files) {
        this.rate = rate;
        this.events = events;
        this.startMs = startMs;
        this.files = files;
    }

    @Override
    public void open(OpenContext ctx) {
        files.loadIfAbsent();
        part = YsbAccumulator.register(getRuntimeContext(), "source");
    }

    @Override
    public void run(SourceContext<String> ctx) {
        YsbTemplate template = YsbInputs.TEMPLATE;
        int s = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        int sources = getRuntimeContext().getTaskInfo().getNumberOfParallelSubtasks();
        long t0 = YsbClock.startMs(startMs);
        long base = t0 * 1_000_000L;
        long emitted = 0;
        long lagMax = 0;
        long first = Long.MAX_VALUE;
        long last = Long.MIN_VALUE;
        try {
            for (long k = s; k < events && running; k += sources) {
                long offset = k * 1_000_000_000L / rate;
                long due = base + offset;
                long now = YsbClock.nowNs();
                while (now < due) {
                    LockSupport.parkNanos(due - now);
                    now = YsbClock.nowNs();
                }
                lagMax = Math.max(lagMax, now - due);
                String line = new String(template.event(k, t0 + offset / 1_000_000L), StandardCharsets.UTF_8);
                synchronized (ctx.getCheckpointLock()) {
                    ctx.collect(line);
                }
                first = Math.min(first, now);
                last = now;
                emitted++;
            }
        } finally {
            part.emitted += emitted;
            part.lagMaxNs = Math.max(part.lagMaxNs, lagMax);
            part.firstEmitNs = Math.min(part.firstEmitNs, first);
            part.lastEmitNs = Math.max(part.lastEmitNs, last);
        }
    }

    @Override
    public void cancel() {
        running = false;
    }
}
