package xorflow.peer.flinksql;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.util.EnvironmentInformation;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.StatementSet;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.api.config.OptimizerConfigOptions;
import org.apache.flink.table.catalog.CatalogBaseTable;
import org.apache.flink.table.catalog.ObjectPath;

/**
 * One Nexmark query on Flink SQL over the JSON-lines files of {@code xorflow nexmark generate}, in
 * a MiniCluster in this JVM, the peer of {@code xorflow-lab bench nexmark} (docs/peers.md, "Flink
 * SQL (Nexmark)").
 *
 * <pre>
 * java ... xorflow.peer.flinksql.NexmarkSql --query examples/nexmark/queries/q0.sql \
 *     --data-dir data/nexmark --parallelism 2 [--ddl FILE] [--warmup-runs N] \
 *     [--state-backend rocksdb|hashmap] [--managed-memory 2g] [--checkpoint-interval-ms 180000] \
 *     [--name q0]
 * </pre>
 *
 * <p>It runs the DDL (default: the bundled {@code ddl_files.sql}, {@code ${DATA_DIR}} replaced by
 * the data directory), registers {@code count_char} (q14's UDF), then the query file unchanged:
 * its {@code CREATE TABLE} of the blackhole sink and its {@code INSERT INTO}. The bounded file
 * sources finish, and so does the job. The settings are those of Nexmark's own Flink
 * configuration (nexmark-flink's conf/config.yaml) that apply to one machine: mini-batch (2 s,
 * 50,000 rows), split distinct aggregation, RocksDB with incremental checkpoints every 180 s in
 * exactly-once mode (which a run of seconds never reaches), no checkpoints after tasks finish; and
 * 1 GB of managed memory per slot (RocksDB's), where Nexmark's TaskManagers have about 2.8 GB.
 *
 * <p>It prints one JSON object on stdout at the end: the events read (the lines of the files of
 * the tables the optimized plan scans), the time from submitting the job to its end
 * ({@code elapsed_ms}; the JVM's start to that submission is {@code jvm_start_to_submit_ms}), the
 * job's net runtime as the JobManager saw it, and the JVM's process CPU over the job
 * ({@code job_cpu_ms}, {@code OperatingSystemMXBean.getProcessCpuTime}) and over its whole life.
 * Progress goes to stderr.
 */
public final class NexmarkSql {
    private NexmarkSql() {}

    /** The command line. */
    static final class Args {
        Path query;
        Path dataDir;
        Path ddl;
        String name;
        int parallelism = 2;
        int warmupRuns = 0;
        String stateBackend = "rocksdb";
        String managedMemory;
        /** Nexmark's conf/config.yaml: every 3 minutes. */
        long checkpointIntervalMs = 180_000;
        /** Flink's default network buffer timeout (execution.buffer-timeout.interval), ms. */
        long bufferTimeoutMs = 100;
        /** Flink's default watermark interval (pipeline.auto-watermark-interval), ms. */
        long watermarkIntervalMs = 200;
        /** Nexmark's configuration: mini-batch aggregation on. */
        boolean miniBatch = true;

        static Args parse(String[] argv) {
            Args a = new Args();
            for (int i = 0; i < argv.length; i++) {
                String k = argv[i];
                if (k.equals("--help") || k.equals("-h")) {
                    System.out.println(
                            "usage: NexmarkSql --query FILE --data-dir DIR [--parallelism P] [--ddl FILE] "
                                    + "[--warmup-runs N] [--state-backend rocksdb|hashmap] [--managed-memory SIZE] "
                                    + "[--checkpoint-interval-ms MS] [--buffer-timeout-ms MS] "
                                    + "[--watermark-interval-ms MS] [--mini-batch true|false] [--name NAME]");
                    System.exit(0);
                }
                if (i + 1 >= argv.length) {
                    throw new IllegalArgumentException(k + " needs a value");
                }
                String v = argv[++i];
                switch (k) {
                    case "--query" -> a.query = Path.of(v);
                    case "--data-dir" -> a.dataDir = Path.of(v);
                    case "--ddl" -> a.ddl = Path.of(v);
                    case "--name" -> a.name = v;
                    case "--managed-memory" -> a.managedMemory = v;
                    case "--parallelism" -> a.parallelism = positive(k, v);
                    case "--warmup-runs" -> a.warmupRuns = Integer.parseInt(v);
                    case "--checkpoint-interval-ms" -> a.checkpointIntervalMs = positive(k, v);
                    case "--buffer-timeout-ms" -> a.bufferTimeoutMs = positive(k, v);
                    case "--watermark-interval-ms" -> a.watermarkIntervalMs = positive(k, v);
                    case "--mini-batch" -> {
                        if (!v.equals("true") && !v.equals("false")) {
                            throw new IllegalArgumentException("--mini-batch: true or false, not " + v);
                        }
                        a.miniBatch = v.equals("true");
                    }
                    case "--state-backend" -> {
                        if (!v.equals("rocksdb") && !v.equals("hashmap")) {
                            throw new IllegalArgumentException("--state-backend: rocksdb or hashmap, not " + v);
                        }
                        a.stateBackend = v;
                    }
                    default -> throw new IllegalArgumentException("unknown option " + k);
                }
            }
            if (a.query == null || a.dataDir == null) {
                throw new IllegalArgumentException("--query and --data-dir are required");
            }
            if (a.warmupRuns < 0) {
                throw new IllegalArgumentException("--warmup-runs must be 0 or more");
            }
            if (a.name == null) {
                String f = a.query.getFileName().toString();
                a.name = f.endsWith(".sql") ? f.substring(0, f.length() - 4) : f;
            }
            return a;
        }

        private static int positive(String k, String v) {
            int n = Integer.parseInt(v);
            if (n < 1) {
                throw new IllegalArgumentException(k + " must be at least 1");
            }
            return n;
        }
    }

    public static void main(String[] argv) throws Exception {
        Args a;
        try {
            a = Args.parse(argv);
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.exit(2);
            return;
        }
        Path tmp = Files.createTempDirectory("xorflow-flink-sql-");
        try {
            run(a, tmp);
        } finally {
            deleteTree(tmp);
        }
        // Flink's non-daemon threads may linger after the MiniCluster closes.
        System.exit(0);
    }

    /** Nexmark's Flink settings (conf/config.yaml) that apply to a MiniCluster on one machine. */
    static Configuration configuration(Args a, Path tmp) {
        Configuration conf = new Configuration();
        // State: RocksDB, incremental checkpoints (Nexmark's: every 3 minutes), exactly once, local
        // recovery.
        conf.set(StateBackendOptions.STATE_BACKEND, a.stateBackend);
        conf.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, true);
        conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, tmp.resolve("checkpoints").toUri().toString());
        conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofMillis(a.checkpointIntervalMs));
        conf.set(CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE, CheckpointingMode.EXACTLY_ONCE);
        conf.set(CheckpointingOptions.LOCAL_RECOVERY, true);
        conf.set(CheckpointingOptions.ENABLE_CHECKPOINTS_AFTER_TASKS_FINISH, false);
        conf.set(
                ConfigOptions.key("state.backend.rocksdb.localdir").stringType().noDefaultValue(),
                tmp.resolve("rocksdb").toString());
        // Managed memory (RocksDB's block cache and write buffers): a local MiniCluster gets 128 MB
        // for all its slots unless told, which starves RocksDB (q4 at 1M events: 213 s against
        // 15 s with 1 GB per slot). Nexmark's TaskManagers have 8 GB each for one slot, about
        // 2.8 GB of it managed; here 1 GB per slot unless --managed-memory says otherwise.
        conf.set(
                TaskManagerOptions.MANAGED_MEMORY_SIZE,
                a.managedMemory != null
                        ? MemorySize.parse(a.managedMemory)
                        : MemorySize.ofMebiBytes(1024L * a.parallelism));
        // The table planner's: mini-batch aggregation and split distinct aggregates.
        conf.set(ExecutionConfigOptions.TABLE_EXEC_MINIBATCH_ENABLED, a.miniBatch);
        conf.set(ExecutionConfigOptions.TABLE_EXEC_MINIBATCH_ALLOW_LATENCY, Duration.ofSeconds(2));
        conf.set(ExecutionConfigOptions.TABLE_EXEC_MINIBATCH_SIZE, 50_000L);
        conf.set(OptimizerConfigOptions.TABLE_OPTIMIZER_DISTINCT_AGG_SPLIT_ENABLED, true);
        // Latency: Flink's defaults (100 ms, 200 ms) unless told; its docs advise a buffer
        // timeout "close to 0 (for example 5 or 10 ms)" to minimize latency.
        conf.set(ExecutionOptions.BUFFER_TIMEOUT, Duration.ofMillis(a.bufferTimeoutMs));
        conf.set(PipelineOptions.AUTO_WATERMARK_INTERVAL, Duration.ofMillis(a.watermarkIntervalMs));
        return conf;
    }

    static void run(Args a, Path tmp) throws Exception {
        long jvmStartMs = ManagementFactory.getRuntimeMXBean().getStartTime();
        Configuration conf = configuration(a, tmp);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(a.parallelism, conf);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(
                env, EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());
        tEnv.createTemporarySystemFunction("count_char", CountChar.class);

        String ddl = a.ddl == null ? resource("ddl_files.sql") : Files.readString(a.ddl);
        String dataDir = a.dataDir.toAbsolutePath().normalize().toString();
        for (String s : statements(ddl.replace("${DATA_DIR}", dataDir))) {
            tEnv.executeSql(s);
        }
        List<String> inserts = new ArrayList<>();
        for (String s : statements(Files.readString(a.query))) {
            if (s.regionMatches(true, 0, "INSERT", 0, 6)) {
                inserts.add(s);
            } else {
                tEnv.executeSql(s);
            }
        }
        if (inserts.isEmpty()) {
            throw new IllegalArgumentException(a.query + " has no INSERT INTO");
        }

        // The events: the rows of every table the optimized plan scans.
        Map<String, Long> tableEvents = new LinkedHashMap<>();
        for (String t : scannedTables(statementSet(tEnv, inserts).explain())) {
            tableEvents.put(t, lines(tablePath(tEnv, t)));
        }
        long events = tableEvents.values().stream().mapToLong(Long::longValue).sum();
        System.err.printf("flink-sql: %s reads %s: %d events%n", a.name, tableEvents.keySet(), events);

        List<Long> warmups = new ArrayList<>();
        for (int i = 0; i < a.warmupRuns; i++) {
            long t0 = System.nanoTime();
            execute(statementSet(tEnv, inserts));
            warmups.add((System.nanoTime() - t0) / 1_000_000);
            System.err.printf("flink-sql: %s warm-up run %d: %d ms%n", a.name, i + 1, warmups.get(i));
        }

        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        StatementSet set = statementSet(tEnv, inserts);
        // Printed rows (a 'print' sink) after this line are the measured run's.
        System.out.println("-- measured run");
        System.out.flush();
        long submitMs = System.currentTimeMillis();
        long cpu0 = os.getProcessCpuTime();
        long t0 = System.nanoTime();
        JobExecutionResult r = execute(set);
        long elapsedNs = System.nanoTime() - t0;
        long cpu1 = os.getProcessCpuTime();
        double elapsedMs = elapsedNs / 1e6;
        double jobCpuMs = (cpu1 - cpu0) / 1e6;

        StringBuilder j = new StringBuilder("{");
        field(j, "query", quote(a.name));
        field(j, "events", Long.toString(events));
        StringBuilder te = new StringBuilder("{");
        for (Map.Entry<String, Long> e : tableEvents.entrySet()) {
            field(te, e.getKey(), Long.toString(e.getValue()));
        }
        field(j, "table_events", te.append('}').toString());
        field(j, "parallelism", Integer.toString(a.parallelism));
        field(j, "elapsed_ms", fmt(elapsedMs));
        field(j, "net_runtime_ms", Long.toString(r.getNetRuntime()));
        field(j, "job_cpu_ms", fmt(jobCpuMs));
        field(j, "jvm_cpu_ms", fmt(cpu1 / 1e6));
        field(j, "jvm_start_to_submit_ms", Long.toString(submitMs - jvmStartMs));
        field(j, "events_per_s", fmt(events / (elapsedMs / 1000.0)));
        field(j, "events_per_cpu_s", fmt(jobCpuMs > 0 ? events / (jobCpuMs / 1000.0) : 0));
        field(j, "warmup_runs", Integer.toString(a.warmupRuns));
        field(j, "warmup_elapsed_ms", warmups.toString());
        field(j, "flink_version", quote(EnvironmentInformation.getVersion()));
        field(j, "java_version", quote(System.getProperty("java.version")));
        field(j, "state_backend", quote(conf.get(StateBackendOptions.STATE_BACKEND)));
        field(j, "managed_memory_mib", Long.toString(conf.get(TaskManagerOptions.MANAGED_MEMORY_SIZE).getMebiBytes()));
        field(j, "mini_batch", Boolean.toString(conf.get(ExecutionConfigOptions.TABLE_EXEC_MINIBATCH_ENABLED)));
        field(j, "buffer_timeout_ms", Long.toString(conf.get(ExecutionOptions.BUFFER_TIMEOUT).toMillis()));
        field(j, "watermark_interval_ms", Long.toString(conf.get(PipelineOptions.AUTO_WATERMARK_INTERVAL).toMillis()));
        field(j, "object_reuse", Boolean.toString(env.getConfig().isObjectReuseEnabled()));
        field(j, "object_reuse_option", Boolean.toString(conf.get(PipelineOptions.OBJECT_REUSE)));
        System.out.println(j.append('}'));
    }

    private static StatementSet statementSet(StreamTableEnvironment tEnv, List<String> inserts) {
        StatementSet set = tEnv.createStatementSet();
        for (String s : inserts) {
            set.addInsertSql(s);
        }
        return set;
    }

    /** Submits the job and waits for its end (a failed job throws). */
    private static JobExecutionResult execute(StatementSet set) throws Exception {
        TableResult result = set.execute();
        JobClient client = result.getJobClient()
                .orElseThrow(() -> new IllegalStateException("the INSERT started no job"));
        return client.getJobExecutionResult().get();
    }

    /** A scan in the plan: {@code TableSourceScan(table=[[catalog, database, name, project=...}. */
    private static final Pattern SCAN =
            Pattern.compile("TableSourceScan\\(table=\\[\\[[^,\\]]+, [^,\\]]+, ([^,\\]]+)");

    /** The tables the optimized plan of {@code explain} scans, by name. */
    static TreeSet<String> scannedTables(String explain) {
        int optimized = explain.indexOf("== Optimized");
        Matcher m = SCAN.matcher(optimized >= 0 ? explain.substring(optimized) : explain);
        TreeSet<String> tables = new TreeSet<>();
        while (m.find()) {
            tables.add(m.group(1));
        }
        if (tables.isEmpty()) {
            throw new IllegalStateException("no table scan in the plan:\n" + explain);
        }
        return tables;
    }

    private static Path tablePath(StreamTableEnvironment tEnv, String table) throws Exception {
        String catalog = tEnv.getCurrentCatalog();
        CatalogBaseTable t = tEnv.getCatalog(catalog)
                .orElseThrow()
                .getTable(new ObjectPath(tEnv.getCurrentDatabase(), table));
        String path = t.getOptions().get("path");
        if (path == null) {
            throw new IllegalStateException("table " + table + " has no 'path': only file tables are counted");
        }
        return Path.of(path.startsWith("file://") ? path.substring(7) : path);
    }

    /** Lines of a file (a last line without a newline counts). */
    static long lines(Path p) throws IOException {
        long n = 0;
        byte last = '\n';
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
            ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20);
            while (ch.read(buf) > 0) {
                buf.flip();
                while (buf.hasRemaining()) {
                    last = buf.get();
                    if (last == '\n') {
                        n++;
                    }
                }
                buf.clear();
            }
        }
        return last == '\n' ? n : n + 1;
    }

    /**
     * The statements of a SQL text: {@code --} comments dropped, split at semicolons outside
     * quotes ('...', `...`), empty ones left out.
     */
    static List<String> statements(String text) {
        List<String> out = new ArrayList<>();
        StringBuilder cur = new StringBuilder();
        boolean quote = false;
        boolean backtick = false;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (!quote && !backtick && c == '-' && i + 1 < text.length() && text.charAt(i + 1) == '-') {
                while (i < text.length() && text.charAt(i) != '\n') {
                    i++;
                }
                cur.append('\n');
                continue;
            }
            if (c == '\'' && !backtick) {
                quote = !quote;
            } else if (c == '`' && !quote) {
                backtick = !backtick;
            } else if (c == ';' && !quote && !backtick) {
                add(out, cur);
                continue;
            }
            cur.append(c);
        }
        add(out, cur);
        return out;
    }

    private static void add(List<String> out, StringBuilder cur) {
        String s = cur.toString().trim();
        if (!s.isEmpty()) {
            out.add(s);
        }
        cur.setLength(0);
    }

    private static String resource(String name) throws IOException {
        try (InputStream in = NexmarkSql.class.getClassLoader().getResourceAsStream(name)) {
            if (in == null) {
                throw new IOException("resource " + name + " missing from the class path");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    private static void field(StringBuilder j, String k, String v) {
        if (j.length() > 1) {
            j.append(',');
        }
        j.append(quote(k)).append(':').append(v);
    }

    private static String quote(String s) {
        return '"' + s.replace("\\", "\\\\").replace("\"", "\\\"") + '"';
    }

    private static String fmt(double x) {
        return String.format(Locale.ROOT, "%.3f", x);
    }

    /**
     * Deletes the run's temporary folder (checkpoints, RocksDB). Flink's own shutdown hooks may be
     * deleting in it at the same time, so a file that vanishes during the walk is no error; nor is
     * a folder left behind.
     */
    private static void deleteTree(Path root) {
        try (Stream<Path> s = Files.walk(root)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException ignored) {
            // Harmless: see above.
        }
    }
}
