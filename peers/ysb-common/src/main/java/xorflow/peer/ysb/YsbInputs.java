package xorflow.peer.ysb;

import java.util.HashMap;

/**
 * The run's inputs, loaded by {@link YsbMain} before the run and read by the engine's tasks
 * through statics instead of shipped in the job: the engine runs in this JVM, or (a standalone
 * Flink cluster) each TaskManager loads them from the same files ({@link #loadIfAbsent}).
 */
public final class YsbInputs {
    private YsbInputs() {}

    /** The generator's template (--events); the sources read it. */
    public static volatile YsbTemplate TEMPLATE;
    /** Ad id -> campaign id (--ad-campaigns); the join reads it. */
    public static volatile HashMap<String, String> CAMPAIGNS;

    /**
     * Loads the template and the table from their files unless this JVM has them: a Flink
     * TaskManager started on its own (a standalone cluster) reads them when its first task opens.
     *
     * @throws IllegalArgumentException naming the file and line of a malformed input
     */
    public static synchronized void loadIfAbsent(String events, String adCampaigns) {
        if (TEMPLATE == null) {
            TEMPLATE = YsbTemplate.load(java.nio.file.Path.of(events));
        }
        if (CAMPAIGNS == null) {
            CAMPAIGNS = YsbCampaigns.load(java.nio.file.Path.of(adCampaigns));
        }
    }

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
