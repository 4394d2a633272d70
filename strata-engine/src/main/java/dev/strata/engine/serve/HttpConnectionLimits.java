package dev.strata.engine.serve;

import dev.strata.memory.log.Log;

/**
 * Applies a server's connection limits ({@link ServerConfig#headerTimeoutMillis()},
 * {@link ServerConfig#maxIdleConnections()}) to the JDK HTTP server ({@code com.sun.net.httpserver})
 * that {@link OpenAiServer} is built on.
 *
 * <p>Design note: the JDK server has no per-server API for these limits; it reads them from system
 * properties once per process, when its implementation class is first initialised (at the first
 * {@code HttpServer.create}). So this class sets them deliberately just before the first server is
 * created, from that server's config:
 * <ul>
 *   <li>{@code sun.net.httpserver.maxReqTime} (whole seconds, rounded up from the header timeout):
 *       a connection that started a request and has not sent all of it (line, headers, body) in
 *       that time is closed; without it a client that sends half its headers holds a connection
 *       and a file descriptor for as long as it likes;</li>
 *   <li>{@code sun.net.httpserver.clockTick} (ms, at most 10 s): how often connections that never
 *       sent a byte are checked; they are closed after the same timeout;</li>
 *   <li>{@code sun.net.httpserver.maxIdleConnections}: kept-alive connections beyond it are closed.</li>
 * </ul>
 * The response time ({@code maxRspTime}) is left unlimited: a streamed generation may run long.
 * A later server in the same process with other limits runs with the first one's; that is logged
 * as a warning. A process that created a JDK HTTP server before any {@link OpenAiServer} keeps
 * the JDK's defaults (no header timeout).
 *
 * <p>Threads: {@link #apply} is synchronized; any thread.
 */
final class HttpConnectionLimits {
    private static final long MAX_CLOCK_TICK_MILLIS = 10_000; // the JDK's default idle check period
    private static Applied applied; // the limits of the first server; null before it, guarded by the class

    private record Applied(long headerTimeoutSeconds, int maxIdleConnections) {
    }

    private HttpConnectionLimits() {
    }

    /** Sets the limits of {@code config} before the first server of the process; warns when a later one differs. */
    static synchronized void apply(ServerConfig config) {
        long seconds = Math.max(1, (config.headerTimeoutMillis() + 999) / 1000);
        Applied wanted = new Applied(seconds, config.maxIdleConnections());
        if (applied == null) {
            System.setProperty("sun.net.httpserver.maxReqTime", Long.toString(seconds));
            System.setProperty("sun.net.httpserver.clockTick", Long.toString(Math.min(MAX_CLOCK_TICK_MILLIS, seconds * 1000)));
            System.setProperty("sun.net.httpserver.maxIdleConnections", Integer.toString(config.maxIdleConnections()));
            applied = wanted;
        } else if (!applied.equals(wanted)) {
            Log.warn("serve", "the JDK HTTP server reads its connection limits once per process: this server keeps a header"
                    + " timeout of " + applied.headerTimeoutSeconds() + " s and " + applied.maxIdleConnections()
                    + " idle connections, not the " + seconds + " s and " + config.maxIdleConnections() + " it asks for");
        }
    }
}
