package xorflow.peer.flink;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A standalone Flink cluster the YSB job is submitted to ({@code --cluster HOST:PORT}, the
 * JobManager's REST address): a JobManager and TaskManagers started as their own JVMs, e.g. one
 * per network namespace by {@code xorflow-lab bench wan --network netns} (docs/wan.md).
 */
record StandaloneCluster(String host, int port) {
    /** How long {@link #awaitTaskManagers} waits. */
    static final Duration REGISTRATION_TIMEOUT = Duration.ofSeconds(180);

    /** Parses {@code HOST:PORT}; throws naming the value. */
    static StandaloneCluster parse(String v) {
        xorflow.peer.ysb.YsbHostPort a = xorflow.peer.ysb.YsbHostPort.parse(v, "the JobManager's REST address");
        return new StandaloneCluster(a.host(), a.port());
    }

    /**
     * Waits until {@code taskManagers} TaskManagers with {@code slots} slots in all have
     * registered with the JobManager (its REST {@code /overview}), polling every 200 ms.
     *
     * @throws IllegalStateException after {@link #REGISTRATION_TIMEOUT}, saying what registered
     */
    void awaitTaskManagers(int taskManagers, int slots) throws InterruptedException {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://" + host + ":" + port + "/overview"))
                .timeout(Duration.ofSeconds(5)).build();
        long deadline = System.nanoTime() + REGISTRATION_TIMEOUT.toNanos();
        String last = "no answer";
        while (System.nanoTime() < deadline) {
            try {
                String body = http.send(req, HttpResponse.BodyHandlers.ofString()).body();
                long tms = field(body, "taskmanagers");
                long total = field(body, "slots-total");
                if (tms >= taskManagers && total >= slots) {
                    return;
                }
                last = tms + " TaskManagers with " + total + " slots";
            } catch (IOException e) {
                last = e.toString();
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("the Flink cluster at " + host + ":" + port + " did not get " + taskManagers
                + " TaskManagers with " + slots + " slots within " + REGISTRATION_TIMEOUT.toSeconds() + " s (last: " + last + ")");
    }

    /** The integer field {@code name} of a flat JSON object; -1 if absent. */
    private static long field(String json, String name) {
        Matcher m = Pattern.compile("\"" + Pattern.quote(name) + "\"\\s*:\\s*(\\d+)").matcher(json);
        return m.find() ? Long.parseLong(m.group(1)) : -1;
    }
}
