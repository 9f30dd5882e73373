package xorflow.peer.flinksql;

import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Set;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.catalog.WatermarkSpec;
import org.apache.flink.table.connector.format.DecodingFormat;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.DeserializationFormatFactory;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.types.DataType;

/**
 * {@code 'connector' = 'xorflow-replay'}: a file of records replayed at its own event-time pace,
 * each record emitted when its event time is due, {@code (t - origin) / speed} after the
 * replay's start, as the live feed it was recorded from would deliver it. It is the peer of
 * xorflow's file tables with the same {@code 'replay.*'} options (docs/sql.md, "Connectors";
 * crates/runtime/src/connectors/pace.rs), which {@code xorflow-lab bench nexmark} measures window
 * latency with (docs/peers.md): Flink's own filesystem source has no pace.
 *
 * <p>Options: {@code 'path'} (one file), {@code 'format'} (any of Flink's decoding formats, with
 * its own options), {@code 'replay.origin'} (the event time due at the start, {@code yyyy-MM-dd
 * HH:mm:ss[.SSS]}, UTC), {@code 'replay.speed'} (event time per wall-clock time, default 1),
 * {@code 'replay.start-ms'} (the start, ms since the epoch; default: when the job's first source
 * subtask opens). The table needs a {@code WATERMARK FOR} column: its event time.
 */
public final class ReplayTableFactory implements DynamicTableSourceFactory {
    static final ConfigOption<String> PATH = ConfigOptions.key("path").stringType().noDefaultValue();
    static final ConfigOption<String> ORIGIN =
            ConfigOptions.key("replay.origin").stringType().noDefaultValue();
    static final ConfigOption<Double> SPEED =
            ConfigOptions.key("replay.speed").doubleType().defaultValue(1.0);
    static final ConfigOption<Long> START =
            ConfigOptions.key("replay.start-ms").longType().noDefaultValue();

    @Override
    public String factoryIdentifier() {
        return "xorflow-replay";
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Set.of(PATH, ORIGIN, FactoryUtil.FORMAT);
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Set.of(SPEED, START);
    }

    @Override
    public DynamicTableSource createDynamicTableSource(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        DecodingFormat<DeserializationSchema<RowData>> format =
                helper.discoverDecodingFormat(DeserializationFormatFactory.class, FactoryUtil.FORMAT);
        helper.validate();
        ReadableConfig o = helper.getOptions();
        String table = context.getObjectIdentifier().getObjectName();
        List<WatermarkSpec> watermarks =
                context.getCatalogTable().getResolvedSchema().getWatermarkSpecs();
        if (watermarks.isEmpty()) {
            throw new ValidationException(
                    "table '" + table + "': a replay needs the table's event time (a WATERMARK FOR column)");
        }
        DataType physical = context.getPhysicalRowDataType();
        int rowtime = DataType.getFieldNames(physical).indexOf(watermarks.get(0).getRowtimeAttribute());
        if (rowtime < 0) {
            throw new ValidationException("table '" + table + "': its WATERMARK column is not a physical column");
        }
        double speed = o.get(SPEED);
        if (!(speed > 0) || Double.isInfinite(speed)) {
            throw new ValidationException("table '" + table + "': 'replay.speed' must be a positive number");
        }
        long origin;
        try {
            origin = LocalDateTime.parse(o.get(ORIGIN).trim().replace(' ', 'T'))
                    .toInstant(ZoneOffset.UTC)
                    .toEpochMilli();
        } catch (DateTimeParseException e) {
            throw new ValidationException("table '" + table + "': 'replay.origin' = '" + o.get(ORIGIN)
                    + "' is not a timestamp (yyyy-MM-dd HH:mm:ss[.SSS])");
        }
        String path = o.get(PATH);
        if (path.startsWith("file://")) {
            path = path.substring(7);
        }
        return new ReplayTableSource(
                path, format, physical, rowtime, new ReplayClock(origin, speed, o.getOptional(START).orElse(null)));
    }
}
