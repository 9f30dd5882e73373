package xorflow.peer.ysb;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The command-line options every YSB peer takes (see {@code peers/ysb-contract.md}); an engine's
 * subclass adds its own through {@link #option} and checks them in {@link #checkEngine}.
 */
public abstract class YsbArgs {
    /** The template (--events FILE). */
    public Path events;
    /** The ad -> campaign table (--ad-campaigns FILE). */
    public Path adCampaigns;
    /** counts.csv; none: not written. */
    public Path output;
    /** Events/s over all source instances. */
    public long rate;
    /** Seconds of events: R * D events in all. */
    public long durationS;
    /** Source instances. */
    public int sources = 1;
    /** The window's tasks (Flink: slots per TaskManager; Storm: tasks of the window bolt). */
    public int workers = 1;
    /** T0, ms since the epoch; 0: chosen when the first source starts. */
    public long startMs = 0;
    /** Bounded out-of-orderness of the watermarks, ms. */
    public long latenessMs = 0;
    /** The watermark interval, ms (Flink's auto-watermark interval; Storm's window bolt's, 200 as Flink's). */
    public long watermarkIntervalMs = 200;
    /** Print one JSON object instead of a line of text. */
    public boolean json = false;

    /** Events of the run, R * D. */
    public long events() {
        return rate * durationS;
    }

    /**
     * Sets the engine's option {@code k} to {@code v}.
     *
     * @return false if {@code k} is not an option of the engine
     * @throws NumberFormatException if {@code v} is not the integer {@code k} needs
     * @throws IllegalArgumentException if {@code v} is not a value of {@code k}
     */
    protected abstract boolean option(String k, String v);

    /**
     * Checks the engine's options, after the common checks passed.
     *
     * @throws IllegalArgumentException naming the option out of range
     */
    protected abstract void checkEngine();

    /**
     * Parses {@code argv} into this (the common options here, the engine's by {@link #option}) and
     * checks the result.
     *
     * @throws IllegalArgumentException naming the option: unknown, without a value, not a number,
     *     out of range, or a missing input file
     */
    protected final void parseOptions(String[] argv) {
        for (int i = 0; i < argv.length; i++) {
            String k = argv[i];
            if (k.equals("--json")) {
                json = true;
                continue;
            }
            if (i + 1 >= argv.length) {
                throw new IllegalArgumentException("option " + k + " needs a value");
            }
            String v = argv[++i];
            try {
                switch (k) {
                    case "--events" -> events = Path.of(v);
                    case "--ad-campaigns" -> adCampaigns = Path.of(v);
                    case "--output" -> output = Path.of(v);
                    case "--rate" -> rate = Long.parseLong(v);
                    case "--duration-s" -> durationS = Long.parseLong(v);
                    case "--sources" -> sources = Integer.parseInt(v);
                    case "--workers" -> workers = Integer.parseInt(v);
                    case "--start-ms" -> startMs = Long.parseLong(v);
                    case "--lateness-ms" -> latenessMs = Long.parseLong(v);
                    case "--watermark-interval-ms" -> watermarkIntervalMs = Long.parseLong(v);
                    default -> {
                        if (!option(k, v)) {
                            throw new IllegalArgumentException("unknown option " + k);
                        }
                    }
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("option " + k + ": '" + v + "' is not an integer");
            }
        }
        check();
        checkEngine();
    }

    private void check() {
        if (events == null || adCampaigns == null) {
            throw new IllegalArgumentException("--events FILE and --ad-campaigns FILE are required");
        }
        for (Path p : new Path[] {events, adCampaigns}) {
            if (!Files.isRegularFile(p)) {
                throw new IllegalArgumentException("'" + p + "' (" + (p == events ? "--events" : "--ad-campaigns")
                        + ") is not a file");
            }
        }
        if (output != null) {
            Path dir = output.toAbsolutePath().getParent();
            if (dir == null || !Files.isDirectory(dir)) {
                throw new IllegalArgumentException("--output '" + output + "': its folder does not exist");
            }
        }
        if (rate < 1 || durationS < 1) {
            throw new IllegalArgumentException("--rate and --duration-s must be >= 1");
        }
        // The per-second latency series has D entries.
        if (durationS > 1_000_000) {
            throw new IllegalArgumentException("--duration-s " + durationS + " is too large (at most 1000000)");
        }
        // k * 1e9 must fit a long for every k < R * D.
        if (rate > Long.MAX_VALUE / 1_000_000_000L / durationS) {
            throw new IllegalArgumentException("--rate * --duration-s is too large (at most 9.2e9 events)");
        }
        if (startMs != 0 && (startMs < 1_000_000_000_000L || startMs + durationS * 1000 > 9_999_999_999_999L)) {
            throw new IllegalArgumentException("--start-ms " + startMs + ": event times must stay 13-digit ms");
        }
    }
}
