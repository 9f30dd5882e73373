package xorflow.peer.flinksql;

import java.io.Serializable;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A replay's pace ({@link ReplayTableFactory}): the record with event time {@code t} is due
 * {@code (t - origin) / speed} after the start. Every source subtask of one job shares the
 * start (the first to open fixes it, and says so on stderr in xorflow's words: "replay: started
 * at X ms since the epoch, ..."), so that tables and subtasks replay in step, as one xorflow
 * job's do.
 */
final class ReplayClock implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The start of each job's replay, on {@link System#nanoTime()}'s clock, by job id. */
    private static final ConcurrentHashMap<String, Long> STARTS = new ConcurrentHashMap<>();

    private static final DateTimeFormatter TEXT =
            DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS").withZone(ZoneOffset.UTC);

    final long originMs;
    final double speed;
    /** ms since the epoch, or null: when the first subtask opens. */
    final Long startMs;

    ReplayClock(long originMs, double speed, Long startMs) {
        this.originMs = originMs;
        this.speed = speed;
        this.startMs = startMs;
    }

    /** The start of job {@code job}'s replay, nanoTime ns; the first caller fixes it. */
    long start(String job) {
        return STARTS.computeIfAbsent(job, j -> {
            Instant now = Instant.now();
            long nowNs = System.nanoTime();
            double nowMs = now.getEpochSecond() * 1e3 + now.getNano() / 1e6;
            double epochMs = startMs == null ? nowMs : startMs;
            long startNs = nowNs + (long) ((epochMs - nowMs) * 1e6);
            System.err.println(String.format(Locale.ROOT,
                    "replay: started at %.3f ms since the epoch, event time %s then, %sx",
                    epochMs, TEXT.format(Instant.ofEpochMilli(originMs)), speed));
            return startNs;
        });
    }

    /** When the record of event time {@code tMs} is due, nanoTime ns. */
    long dueNs(long startNs, long tMs) {
        return startNs + (long) ((tMs - originMs) * 1e6 / speed);
    }
}
