package xorflow.peer.ysb;

import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The YSB peer's wall clock: epoch nanoseconds read as {@code System.nanoTime()} plus an offset
 * taken once from {@link Instant#now()}, so it is monotonic, sub-millisecond and the same clock in
 * the generator (due times) and the sink (emission times) of this JVM's
 * engine (Flink's MiniCluster or Storm's LocalCluster).
 */
public final class YsbClock {
    private YsbClock() {}

    private static final long BASE_NANO;
    private static final long BASE_EPOCH_NS;

    static {
        Instant i = Instant.now();
        BASE_NANO = System.nanoTime();
        BASE_EPOCH_NS = i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    /** Now, ns since the epoch. */
    public static long nowNs() {
        return BASE_EPOCH_NS + (System.nanoTime() - BASE_NANO);
    }

    /** T0 of the run, ms since the epoch; 0 until the first source instance fixes it. */
    private static final AtomicLong START_MS = new AtomicLong();

    /**
     * T0 (ms since the epoch): {@code given} if positive, else now (when the first source instance
     * asks) rounded up to the next whole second plus 2 s. Every instance gets the same value.
     */
    public static long startMs(long given) {
        long t = given > 0 ? given : (nowNs() / 1_000_000_000L + 1) * 1000 + 2000;
        START_MS.compareAndSet(0, t);
        return START_MS.get();
    }

    /** The T0 fixed by {@link #startMs}, or 0. */
    public static long startMsIfFixed() {
        return START_MS.get();
    }
}
