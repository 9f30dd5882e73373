package xorflow.peer.flink;

import java.util.ArrayList;
import java.util.List;
import xorflow.peer.ysb.YsbArgs;

/** {@link YsbJob}'s command line: the common options and Flink's (see {@code peers/ysb-contract.md}). */
final class YsbFlinkArgs extends YsbArgs {
    /** TaskManagers of the MiniCluster (more than one: the keyBy crosses Flink's network stack). */
    int taskManagers = 1;
    /** Flink's network buffer timeout, ms (Flink's default 100). */
    long bufferTimeoutMs = 100;
    /**
     * Per TaskManager, the port its data connections are advertised on and the port it binds
     * ({@code --data-ports ADVERTISED:BIND,...}, one pair per TaskManager): a delay proxy listens
     * on the first and forwards to the second ({@link ProxiedMiniCluster}). Empty: Flink's own.
     */
    List<ProxiedMiniCluster.Ports> dataPorts = List.of();
    /**
     * A standalone cluster's JobManager REST address ({@code --cluster HOST:PORT}): the job is
     * submitted there instead of run in a MiniCluster. None: a MiniCluster.
     */
    StandaloneCluster cluster;
    /**
     * With --cluster and no --start-ms: T0 is the first whole second at least this much after the
     * cluster's TaskManagers registered, ms (job deployment crosses the delay too).
     */
    long deployMarginMs = 5000;

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
            case "--data-ports" -> dataPorts = ports(v);
            case "--cluster" -> cluster = StandaloneCluster.parse(v);
            case "--deploy-margin-ms" -> deployMarginMs = Long.parseLong(v);
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
        if (!dataPorts.isEmpty() && dataPorts.size() != taskManagers) {
            throw new IllegalArgumentException("--data-ports gives " + dataPorts.size() + " TaskManagers' ports, --task-managers is "
                    + taskManagers);
        }
        if (cluster != null && !dataPorts.isEmpty()) {
            throw new IllegalArgumentException("--cluster and --data-ports exclude each other (--data-ports is for a MiniCluster)");
        }
        if (deployMarginMs < 0) {
            throw new IllegalArgumentException("--deploy-margin-ms must be >= 0");
        }
        if (latenessMs < 0 || watermarkIntervalMs < 1 || bufferTimeoutMs < -1) {
            throw new IllegalArgumentException("--lateness-ms >= 0, --watermark-interval-ms >= 1, --buffer-timeout-ms >= -1");
        }
    }

    /** Parses {@code ADVERTISED:BIND,...}; throws naming the bad pair. */
    private static List<ProxiedMiniCluster.Ports> ports(String v) {
        List<ProxiedMiniCluster.Ports> out = new ArrayList<>();
        for (String pair : v.split(",")) {
            String[] ab = pair.split(":");
            try {
                if (ab.length != 2) {
                    throw new NumberFormatException();
                }
                int a = Integer.parseInt(ab[0].trim());
                int b = Integer.parseInt(ab[1].trim());
                if (a < 1 || a > 65535 || b < 1 || b > 65535) {
                    throw new NumberFormatException();
                }
                out.add(new ProxiedMiniCluster.Ports(a, b));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--data-ports: '" + pair + "' is not ADVERTISED:BIND (two ports 1-65535)");
            }
        }
        return out;
    }
}
