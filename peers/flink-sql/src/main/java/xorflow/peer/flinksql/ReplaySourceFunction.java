package xorflow.peer.flinksql;

import java.io.BufferedReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.serialization.RuntimeContextInitializationContextAdapters;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.functions.source.RichParallelSourceFunction;
import org.apache.flink.table.data.RowData;

/**
 * One subtask of a replay: it reads the whole file and emits every n-th line (subtask i of n:
 * lines i, i + n, ...), so that all subtasks move through event time together, each line when
 * its event time is due ({@link ReplayClock}). A line the format cannot decode fails the job, as
 * Flink's filesystem source does unless the format is told to ignore parse errors.
 */
@SuppressWarnings("deprecation")
final class ReplaySourceFunction extends RichParallelSourceFunction<RowData> {
    private static final long serialVersionUID = 1L;

    private final String path;
    private final DeserializationSchema<RowData> decoder;
    private final int rowtime;
    private final ReplayClock clock;
    private volatile boolean running = true;

    ReplaySourceFunction(String path, DeserializationSchema<RowData> decoder, int rowtime, ReplayClock clock) {
        this.path = path;
        this.decoder = decoder;
        this.rowtime = rowtime;
        this.clock = clock;
    }

    @Override
    public void open(Configuration parameters) throws Exception {
        decoder.open(RuntimeContextInitializationContextAdapters.deserializationAdapter(getRuntimeContext()));
    }

    @Override
    public void run(SourceContext<RowData> ctx) throws Exception {
        int subtask = getRuntimeContext().getIndexOfThisSubtask();
        int subtasks = getRuntimeContext().getNumberOfParallelSubtasks();
        long start = clock.start(getRuntimeContext().getJobId().toString());
        try (BufferedReader in = Files.newBufferedReader(Path.of(path), StandardCharsets.UTF_8)) {
            long i = 0;
            String line;
            while (running && (line = in.readLine()) != null) {
                if (i++ % subtasks != subtask || line.isBlank()) {
                    continue;
                }
                RowData row = decoder.deserialize(line.getBytes(StandardCharsets.UTF_8));
                if (row == null) {
                    continue;
                }
                long due = clock.dueNs(start, row.getTimestamp(rowtime, 3).getMillisecond());
                for (long wait = due - System.nanoTime(); wait > 0 && running; wait = due - System.nanoTime()) {
                    LockSupport.parkNanos(wait);
                }
                synchronized (ctx.getCheckpointLock()) {
                    ctx.collect(row);
                }
            }
        }
    }

    @Override
    public void cancel() {
        running = false;
    }
}
