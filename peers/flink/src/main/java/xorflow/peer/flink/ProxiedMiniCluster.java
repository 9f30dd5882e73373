package xorflow.peer.flink;

import java.lang.reflect.Field;
import java.util.HashMap;
import java.util.List;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;

/**
 * A MiniCluster whose TaskManager {@code i} listens for data connections on {@code ports[i].bind}
 * and tells the other TaskManagers to connect to {@code ports[i].advertised}: the port of a delay
 * proxy in front of it ({@code xorflow-lab delay-proxy}), so every byte between TaskManagers crosses
 * the proxy's delay (docs/wan.md, "Flink behind the proxy").
 *
 * <p>Flink reads {@code taskmanager.data.bind-port} and {@code taskmanager.data.port} (the external
 * port) per TaskManager, but a MiniCluster starts every TaskManager from one read-only
 * configuration. This class sets the two keys for each TaskManager just before starting it, in the
 * configuration's backing map ({@code Configuration.confData}, protected, reached by reflection):
 * the only way to give TaskManagers of one JVM different ports. A Flink release that renames the
 * field fails here with a clear error at start, never with TaskManagers sharing a port.
 */
final class ProxiedMiniCluster extends MiniCluster {
    /** One TaskManager's data ports. */
    record Ports(int advertised, int bind) {}

    private final List<Ports> ports;
    private int started;

    ProxiedMiniCluster(MiniClusterConfiguration config, List<Ports> ports) {
        super(config);
        this.ports = ports;
    }

    @Override
    public void startTaskManager() throws Exception {
        if (started >= ports.size()) {
            throw new IllegalStateException("TaskManager " + started + " has no data ports (" + ports.size() + " given)");
        }
        Ports p = ports.get(started++);
        HashMap<String, Object> data = backingMap(getConfiguration());
        synchronized (data) {
            data.put("taskmanager.data.bind-port", Integer.toString(p.bind()));
            data.put("taskmanager.data.port", Integer.toString(p.advertised()));
        }
        super.startTaskManager();
    }

    @SuppressWarnings("unchecked")
    private static HashMap<String, Object> backingMap(Configuration c) {
        try {
            Field f = Configuration.class.getDeclaredField("confData");
            f.setAccessible(true);
            return (HashMap<String, Object>) f.get(c);
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new IllegalStateException(
                    "this Flink release keeps its configuration differently: per-TaskManager data ports (--data-ports) "
                            + "need Configuration.confData: " + e,
                    e);
        }
    }
}
