package xorflow.peer.storm;

import java.nio.file.Files;
import java.nio.file.Path;
import xorflow.peer.ysb.YsbArgs;

/** {@link YsbTopology}'s command line: the common options and Storm's (see {@code peers/ysb-contract.md}). */
final class YsbStormArgs extends YsbArgs {
    /** The window: "processor" (the original YSB's CampaignProcessor) or "bolt" (Storm's windowed bolt). */
    String window = "processor";
    /**
     * A Storm cluster's Nimbus ({@code --cluster HOST:PORT}, its thrift address): the topology is
     * submitted there instead of run in a LocalCluster. None: a LocalCluster.
     */
    String nimbusHost;
    int nimbusPort;
    /** With --cluster: the topology's workers (--storm-workers N), one JVM each, one per supervisor slot. */
    int stormWorkers = 1;
    /**
     * With --cluster and no --start-ms: T0 is the first whole second at least this much after
     * every spout of the submitted topology runs, ms (the workers' warm-up; see YsbStormCluster).
     */
    long deployMarginMs = 3000;
    /**
     * With --cluster: the folder (shared by the client and every worker) through which the
     * workers hand their figures to the client (--stats-dir DIR; made if absent, must be empty).
     */
    Path statsDir;

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
        switch (k) {
            case "--window" -> window = v;
            case "--cluster" -> cluster(v);
            case "--storm-workers" -> stormWorkers = Integer.parseInt(v);
            case "--deploy-margin-ms" -> deployMarginMs = Long.parseLong(v);
            case "--stats-dir" -> statsDir = Path.of(v).toAbsolutePath();
            default -> {
                return false;
            }
        }
        return true;
    }

    /** Parses {@code HOST:PORT}; throws naming the value. */
    private void cluster(String v) {
        xorflow.peer.ysb.YsbHostPort a = xorflow.peer.ysb.YsbHostPort.parse(v, "Nimbus's thrift address");
        nimbusHost = a.host();
        nimbusPort = a.port();
    }

    /** Whether the topology goes to a Storm cluster (--cluster). */
    boolean cluster() {
        return nimbusHost != null;
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
        if (!cluster()) {
            if (stormWorkers != 1 || statsDir != null) {
                throw new IllegalArgumentException("--storm-workers and --stats-dir need --cluster");
            }
            return;
        }
        if (stormWorkers < 1 || stormWorkers > 256) {
            throw new IllegalArgumentException("--storm-workers must be in 1..=256");
        }
        if (deployMarginMs < 0) {
            throw new IllegalArgumentException("--deploy-margin-ms must be >= 0");
        }
        if (statsDir == null) {
            throw new IllegalArgumentException("--cluster needs --stats-dir DIR (the workers hand their figures over there)");
        }
        if (Files.exists(statsDir)) {
            boolean empty;
            try (var files = Files.list(statsDir)) {
                empty = files.findAny().isEmpty();
            } catch (java.io.IOException e) {
                throw new IllegalArgumentException("--stats-dir '" + statsDir + "' is not a readable folder: " + e);
            }
            if (!empty) {
                throw new IllegalArgumentException("--stats-dir '" + statsDir + "' is not empty (give each run its own)");
            }
        }
    }
}
