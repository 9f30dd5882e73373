package xorflow.peer.flink;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichFlatMapFunction;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.api.java.tuple.Tuple4;
import org.apache.flink.api.java.tuple.Tuple7;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.streaming.api.functions.sink.RichSinkFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;
import xorflow.peer.ysb.YsbClock;
import xorflow.peer.ysb.YsbInputs;
import xorflow.peer.ysb.YsbPart;
import xorflow.peer.ysb.YsbStats;

/** The YSB job's operators on Flink, in pipeline order (as the original's Flink job). */
final class YsbOperators {
    private YsbOperators() {}

    /** JSON line -> (user_id, page_id, ad_id, ad_type, event_type, event_time, ip_address). */
    static final class Parse extends RichMapFunction<String, Tuple7<String, String, String, String, String, String, String>> {
        private transient ObjectMapper json;

        @Override
        public void open(OpenContext ctx) {
            json = new ObjectMapper();
        }

        @Override
        public Tuple7<String, String, String, String, String, String, String> map(String line) throws Exception {
            JsonNode e = json.readTree(line);
            return Tuple7.of(e.path("user_id").asText(), e.path("page_id").asText(), e.path("ad_id").asText(),
                    e.path("ad_type").asText(), e.path("event_type").asText(), e.path("event_time").asText(),
                    e.path("ip_address").asText());
        }
    }

    /** A view's ad joined to its campaign: (campaign_id, ad_id, event_time); unknown ads dropped. */
    static final class Join extends RichFlatMapFunction<Tuple2<String, Long>, Tuple3<String, String, Long>> {
        private final YsbFiles files;
        private transient java.util.Map<String, String> table;
        private transient YsbPart part;

        Join(YsbFiles files) {
            this.files = files;
        }

        @Override
        public void open(OpenContext ctx) {
            files.loadIfAbsent();
            table = YsbInputs.CAMPAIGNS;
            part = YsbAccumulator.register(getRuntimeContext(), "join");
        }

        @Override
        public void flatMap(Tuple2<String, Long> view, Collector<Tuple3<String, String, Long>> out) {
            String campaign = table.get(view.f0);
            if (campaign == null) {
                part.unknownAd++;
                return;
            }
            out.collect(Tuple3.of(campaign, view.f0, view.f1));
        }
    }

    /**
     * The window's aggregate {views, largest event time}; every view's arrival is timed here
     * (pre-window latency: now - event time) into the part of the window task running it. An
     * aggregate function cannot be rich, so it finds that part through {@link WindowPart}, set by
     * the window's {@link Emit} when the task opens (on the same thread).
     */
    static final class CountMax implements AggregateFunction<Tuple3<String, String, Long>, long[], long[]> {
        @Override
        public long[] createAccumulator() {
            return new long[] {0, Long.MIN_VALUE};
        }

        @Override
        public long[] add(Tuple3<String, String, Long> v, long[] acc) {
            WindowPart.CURRENT.get().prewindow(v.f2);
            acc[0]++;
            acc[1] = Math.max(acc[1], v.f2);
            return acc;
        }

        @Override
        public long[] getResult(long[] acc) {
            return acc;
        }

        @Override
        public long[] merge(long[] a, long[] b) {
            return new long[] {a[0] + b[0], Math.max(a[1], b[1])};
        }
    }

    /** The window task's part and what its pre-window series needs (T0, D); one per task thread. */
    static final class WindowPart {
        /** The part of the window task on this thread; set by {@link Emit#open}. */
        static final ThreadLocal<WindowPart> CURRENT = ThreadLocal.withInitial(() -> {
            throw new IllegalStateException("a window aggregate ran on a thread whose window task never opened");
        });

        private final YsbPart part;
        private final YsbSchedule schedule;

        private WindowPart(YsbPart part, YsbSchedule schedule) {
            this.part = part;
            this.schedule = schedule;
        }

        void prewindow(long eventTimeMs) {
            part.prewindow(schedule.t0Ms(), schedule.durationS(), eventTimeMs, YsbClock.nowNs());
        }
    }

    /** (campaign_id, window_start_ms, views, largest event time ms) per fired window. */
    static final class Emit extends ProcessWindowFunction<long[], Tuple4<String, Long, Long, Long>, String, TimeWindow> {
        private final YsbSchedule schedule;

        /** The schedule of the pre-window series. */
        Emit(YsbSchedule schedule) {
            this.schedule = schedule;
        }

        @Override
        public void open(OpenContext ctx) {
            YsbPart part = YsbAccumulator.register(getRuntimeContext(), "window");
            WindowPart.CURRENT.set(new WindowPart(part, schedule));
        }

        @Override
        public void process(String campaign, Context ctx, Iterable<long[]> acc, Collector<Tuple4<String, Long, Long, Long>> out) {
            long[] a = acc.iterator().next();
            out.collect(Tuple4.of(campaign, ctx.window().getStart(), a[0], a[1]));
        }
    }

    /**
     * The sink: keeps the row and, for windows wholly inside [T0, T0 + D s), times the emission:
     * window latency (now - largest event time) and updated latency (now - window start).
     */
    static final class Measure extends RichSinkFunction<Tuple4<String, Long, Long, Long>> {
        private final YsbSchedule schedule;
        private transient YsbPart part;

        /** Windows wholly inside the schedule's [T0, T0 + D) are timed. */
        Measure(YsbSchedule schedule) {
            this.schedule = schedule;
        }

        @Override
        public void open(OpenContext ctx) {
            part = YsbAccumulator.register(getRuntimeContext(), "sink");
        }

        @Override
        public void invoke(Tuple4<String, Long, Long, Long> w, Context ctx) {
            long now = YsbClock.nowNs();
            part.rows.add(new YsbStats.Row(w.f0, w.f1, w.f2));
            long t0 = schedule.t0Ms();
            if (w.f1 >= t0 && w.f1 + YsbJob.WINDOW_MS <= t0 + schedule.durationMs()) {
                YsbPart.record(part.window, now - w.f3 * 1_000_000L);
                YsbPart.record(part.updated, now - w.f1 * 1_000_000L);
            }
        }
    }

    /** Counts the views the window dropped as late (its side output; must stay 0). */
    static final class Late extends RichSinkFunction<Tuple3<String, String, Long>> {
        private transient YsbPart part;

        @Override
        public void open(OpenContext ctx) {
            part = YsbAccumulator.register(getRuntimeContext(), "late");
        }

        @Override
        public void invoke(Tuple3<String, String, Long> v, Context ctx) {
            part.late++;
        }
    }
}
