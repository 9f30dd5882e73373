package xorflow.peer.flink;

import xorflow.peer.ysb.YsbArgs;

/** {@link YsbJob}'s command line: the common options and Flink's (see {@code peers/ysb-contract.md}). */
final class YsbFlinkArgs extends YsbArgs {
    /** TaskManagers of the MiniCluster (more than one: the keyBy crosses Flink's network stack). */
    int taskManagers = 1;
    /** Flink's network buffer timeout, ms (Flink's default 100). */
    long bufferTimeoutMs = 100;

    /** The window's parallelism: --workers (slots per TaskManager) * --task-managers. */
    int parallelism() {
        return workers * taskManagers;
    }

    /**
     * Parses {@code argv}.
     *
     * @throws IllegalArgumentException naming the option: unknown, without a value, not a number,
     *     out of range, or a missing input file
     */
    static YsbFlinkArgs parse(String[] argv) {
        YsbFlinkArgs a = new YsbFlinkArgs();
        a.parseOptions(argv);
        return a;
    }

    @Override
    protected boolean option(String k, String v) {
        switch (k) {
            case "--task-managers" -> taskManagers = Integer.parseInt(v);
            case "--buffer-timeout-ms" -> bufferTimeoutMs = Long.parseLong(v);
            default -> {
                return false;
            }
        }
        return true;
    }

    @Override
    protected void checkEngine() {
        if (sources < 1 || workers < 1 || taskManagers < 1) {
            throw new IllegalArgumentException("--sources, --workers and --task-managers must be >= 1");
        }
        if (sources > parallelism()) {
            throw new IllegalArgumentException("--sources " + sources + " exceeds the slots (--workers * --task-managers = "
                    + parallelism() + ")");
        }
        if (latenessMs < 0 || watermarkIntervalMs < 1 || bufferTimeoutMs < -1) {
            throw new IllegalArgumentException("--lateness-ms >= 0, --watermark-interval-ms >= 1, --buffer-timeout-ms >= -1");
        }
    }
}
