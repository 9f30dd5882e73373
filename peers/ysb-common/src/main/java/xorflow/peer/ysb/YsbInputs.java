package xorflow.peer.ysb;

import java.util.HashMap;

/**
 * The run's inputs, loaded by {@link YsbMain} before the run and read by the engine's tasks
 * through statics: the engine runs in this JVM, so they are shared instead of shipped in the job.
 */
public final class YsbInputs {
    private YsbInputs() {}

    /** The generator's template (--events); the sources read it. */
    public static volatile YsbTemplate TEMPLATE;
    /** Ad id -> campaign id (--ad-campaigns); the join reads it. */
    public static volatile HashMap<String, String> CAMPAIGNS;

    /**
     * Loads the template and the table of {@code a}, and makes the per-second latency series of
     * D = {@code a.durationS} seconds.
     *
     * @throws IllegalArgumentException naming the file and line of a malformed input
     */
    static void load(YsbArgs a) {
        TEMPLATE = YsbTemplate.load(a.events);
        CAMPAIGNS = YsbCampaigns.load(a.adCampaigns);
        YsbStats.PREWINDOW_BY_SECOND = new YsbSeries(a.durationS);
    }
}
