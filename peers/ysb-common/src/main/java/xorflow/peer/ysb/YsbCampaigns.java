package xorflow.peer.ysb;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The ad -> campaign table (the original's {@code ad-to-campaign-ids.txt}, one
 * {@code { "AD": "CAMPAIGN"}} a line), in memory: the original job reads it from Redis.
 */
public final class YsbCampaigns {
    private YsbCampaigns() {}

    /**
     * Reads {@code path}. Empty lines are skipped.
     *
     * @return ad id -> campaign id
     * @throws IllegalArgumentException naming the file and the 1-based line: unreadable, a line
     *     not a one-entry string -> string object, an ad mapped to two campaigns, or no ad at all
     */
    public static HashMap<String, String> load(Path path) {
        List<String> lines;
        try {
            lines = Files.readAllLines(path);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read --ad-campaigns '" + path + "': " + e);
        }
        ObjectMapper json = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
        HashMap<String, String> table = new HashMap<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.isBlank()) {
                continue;
            }
            String where = "--ad-campaigns '" + path + "' line " + (i + 1) + ": ";
            JsonNode o;
            try {
                o = json.readTree(line);
            } catch (IOException e) {
                throw new IllegalArgumentException(where + "not a {\"AD\": \"CAMPAIGN\"} object: "
                        + (e instanceof JsonProcessingException j ? j.getOriginalMessage() : e.getMessage()));
            }
            if (o == null || !o.isObject() || o.size() != 1) {
                throw new IllegalArgumentException(where + "expected exactly one ad -> campaign entry");
            }
            Iterator<Map.Entry<String, JsonNode>> it = o.fields();
            Map.Entry<String, JsonNode> e = it.next();
            if (!e.getValue().isTextual()) {
                throw new IllegalArgumentException(where + "the campaign is not a string");
            }
            String old = table.put(e.getKey(), e.getValue().asText());
            if (old != null && !old.equals(e.getValue().asText())) {
                throw new IllegalArgumentException(where + "ad " + e.getKey() + " is mapped to two campaigns (" + old
                        + " and " + e.getValue().asText() + ")");
            }
        }
        if (table.isEmpty()) {
            throw new IllegalArgumentException("--ad-campaigns '" + path + "' maps no ad to a campaign");
        }
        return table;
    }
}
