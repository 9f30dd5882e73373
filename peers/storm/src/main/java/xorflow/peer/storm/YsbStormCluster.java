package xorflow.peer.storm;

import java.io.IOException;
import java.io.ObjectInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.LongFunction;
import java.util.stream.Stream;
import org.apache.storm.Config;
import org.apache.storm.StormSubmitter;
import org.apache.storm.generated.ClusterSummary;
import org.apache.storm.generated.KillOptions;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.generated.SupervisorSummary;
import org.apache.storm.utils.NimbusClient;
import xorflow.peer.ysb.YsbClock;
import xorflow.peer.ysb.YsbPart;

/**
 * The client of a run on a Storm cluster ({@code --cluster NIMBUS_HOST:PORT}): ZooKeeper, Nimbus
 * and supervisors started as their own JVMs (e.g. one supervisor per network namespace), each
 * supervisor launching its worker JVMs. The client
 * <ol>
 *   <li>waits until the supervisors offer --storm-workers free slots (Nimbus's cluster summary);
 *   <li>submits the topology with --storm-workers workers (the jar: {@code -Dstorm.jar=...});
 *   <li>waits until every spout runs ({@code ready-<task>}) and the worker JVMs registered
 *       ({@code worker-<host>-<port>-<pid>}) in --stats-dir, then fixes T0 (unless --start-ms,
 *       which goes in the topology conf) on the first whole second at least --deploy-margin-ms
 *       ahead and writes it to {@code start} there: the workers are other JVMs with their own
 *       clock statics, and Storm's deployment time (scheduling, blob download, two JVM starts per
 *       worker) varies too much for a T0 fixed before submission;
 *   <li>waits for a {@code done-<task>} file of every window task in --stats-dir, writes the
 *       {@code dump} marker there, and waits for a {@code part-*.bin} of every worker JVM that
 *       registered ({@code worker-*}, see {@link YsbStormWorker});
 *   <li>merges the parts into the statics the report reads, writes {@code placement.csv} (which
 *       task ran in which worker), and kills the topology (also when the run failed).
 * </ol>
 */
final class YsbStormCluster {
    private YsbStormCluster() {}

    /** The client's marker: every worker writes its part when it appears. */
    static final String DUMP = "dump";
    /** The client's T0 (epoch ms, one line), written once every spout runs. */
    static final String START = "start";
    /** How long the client waits for the spouts to run after submission. */
    static final long READY_TIMEOUT_MS = 300_000;
    /** How long the client waits for the supervisors' slots. */
    static final long SLOTS_TIMEOUT_MS = 180_000;
    /** How long the client waits for the parts after the dump marker. */
    static final long PARTS_TIMEOUT_MS = 120_000;

    /** Runs the topology {@code build(T0)} on the cluster of {@code a}; fills the statics. */
    static void run(YsbStormArgs a, LongFunction<StormTopology> build) throws Exception {
        long started = System.nanoTime();
        String jar = System.getProperty("storm.jar");
        if (jar == null || !Files.isRegularFile(Path.of(jar))) {
            throw new IllegalStateException("--cluster needs -Dstorm.jar=JAR (this peer's jar, target/xorflow-peer-storm-*.jar), got "
                    + jar);
        }
        Path dir = a.statsDir;
        Files.createDirectories(dir);
        Config conf = new Config();
        conf.put(Config.NIMBUS_SEEDS, List.of(a.nimbusHost));
        conf.put(Config.NIMBUS_THRIFT_PORT, a.nimbusPort);
        awaitSlots(conf, a);
        long slotsMs = ms(started);
        conf.setNumWorkers(a.stormWorkers);
        conf.setNumAckers(0);
        conf.setNumEventLoggers(0);
        conf.setMessageTimeoutSecs(300);
        conf.put(YsbStormWorker.EVENTS, a.events.toAbsolutePath().toString());
        conf.put(YsbStormWorker.AD_CAMPAIGNS, a.adCampaigns.toAbsolutePath().toString());
        conf.put(YsbStormWorker.START_MS, a.startMs);
        conf.put(YsbStormWorker.DURATION_S, a.durationS);
        conf.put(YsbStormWorker.STATS_DIR, dir.toString());
        String name = "xorflow-ysb-" + System.currentTimeMillis();
        if (a.sources % a.stormWorkers != 0) {
            log("--sources " + a.sources + " is not a multiple of --storm-workers " + a.stormWorkers
                    + ": Storm's even scheduler will split sources from their pre-window bolts (see placement.csv)");
        }
        long submit = System.nanoTime();
        StormSubmitter.submitTopology(name, conf, build.apply(a.startMs));
        log("submitted " + name + " in " + ms(submit) + " ms (slots ready after " + slotsMs + " ms)");
        try {
            awaitReady(a, dir, submit);
            long t0 = a.startMs;
            if (t0 == 0) {
                t0 = ((YsbClock.nowNs() / 1_000_000L + a.deployMarginMs) / 1000 + 1) * 1000;
            }
            YsbClock.startMs(t0);
            Files.writeString(dir.resolve("." + START + ".tmp"), t0 + "\n", StandardCharsets.UTF_8);
            Files.move(dir.resolve("." + START + ".tmp"), dir.resolve(START), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            log("T0 " + t0 + " (" + (t0 - YsbClock.nowNs() / 1_000_000L) + " ms ahead, " + ms(submit) + " ms after submission)");
            awaitRun(a, dir, submit, t0);
            // Late views go to the late bolt on another executor: let the last of them arrive.
            Thread.sleep(500);
            Files.write(dir.resolve(DUMP), new byte[0]);
            List<YsbStormWorker.Part> parts = awaitParts(dir);
            pour(parts);
            placement(dir, parts);
            log("collected " + parts.size() + " parts; whole run " + ms(started) + " ms");
        } finally {
            kill(conf, name);
        }
    }

    /** Waits until the supervisors together offer --storm-workers free slots. */
    private static void awaitSlots(Config conf, YsbStormArgs a) throws Exception {
        long deadline = System.nanoTime() + SLOTS_TIMEOUT_MS * 1_000_000L;
        String last = "no answer";
        while (System.nanoTime() < deadline) {
            try (NimbusClient c = NimbusClient.getConfiguredClient(conf)) {
                ClusterSummary s = c.getClient().getClusterInfo();
                int free = 0;
                for (SupervisorSummary sup : s.get_supervisors()) {
                    free += sup.get_num_workers() - sup.get_num_used_workers();
                }
                if (free >= a.stormWorkers) {
                    return;
                }
                last = s.get_supervisors_size() + " supervisors with " + free + " free slots";
            } catch (Exception e) {
                last = e.toString();
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("the Storm cluster at " + a.nimbusHost + ":" + a.nimbusPort + " did not offer "
                + a.stormWorkers + " free slots within " + SLOTS_TIMEOUT_MS / 1000 + " s (last: " + last + ")");
    }

    /**
     * Waits until every spout runs (its ready file) and the worker JVMs registered (as many as
     * --storm-workers, or the topology's executors if fewer).
     */
    private static void awaitReady(YsbStormArgs a, Path dir, long submit) throws Exception {
        int executors = 5 * a.sources + a.workers + (a.window.equals("bolt") ? 1 : 0);
        int jvms = Math.min(a.stormWorkers, executors);
        long deadline = System.nanoTime() + READY_TIMEOUT_MS * 1_000_000L;
        while (count(dir, "ready-") < a.sources || count(dir, "worker-") < jvms) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the topology did not start within " + READY_TIMEOUT_MS / 1000 + " s of submission: "
                        + count(dir, "ready-") + " of " + a.sources + " spouts running, " + count(dir, "worker-") + " of " + jvms
                        + " worker JVMs registered in " + dir + " (see the supervisors' and workers' logs)");
            }
            Thread.sleep(20);
        }
        log("all " + a.sources + " spouts running and " + jvms + " worker JVMs registered " + ms(submit) + " ms after submission");
    }

    /** Waits for the done file of every window task. */
    private static void awaitRun(YsbStormArgs a, Path dir, long submit, long t0) throws Exception {
        long deadline = System.nanoTime() + (Math.max(0, t0 - YsbClock.nowNs() / 1_000_000L) + (a.durationS + 600) * 1000) * 1_000_000L;
        while (true) {
            int done = count(dir, "done-");
            if (done >= a.workers) {
                log("all " + a.workers + " window tasks done " + ms(submit) + " ms after submission");
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out: " + done + " of " + a.workers + " window tasks saw the end of the run ("
                        + count(dir, "ready-") + " of " + a.sources + " spouts opened, " + count(dir, "worker-")
                        + " worker JVMs registered in " + dir + ")");
            }
            Thread.sleep(50);
        }
    }

    /** Waits for the part of every registered worker JVM; returns them. */
    private static List<YsbStormWorker.Part> awaitParts(Path dir) throws Exception {
        long deadline = System.nanoTime() + PARTS_TIMEOUT_MS * 1_000_000L;
        while (true) {
            List<String> missing = new ArrayList<>();
            for (Path w : list(dir, "worker-")) {
                String n = w.getFileName().toString().substring("worker-".length());
                if (!Files.exists(dir.resolve("part-" + n + ".bin"))) {
                    missing.add(n);
                }
            }
            if (missing.isEmpty()) {
                break;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no part from worker JVM(s) " + missing + " within " + PARTS_TIMEOUT_MS / 1000
                        + " s of the dump marker in " + dir + " (a worker died or restarted?)");
            }
            Thread.sleep(20);
        }
        List<YsbStormWorker.Part> parts = new ArrayList<>();
        for (Path p : list(dir, "part-")) {
            try (ObjectInputStream in = new ObjectInputStream(Files.newInputStream(p))) {
                parts.add((YsbStormWorker.Part) in.readObject());
            }
        }
        return parts;
    }

    /** Adds the parts to the statics the report reads. */
    private static void pour(List<YsbStormWorker.Part> parts) {
        YsbPart all = new YsbPart();
        for (YsbStormWorker.Part p : parts) {
            all.merge(p.part());
            YsbStormStats.ARRIVED.add(p.arrived());
            YsbStormStats.PARSE_ERRORS.add(p.parseErrors());
        }
        all.pourIntoStats();
    }

    /** Writes placement.csv: component, task, host, port, pid of every task (by component, task). */
    private static void placement(Path dir, List<YsbStormWorker.Part> parts) throws IOException {
        Map<String, String> rows = new TreeMap<>();
        for (YsbStormWorker.Part p : parts) {
            for (String t : p.tasks()) {
                String[] ct = t.split(":");
                rows.put(String.format("%s,%05d", ct[0], Integer.parseInt(ct[1])),
                        ct[0] + "," + ct[1] + "," + p.host() + "," + p.port() + "," + p.pid());
            }
        }
        StringBuilder b = new StringBuilder("component,task,host,port,pid\n");
        rows.values().forEach(r -> b.append(r).append('\n'));
        Files.writeString(dir.resolve("placement.csv"), b.toString(), StandardCharsets.UTF_8);
        log("placement (component,task,host,port,pid):\n" + b.toString().strip());
    }

    /** Kills the topology at once (best effort: a failed run's topology must not stay). */
    private static void kill(Config conf, String name) {
        try (NimbusClient c = NimbusClient.getConfiguredClient(conf)) {
            KillOptions now = new KillOptions();
            now.set_wait_secs(0);
            c.getClient().killTopologyWithOpts(name, now);
            log("killed " + name);
        } catch (Exception e) {
            log("could not kill " + name + ": " + e);
        }
    }

    private static List<Path> list(Path dir, String prefix) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().startsWith(prefix)).sorted().toList();
        }
    }

    private static int count(Path dir, String prefix) throws IOException {
        return list(dir, prefix).size();
    }

    private static long ms(long sinceNano) {
        return (System.nanoTime() - sinceNano) / 1_000_000L;
    }

    private static void log(String m) {
        System.err.println("storm cluster: " + m);
    }
}
