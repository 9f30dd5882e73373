package xorflow.peer.ysb;

/** A {@code HOST:PORT} option value, e.g. {@code --cluster} (Flink's REST, Storm's Nimbus). */
public record YsbHostPort(String host, int port) {
    /**
     * Parses {@code v} as {@code HOST:PORT} (port 1-65535).
     *
     * @param what what the address is, for the message (e.g. "the JobManager's REST address")
     * @throws IllegalArgumentException naming {@code --cluster}, the value and {@code what}
     */
    public static YsbHostPort parse(String v, String what) {
        int colon = v.lastIndexOf(':');
        try {
            if (colon < 1) {
                throw new NumberFormatException();
            }
            int port = Integer.parseInt(v.substring(colon + 1));
            if (port < 1 || port > 65535) {
                throw new NumberFormatException();
            }
            return new YsbHostPort(v.substring(0, colon), port);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--cluster: '" + v + "' is not HOST:PORT (" + what + ")");
        }
    }
}
