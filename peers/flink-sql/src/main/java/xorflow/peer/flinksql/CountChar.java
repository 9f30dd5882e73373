package xorflow.peer.flinksql;

import java.nio.charset.StandardCharsets;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.functions.ScalarFunction;

/**
 * {@code count_char(s, c)}: how many times the character {@code c} (its first character) occurs in
 * {@code s}; 0 for a NULL {@code s}. Nexmark q14's user-defined function, which Flink's Nexmark
 * declares with {@code CREATE FUNCTION count_char AS ...}; {@link NexmarkSql} registers this one
 * under the same name instead (the query files of examples/nexmark/queries/ have that line
 * removed).
 *
 * <p>It takes Flink's internal {@link StringData} (UTF-8 bytes), as a production UDF on a hot path
 * would, so no Java {@code String} is built per row: an ASCII character is counted byte by byte
 * (no other UTF-8 byte equals an ASCII byte), any other by decoding.
 */
public class CountChar extends ScalarFunction {
    public long eval(@DataTypeHint("STRING") StringData s, @DataTypeHint("STRING") StringData c) {
        if (s == null || c == null) {
            return 0;
        }
        byte[] needle = c.toBytes();
        if (needle.length == 0) {
            return 0;
        }
        if (needle[0] >= 0) {
            byte b = needle[0];
            long n = 0;
            for (byte x : s.toBytes()) {
                if (x == b) {
                    n++;
                }
            }
            return n;
        }
        String text = s.toString();
        int cp = new String(needle, StandardCharsets.UTF_8).codePointAt(0);
        return text.codePoints().filter(x -> x == cp).count();
    }
}
