package xorflow.peer.flink;

import java.io.Serializable;
import xorflow.peer.ysb.YsbArgs;
import xorflow.peer.ysb.YsbInputs;

/**
 * The run's input files as paths a TaskManager can open (the client and every TaskManager share
 * a file system here: one machine, namespaces or not), shipped in the job graph instead of the
 * inputs themselves.
 */
record YsbFiles(String events, String adCampaigns) implements Serializable {
    /** The files of {@code a}, absolute (a TaskManager may run in another folder). */
    static YsbFiles of(YsbArgs a) {
        return new YsbFiles(a.events.toAbsolutePath().toString(), a.adCampaigns.toAbsolutePath().toString());
    }

    /** Loads the inputs in this JVM unless loaded ({@link YsbInputs#loadIfAbsent}). */
    void loadIfAbsent() {
        YsbInputs.loadIfAbsent(events, adCampaigns);
    }
}
