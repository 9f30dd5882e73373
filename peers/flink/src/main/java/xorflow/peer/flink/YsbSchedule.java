package xorflow.peer.flink;

import java.io.Serializable;
import xorflow.peer.ysb.YsbClock;

/**
 * The run's schedule as the window and the sink see it: T0 and D. T0 is given when the client
 * fixed it (a standalone cluster: {@code --cluster}, or {@code --start-ms}); 0 means the first
 * source of this JVM fixes it ({@link YsbClock#startMs}), as in a MiniCluster.
 */
record YsbSchedule(long givenT0Ms, long durationS) implements Serializable {
    /** T0, ms since the epoch (0 until a source of this JVM fixed it, if not given). */
    long t0Ms() {
        return givenT0Ms > 0 ? givenT0Ms : YsbClock.startMsIfFixed();
    }

    /** D, ms. */
    long durationMs() {
        return durationS * 1000;
    }
}
