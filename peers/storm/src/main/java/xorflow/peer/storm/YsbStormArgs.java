package xorflow.peer.storm;

import xorflow.peer.ysb.YsbArgs;

/** {@link YsbTopology}'s command line: the common options and Storm's (see {@code peers/ysb-contract.md}). */
final class YsbStormArgs extends YsbArgs {
    /** The window: "processor" (the original YSB's CampaignProcessor) or "bolt" (Storm's windowed bolt). */
    String window = "processor";

    /**
     * Parses {@code argv}.
     *
     * @throws IllegalArgumentException naming the option: unknown, without a value, not a number,
     *     out of range, or a missing input file
     */
    static YsbStormArgs parse(String[] argv) {
        YsbStormArgs a = new YsbStormArgs();
        a.parseOptions(argv);
        return a;
    }

    @Override
    protected boolean option(String k, String v) {
        if (!k.equals("--window")) {
            return false;
        }
        window = v;
        return true;
    }

    @Override
    protected void checkEngine() {
        if (sources < 1 || workers < 1 || sources > 256 || workers > 256) {
            throw new IllegalArgumentException("--sources and --workers must be in 1..=256");
        }
        if (!window.equals("processor") && !window.equals("bolt")) {
            throw new IllegalArgumentException("--window must be processor or bolt, got '" + window + "'");
        }
        if (latenessMs < 0 || latenessMs > 3_600_000 || watermarkIntervalMs < 1 || watermarkIntervalMs > 60_000) {
            throw new IllegalArgumentException("--lateness-ms in 0..=3600000, --watermark-interval-ms in 1..=60000");
        }
    }
}
