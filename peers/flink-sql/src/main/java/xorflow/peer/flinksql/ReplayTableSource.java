package xorflow.peer.flinksql;

import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.format.DecodingFormat;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.connector.source.SourceFunctionProvider;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.DataType;

/** The scan of a {@code 'xorflow-replay'} table: a bounded {@link ReplaySourceFunction}. */
final class ReplayTableSource implements ScanTableSource {
    private final String path;
    private final DecodingFormat<DeserializationSchema<RowData>> format;
    private final DataType physical;
    private final int rowtime;
    private final ReplayClock clock;

    ReplayTableSource(
            String path,
            DecodingFormat<DeserializationSchema<RowData>> format,
            DataType physical,
            int rowtime,
            ReplayClock clock) {
        this.path = path;
        this.format = format;
        this.physical = physical;
        this.rowtime = rowtime;
        this.clock = clock;
    }

    @Override
    public ChangelogMode getChangelogMode() {
        return ChangelogMode.insertOnly();
    }

    @Override
    @SuppressWarnings("deprecation")
    public ScanRuntimeProvider getScanRuntimeProvider(ScanContext context) {
        DeserializationSchema<RowData> decoder = format.createRuntimeDecoder(context, physical);
        return SourceFunctionProvider.of(new ReplaySourceFunction(path, decoder, rowtime, clock), true);
    }

    @Override
    public DynamicTableSource copy() {
        return new ReplayTableSource(path, format, physical, rowtime, clock);
    }

    @Override
    public String asSummaryString() {
        return "xorflow-replay";
    }
}
