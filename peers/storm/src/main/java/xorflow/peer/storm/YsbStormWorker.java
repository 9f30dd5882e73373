package xorflow.peer.storm;

import java.io.IOException;
import java.io.ObjectOutputStream;
import java.io.OutputStream;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.storm.Config;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.utils.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import xorflow.peer.ysb.YsbClock;
import xorflow.peer.ysb.YsbInputs;
import xorflow.peer.ysb.YsbPart;
import xorflow.peer.ysb.YsbSeries;
import xorflow.peer.ysb.YsbStats;

/**
 * The worker side of a run on a Storm cluster ({@code --cluster}): every spout and bolt of the
 * topology calls {@link #setUp} when it opens. In a LocalCluster (the topology conf lacks
 * {@link #STATS_DIR}) that does nothing: the client's JVM loaded the inputs and holds the statics.
 * In a worker JVM of a cluster the first call, once per JVM:
 * <ul>
 *   <li>loads the inputs from their absolute paths ({@link YsbInputs#loadIfAbsent}), makes the
 *       per-second series and fixes T0 (all from the topology conf);
 *   <li>registers the JVM in the stats folder ({@code worker-<host>-<port>-<pid>});
 *   <li>starts a daemon thread that waits for the client's {@code dump} marker, then writes what
 *       this JVM's tasks recorded in {@link YsbStats} and {@link YsbStormStats} to
 *       {@code part-<host>-<port>-<pid>.bin} (a serialized {@link Part}, written to a temporary
 *       file and renamed).
 * </ul>
 * Without --start-ms, T0 is fixed by the client only once every spout runs (each writes
 * {@code ready-<task>} on its first nextTuple, its epoch ms) and reaches every worker as the
 * {@code start} file (its epoch ms), which the stats thread watches for before the dump marker;
 * the spouts emit nothing before. A window task that finished writes {@code done-<task>}
 * ({@link #taskDone}).
 */
final class YsbStormWorker {
    private YsbStormWorker() {}

    private static final Logger LOG = LoggerFactory.getLogger(YsbStormWorker.class);

    /** Topology conf keys (set by the client, {@link YsbStormCluster}). */
    static final String EVENTS = "xorflow.ysb.events";
    static final String AD_CAMPAIGNS = "xorflow.ysb.ad-campaigns";
    static final String START_MS = "xorflow.ysb.start-ms";
    static final String DURATION_S = "xorflow.ysb.duration-s";
    static final String STATS_DIR = "xorflow.ysb.stats-dir";

    /** The stats folder, once set up in a cluster's worker; null in a LocalCluster. */
    private static volatile Path statsDir;
    /** This JVM's name in the stats folder: host-port-pid. */
    private static String name;
    /** The tasks set up in this JVM, "component:task". */
    private static final List<String> TASKS = new ArrayList<>();

    /** What one worker JVM hands to the client. */
    record Part(String host, int port, long pid, List<String> tasks, YsbPart part, long arrived, long parseErrors)
            implements Serializable {}

    /** Called by every spout's open and bolt's prepare (see the class comment). */
    static synchronized void setUp(Map<String, Object> conf, TopologyContext ctx) {
        Object dir = conf.get(STATS_DIR);
        if (dir == null) {
            return;
        }
        TASKS.add(ctx.getThisComponentId() + ":" + ctx.getThisTaskId());
        if (statsDir != null) {
            return;
        }
        YsbInputs.loadIfAbsent((String) conf.get(EVENTS), (String) conf.get(AD_CAMPAIGNS));
        if (YsbStats.PREWINDOW_BY_SECOND == null) {
            YsbStats.PREWINDOW_BY_SECOND = new YsbSeries(((Number) conf.get(DURATION_S)).longValue());
        }
        long t0 = ((Number) conf.get(START_MS)).longValue();
        if (t0 > 0) {
            YsbClock.startMs(t0);
        }
        Object h = conf.get(Config.STORM_LOCAL_HOSTNAME);
        String host;
        try {
            host = h != null ? h.toString() : Utils.localHostname();
        } catch (Exception e) {
            host = "unknown";
        }
        int port = ctx.getThisWorkerPort() == null ? 0 : ctx.getThisWorkerPort();
        long pid = ProcessHandle.current().pid();
        name = host + "-" + port + "-" + pid;
        Path d = Path.of((String) dir);
        write(d, "worker-" + name, (host + " " + port + " " + pid + "\n").getBytes(StandardCharsets.UTF_8));
        statsDir = d;
        String hostF = host;
        Thread t = new Thread(() -> {
            try {
                awaitStart(d);
            } catch (Exception e) {
                LOG.error("xorflow ysb: worker {} could not read T0", name, e);
            }
            dumpWhenAsked(d, hostF, port, pid);
        }, "xorflow-ysb-stats");
        t.setDaemon(true);
        t.start();
        LOG.info("xorflow ysb: worker {} set up, stats in {}", name, d);
    }

    /**
     * Fixes T0 in this JVM from the client's {@code start} file (its epoch ms) unless fixed,
     * waiting for the file. A worker's stats thread does this as soon as the file appears; a bolt
     * calls it ({@link #ensureStart}) in case a view arrives first.
     */
    private static void awaitStart(Path d) throws IOException, InterruptedException {
        Path start = d.resolve(YsbStormCluster.START);
        while (YsbClock.startMsIfFixed() == 0) {
            if (Files.exists(start)) {
                YsbClock.startMs(Long.parseLong(Files.readString(start, StandardCharsets.UTF_8).trim()));
                LOG.info("xorflow ysb: worker {} got T0 {}", name, YsbClock.startMsIfFixed());
                return;
            }
            Thread.sleep(5);
        }
    }

    /** Before a bolt records a view: T0 must be fixed in this JVM (cluster only; cheap once it is). */
    static void ensureStart() {
        Path d = statsDir;
        if (d != null && YsbClock.startMsIfFixed() == 0) {
            try {
                awaitStart(d);
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException("cannot read T0 from " + d, e);
            }
        }
    }

    /** A spout is running (cluster only; its first nextTuple): writes ready-{task} with the epoch ms now. */
    static void spoutReady(int task) {
        Path d = statsDir;
        if (d != null) {
            write(d, "ready-" + task, (YsbClock.nowNs() / 1_000_000L + "\n").getBytes(StandardCharsets.UTF_8));
        }
    }

    /** A window task fired its last window (all its figures are recorded). */
    static void taskDone(int task) {
        YsbStormStats.DONE_TASKS.incrementAndGet();
        Path d = statsDir;
        if (d != null) {
            write(d, "done-" + task, new byte[0]);
        }
    }

    private static void dumpWhenAsked(Path d, String host, int port, long pid) {
        Path marker = d.resolve(YsbStormCluster.DUMP);
        try {
            while (!Files.exists(marker)) {
                Thread.sleep(20);
            }
            List<String> tasks;
            synchronized (YsbStormWorker.class) {
                tasks = List.copyOf(TASKS);
            }
            Part p = new Part(host, port, pid, tasks, YsbPart.ofStats(), YsbStormStats.ARRIVED.sum(),
                    YsbStormStats.PARSE_ERRORS.sum());
            java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
            try (ObjectOutputStream o = new ObjectOutputStream(bytes)) {
                o.writeObject(p);
            }
            write(d, "part-" + name + ".bin", bytes.toByteArray());
            LOG.info("xorflow ysb: worker {} wrote its part ({} events emitted, {} rows)", name, p.part().emitted,
                    p.part().rows.size());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            LOG.error("xorflow ysb: worker {} could not write its part", name, e);
        }
    }

    /** Writes {@code file} in {@code d} whole: a temporary file renamed (failures are logged). */
    private static void write(Path d, String file, byte[] bytes) {
        try {
            Path tmp = Files.createTempFile(d, "." + file, ".tmp",
                    java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                            java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--")));
            try (OutputStream o = Files.newOutputStream(tmp)) {
                o.write(bytes);
            }
            Files.move(tmp, d.resolve(file), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            LOG.error("xorflow ysb: cannot write {} in {}", file, d, e);
        }
    }
}
