package xorflow.peer.ysb;

import java.util.List;

/**
 * The YSB peers' main (see {@code peers/ysb-contract.md}): parse the options, load the inputs,
 * run the engine's job, check that every event was emitted, write counts.csv and print the
 * figures. Exit 2 on bad input or options (the message names what and where), 1 when the run
 * fails, 0 otherwise.
 */
public final class YsbMain {
    private YsbMain() {}

    /** What an engine adds to the common run. */
    public interface Job<A extends YsbArgs> {
        /** The engine's name in the outputs: "flink" or "storm". */
        String engine();

        /**
         * The engine's options.
         *
         * @throws IllegalArgumentException naming a bad or unknown option
         */
        A parse(String[] argv);

        /** Runs the job on {@link YsbInputs}; it fills {@link YsbStats}. */
        void run(A a) throws Exception;

        /**
         * Checks the run after every event was emitted, before counts.csv is written.
         *
         * @throws IllegalStateException if the run failed (exit 1)
         */
        default void check(A a, List<YsbStats.Row> rows) {}

        /** The --json object of the run. */
        String json(A a, List<YsbStats.Row> rows);
    }

    /** Runs {@code job} on {@code argv}; never returns (exits 2, 1 or 0). */
    public static <A extends YsbArgs> void main(Job<A> job, String[] argv) {
        A a;
        try {
            a = job.parse(argv);
            YsbInputs.load(a);
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.exit(2);
            return;
        }
        try {
            job.run(a);
            List<YsbStats.Row> rows = YsbReport.sorted(YsbStats.ROWS);
            long emitted = YsbStats.EMITTED.sum();
            if (emitted != a.events()) {
                throw new IllegalStateException(emitted + " of " + a.events() + " events emitted");
            }
            job.check(a, rows);
            if (a.output != null) {
                YsbReport.writeCsv(a.output, rows);
            }
            System.out.println(output(job, a, rows));
        } catch (Exception e) {
            System.err.println("error: the run failed: " + e);
            System.out.flush();
            System.exit(1);
        }
        System.out.flush();
        // The engines leave non-daemon threads behind.
        System.exit(0);
    }

    /** What the run prints: the JSON object with --json, else one line of text. */
    public static <A extends YsbArgs> String output(Job<A> job, A a, List<YsbStats.Row> rows) {
        return a.json ? job.json(a, rows) : YsbReport.text(job.engine(), a, rows);
    }
}
