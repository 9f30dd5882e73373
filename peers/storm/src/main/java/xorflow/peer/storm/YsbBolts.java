package xorflow.peer.storm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Map;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.tuple.Values;
import xorflow.peer.ysb.YsbInputs;
import xorflow.peer.ysb.YsbStats;

/**
 * The pre-window bolts, as the original YSB's Storm topology (DeserializeBolt, EventFilterBolt,
 * EventProjectionBolt, RedisJoinBolt, the last with an in-memory table). Every tuple carries its
 * source (field 0) and end_ms (last field: 0 for an event, the end marker's event time for a
 * marker, which every bolt passes on). No acking: the spout emits without message ids.
 */
final class YsbBolts {
    private YsbBolts() {}

    static final Fields EVENT = new Fields("source", "user_id", "page_id", "ad_id", "ad_type", "event_type",
            "event_time", "ip_address", "end_ms");

    /** A bolt that keeps its collector. */
    abstract static class Base extends BaseRichBolt {
        private static final long serialVersionUID = 1L;
        transient OutputCollector out;

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector out) {
            YsbStormWorker.setUp(conf, ctx);
            this.out = out;
        }
    }

    /** (source, line, end_ms) -> the event's seven fields as strings. */
    static final class Deserialize extends Base {
        private static final long serialVersionUID = 1L;
        private transient ObjectMapper json;

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector out) {
            super.prepare(conf, ctx, out);
            json = new ObjectMapper();
        }

        @Override
        public void execute(Tuple t) {
            Object source = t.getValue(0);
            long end = t.getLong(2);
            if (end != 0) {
                out.emit(new Values(source, "", "", "", "", "", "", "", end));
                return;
            }
            JsonNode e;
            try {
                e = json.readTree(t.getString(1));
            } catch (Exception ex) {
                YsbStormStats.PARSE_ERRORS.increment();
                return;
            }
            out.emit(new Values(source, e.path("user_id").asText(), e.path("page_id").asText(), e.path("ad_id").asText(),
                    e.path("ad_type").asText(), e.path("event_type").asText(), e.path("event_time").asText(),
                    e.path("ip_address").asText(), end));
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
            d.declare(EVENT);
        }
    }

    /** Keeps views (and end markers). */
    static final class Filter extends Base {
        private static final long serialVersionUID = 1L;

        @Override
        public void execute(Tuple t) {
            if (t.getLong(8) != 0 || t.getString(5).equals("view")) {
                out.emit(t.getValues());
            }
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
            d.declare(EVENT);
        }
    }

    /** -> (source, ad_id, event_time ms, end_ms); a marker's event time is its end_ms. */
    static final class Project extends Base {
        private static final long serialVersionUID = 1L;

        @Override
        public void execute(Tuple t) {
            long end = t.getLong(8);
            long time = end != 0 ? end : Long.parseLong(t.getString(6));
            out.emit(new Values(t.getValue(0), t.getString(3), time, end));
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
            d.declare(new Fields("source", "ad_id", "event_time", "end_ms"));
        }
    }

    /**
     * -> (source, campaign_id, ad_id, event_time, end_ms) on stream "s" + source, so the window
     * bolt's watermark is the least over the sources (Storm keeps one per input stream).
     * Unknown ads are dropped and counted.
     */
    static final class Join extends Base {
        private static final long serialVersionUID = 1L;
        private final int sources;
        private transient Map<String, String> table;

        Join(int sources) {
            this.sources = sources;
        }

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector out) {
            super.prepare(conf, ctx, out);
            table = YsbInputs.CAMPAIGNS;
        }

        @Override
        public void execute(Tuple t) {
            int source = t.getInteger(0);
            long end = t.getLong(3);
            String campaign = end != 0 ? "" : table.get(t.getString(1));
            if (campaign == null) {
                YsbStats.UNKNOWN_AD.increment();
                return;
            }
            out.emit(stream(source), new Values(source, campaign, t.getString(1), t.getLong(2), end));
        }

        static String stream(int source) {
            return "s" + source;
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
            for (int s = 0; s < sources; s++) {
                d.declareStream(stream(s), new Fields("source", "campaign_id", "ad_id", "event_time", "end_ms"));
            }
        }
    }

    /** Counts the views the window bolt refused as late (its late-tuple stream). */
    static final class Late extends Base {
        private static final long serialVersionUID = 1L;

        @Override
        public void execute(Tuple t) {
            YsbStats.LATE.increment();
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {}
    }
}
