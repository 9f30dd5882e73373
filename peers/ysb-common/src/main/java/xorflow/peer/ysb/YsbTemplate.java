package xorflow.peer.ysb;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The generator's template (the Cloudprofiler paper's ingestion, docs/papers.md): pre-serialized
 * YSB events, one JSON object a line, held in memory with the offset of each line's 13-digit
 * {@code event_time} value so an event is a copy of its line with those 13 bytes patched (see
 * {@code peers/ysb-contract.md}).
 */
public final class YsbTemplate implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    /** Digits of an event time in ms (epoch ms from 2001 to 2286). */
    public static final int TIME_DIGITS = 13;
    private static final byte[] KEY = "\"event_time\"".getBytes(StandardCharsets.US_ASCII);

    /** The lines, without their line ends. */
    final byte[][] lines;
    /** Per line, the byte offset of the first of the 13 digits of its event time. */
    final int[] timeAt;

    private YsbTemplate(byte[][] lines, int[] timeAt) {
        this.lines = lines;
        this.timeAt = timeAt;
    }

    /**
     * Reads and checks {@code path}: every line (a final line end is optional, a CR before LF is
     * dropped) must be a JSON object with string fields ad_id, event_type and a 13-digit
     * event_time, whose key occurs once in the line.
     *
     * @throws IllegalArgumentException naming the file and the 1-based line, when it cannot be read
     *     or a line is malformed, or the file has no line.
     */
    public static YsbTemplate load(Path path) {
        byte[] all;
        try {
            all = Files.readAllBytes(path);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read --events '" + path + "': " + e);
        }
        ObjectMapper json = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
        List<byte[]> lines = new ArrayList<>();
        List<Integer> at = new ArrayList<>();
        int start = 0;
        while (start < all.length) {
            int end = start;
            while (end < all.length && all[end] != '\n') {
                end++;
            }
            int stop = end > start && all[end - 1] == '\r' ? end - 1 : end;
            byte[] line = java.util.Arrays.copyOfRange(all, start, stop);
            String where = "--events '" + path + "' line " + (lines.size() + 1) + ": ";
            at.add(check(line, json, where));
            lines.add(line);
            start = end + 1;
        }
        if (lines.isEmpty()) {
            throw new IllegalArgumentException("--events '" + path + "' has no line");
        }
        return new YsbTemplate(lines.toArray(new byte[0][]), at.stream().mapToInt(Integer::intValue).toArray());
    }

    /** Checks one line; returns the offset of its event time digits. */
    private static int check(byte[] line, ObjectMapper json, String where) {
        JsonNode e;
        try {
            e = json.readTree(line);
        } catch (IOException ex) {
            String why = ex instanceof JsonProcessingException j ? j.getOriginalMessage() : ex.getMessage();
            throw new IllegalArgumentException(where + "not JSON: " + why);
        }
        if (e == null || !e.isObject()) {
            throw new IllegalArgumentException(where + "not a JSON object");
        }
        for (String f : new String[] {"ad_id", "event_type", "event_time"}) {
            if (!e.path(f).isTextual()) {
                throw new IllegalArgumentException(where + "no string field " + f);
            }
        }
        String t = e.get("event_time").asText();
        int key = -1;
        for (int i = 0; i + KEY.length <= line.length; i++) {
            if (matches(line, i) && (i == 0 || line[i - 1] != '\\')) {
                if (key >= 0) {
                    throw new IllegalArgumentException(where + "\"event_time\" occurs twice");
                }
                key = i;
            }
        }
        int i = key + KEY.length;
        while (i < line.length && (line[i] == ' ' || line[i] == '\t' || line[i] == ':')) {
            i++;
        }
        int digits = i + 1;
        if (key < 0 || i >= line.length || line[i] != '"' || t.length() != TIME_DIGITS
                || digits + TIME_DIGITS >= line.length || line[digits + TIME_DIGITS] != '"'
                || !t.equals(new String(line, digits, TIME_DIGITS, StandardCharsets.US_ASCII))
                || !t.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new IllegalArgumentException(where + "event_time is not a 13-digit millisecond string ('" + t + "')");
        }
        return digits;
    }

    private static boolean matches(byte[] line, int at) {
        for (int j = 0; j < KEY.length; j++) {
            if (line[at + j] != KEY[j]) {
                return false;
            }
        }
        return true;
    }

    /** Event {@code k}'s bytes: line {@code k mod N} with its event time set to {@code timeMs}. */
    public byte[] event(long k, long timeMs) {
        int n = (int) (k % lines.length);
        byte[] b = lines[n].clone();
        int end = timeAt[n] + TIME_DIGITS;
        for (int i = end - 1; i >= timeAt[n]; i--) {
            b[i] = (byte) ('0' + timeMs % 10);
            timeMs /= 10;
        }
        return b;
    }
}
