package xorflow.peer.storm;

import java.nio.file.Files;
import java.nio.file.Path;

/** {@link YsbTopology}'s command line (see {@code peers/ysb-contract.md}). */
final class YsbArgs {
    Path events;
    Path adCampaigns;
    /** counts.csv; none: not written. */
    Path output;
    /** Events/s over all source instances. */
    long rate;
    /** Seconds of events: R * D events in all. */
    long durationS;
    /** Source instances. */
    int sources = 1;
    /** Tasks of the window bolt. */
    int workers = 1;
    /** T0, ms since the epoch; 0: chosen when the first source starts. */
    long startMs = 0;
    /** Bounded out-of-orderness of the watermarks, ms. */
    long latenessMs = 0;
    /** The window bolt's watermark interval, ms (Storm's default is 1000; 200 as Flink's). */
    long watermarkIntervalMs = 200;
    /** The window: "processor" (the original YSB's CampaignProcessor) or "bolt" (Storm's windowed bolt). */
    String window = "processor";
    boolean json = false;

    /** Events of the run, R * D. */
    long events() {
        return rate * durationS;
    }

    /**
     * Parses {@code argv}.
     *
     * @throws IllegalArgumentException naming the option: unknown, without a value, not a number,
     *     out of range, or a missing input file
     */
    static YsbArgs parse(String[] argv) {
        YsbArgs a = new YsbArgs();
        for (int i = 0; i < argv.length; i++) {
            String k = argv[i];
            if (k.equals("--json")) {
                a.json = true;
                continue;
            }
            if (i + 1 >= argv.length) {
                throw new IllegalArgumentException("option " + k + " needs a value");
            }
            String v = argv[++i];
            try {
                switch (k) {
                    case "--events" -> a.events = Path.of(v);
                    case "--ad-campaigns" -> a.adCampaigns = Path.of(v);
                    case "--output" -> a.output = Path.of(v);
                    case "--rate" -> a.rate = Long.parseLong(v);
                    case "--duration-s" -> a.durationS = Long.parseLong(v);
                    case "--sources" -> a.sources = Integer.parseInt(v);
                    case "--workers" -> a.workers = Integer.parseInt(v);
                    case "--start-ms" -> a.startMs = Long.parseLong(v);
                    case "--lateness-ms" -> a.latenessMs = Long.parseLong(v);
                    case "--watermark-interval-ms" -> a.watermarkIntervalMs = Long.parseLong(v);
                    case "--window" -> a.window = v;
                    default -> throw new IllegalArgumentException("unknown option " + k);
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("option " + k + ": '" + v + "' is not an integer");
            }
        }
        a.check();
        return a;
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
        if (sources < 1 || workers < 1 || sources > 256 || workers > 256) {
            throw new IllegalArgumentException("--sources and --workers must be in 1..=256");
        }
        if (startMs != 0 && (startMs < 1_000_000_000_000L || startMs + durationS * 1000 > 9_999_999_999_999L)) {
            throw new IllegalArgumentException("--start-ms " + startMs + ": event times must stay 13-digit ms");
        }
        if (!window.equals("processor") && !window.equals("bolt")) {
            throw new IllegalArgumentException("--window must be processor or bolt, got '" + window + "'");
        }
        if (latenessMs < 0 || latenessMs > 3_600_000 || watermarkIntervalMs < 1 || watermarkIntervalMs > 60_000) {
            throw new IllegalArgumentException("--lateness-ms in 0..=3600000, --watermark-interval-ms in 1..=60000");
        }
    }
}
