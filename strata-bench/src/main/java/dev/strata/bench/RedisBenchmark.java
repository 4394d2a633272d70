package dev.strata.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * The cluster baseline: runs {@code redis-benchmark} (shipped with {@code redis-server}) in
 * cluster mode against a cluster and reports the SET and GET requests per second it measured,
 * so that the cluster tier's throughput figures are ratios against Redis's own client.
 *
 * <p>The command is {@code redis-benchmark --cluster -h HOST -p PORT -d SIZE -P DEPTH -c
 * CONNECTIONS -n REQUESTS -r KEYS -t set,get --csv}: each request names one of {@code KEYS} keys
 * at random, which hash to every primary's slots as a client's distinct keys do (without
 * {@code -r} each connection would SET and GET one key of its node again and again: values that
 * stay in the node's processor caches and a spread over the primaries fixed by the connections,
 * which with 256 KiB values ran SET at 1.1 to 1.4 times and GET at 0.56 to 0.64 times the random-key
 * rates of the same cluster). The SET
 * test writes every key when {@code REQUESTS} is several times {@code KEYS}; a GET of a key never
 * set is a nil reply, cheaper than a hit, which can only favour the baseline. redis-benchmark reads its password only from
 * {@code -a} (it does not honour {@code REDISCLI_AUTH} as redis-cli does), so the password of the
 * cluster measured (a throw-away cluster on 127.0.0.1 that lives only during the run) is on its
 * command line.
 *
 * <p>Its clock: in cluster mode redis-benchmark ends a test on its 250 ms progress timer, so the
 * duration it divides by is the true one rounded up to the next tick (a test of 300 requests that
 * takes 40 ms reports 300 / 0.251 s). {@link #run} therefore reports each rate with the reported
 * duration shortened by half a tick, the middle of the durations that round to it, and the
 * caller runs enough requests that half a tick is small against the duration
 * ({@link Rates#uncertainty}).
 *
 * <p>Stateless; any thread (each run is its own process).
 */
public final class RedisBenchmark {
    /** The period of redis-benchmark's timer that ends a test in cluster mode, seconds. */
    static final double TICK_SECONDS = 0.25;
    private static final int FLUSH_ATTEMPTS = 10;        // FLUSHALL calls before a node that is not ready is an error
    private static final long FLUSH_RETRY_MILLIS = 500;  // between two of them

    private RedisBenchmark() {
    }

    /**
     * SET and GET requests per second of one run, corrected for redis-benchmark's clock.
     *
     * @param setSeconds duration of the SET test as redis-benchmark reported it (a whole number of ticks)
     * @param getSeconds the same for GET
     */
    public record Rates(double setPerSecond, double getPerSecond, double setSeconds, double getSeconds) {
        /** The largest relative error of either rate from the clock's tick: half a tick over the shorter test. */
        public double uncertainty() {
            return TICK_SECONDS / 2 / Math.min(setSeconds, getSeconds);
        }

        /** The highest rate either test can have had: its requests over the reported duration less a whole tick. */
        public double highestPerSecond(int requests) {
            return requests / Math.max(TICK_SECONDS / 5, Math.min(setSeconds, getSeconds) - TICK_SECONDS);
        }
    }

    /** The rate of {@code requests} over a reported duration of {@code reported} seconds, half a tick taken off. */
    static double corrected(int requests, double reported) {
        return requests / Math.max(TICK_SECONDS / 5, reported - TICK_SECONDS / 2);
    }

    /**
     * The {@code redis-benchmark} executable beside {@code redis-server} on the PATH.
     *
     * @throws IllegalStateException naming the binary and how to install it when it is missing
     */
    public static Path binary() {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(java.io.File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, "redis-benchmark"))) {
                return Path.of(dir, "redis-benchmark");
            }
        }
        throw new IllegalStateException("redis-benchmark is not on the PATH (it comes with redis-server: 'apt-get install -y"
                + " redis-server' on Debian and Ubuntu); the cluster scenario's throughput baseline needs it");
    }

    /**
     * Runs one benchmark of SET then GET.
     *
     * @param node        a seed node, {@code host:port}
     * @param password    the cluster's password, or null
     * @param valueBytes  bytes of each value ({@code -d})
     * @param depth       requests pipelined per connection ({@code -P})
     * @param connections parallel connections ({@code -c})
     * @param requests    requests of each test ({@code -n})
     * @param keys        keys the requests pick from at random ({@code -r}), at least 1
     * @throws IOException naming the command (never the password) and its output when it fails or
     *                     reports no rate
     */
    public static Rates run(String node, String password, long valueBytes, int depth, int connections, int requests, int keys)
            throws IOException {
        if (keys < 1) {
            throw new IllegalArgumentException("redis-benchmark needs at least 1 key to pick from, got " + keys);
        }
        int colon = node.lastIndexOf(':');
        List<String> cmd = new ArrayList<>(List.of(binary().toString(), "--cluster", "-h", node.substring(0, colon), "-p",
                node.substring(colon + 1), "-d", Long.toString(valueBytes), "-P", Integer.toString(depth), "-c",
                Integer.toString(connections), "-n", Integer.toString(requests), "-r", Integer.toString(keys), "-t", "set,get", "--csv"));
        String shown = String.join(" ", cmd);
        if (password != null) {
            cmd.addAll(List.of("-a", password));
        }
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (!p.waitFor(300, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException("redis-benchmark did not finish within 300 s (" + shown + ")");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for redis-benchmark", e);
        }
        if (password != null) {
            out = out.replace(password, "****");
        }
        if (p.exitValue() != 0) {
            throw new IOException("redis-benchmark failed (exit " + p.exitValue() + ", " + shown + "): " + tail(out));
        }
        return of(requests, parse(out, shown));
    }

    /**
     * Empties every primary of the cluster ({@code redis-cli --cluster call NODE FLUSHALL
     * --cluster-only-masters}; the replicas follow), so that each measured run starts from the
     * same empty cluster. The password travels in {@code REDISCLI_AUTH}, which redis-cli honours.
     * A node that cannot answer yet (a replica still loading its first copy of its primary) fails
     * the call; it is tried again every half second, ten times at most.
     *
     * @throws IOException naming the command and its output when it fails
     */
    public static void flushAll(String node, String password) throws IOException {
        for (int attempt = 1; ; attempt++) {
            try {
                flushAllOnce(node, password);
                return;
            } catch (IOException e) {
                // a node that cannot answer yet (a replica still loading its first copy) fails the whole call: wait, try again
                boolean notReady = String.valueOf(e.getMessage()).contains("Unable to load info") || String.valueOf(e.getMessage())
                        .contains("LOADING");
                if (!notReady || attempt == FLUSH_ATTEMPTS) {
                    throw e;
                }
                try {
                    Thread.sleep(FLUSH_RETRY_MILLIS);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }

    private static void flushAllOnce(String node, String password) throws IOException {
        Path cli = binary().resolveSibling("redis-cli");
        List<String> cmd = List.of(cli.toString(), "--cluster", "call", node, "FLUSHALL", "--cluster-only-masters");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().remove("REDISCLI_AUTH");
        if (password != null) {
            pb.environment().put("REDISCLI_AUTH", password);
        }
        Process p = pb.start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException("redis-cli FLUSHALL did not finish within 60 s (" + String.join(" ", cmd) + ")");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for redis-cli", e);
        }
        if (p.exitValue() != 0 || out.contains("ERR") || out.contains("NOAUTH")) {
            throw new IOException("emptying the cluster failed (exit " + p.exitValue() + ", " + String.join(" ", cmd) + "): " + tail(out));
        }
    }

    /**
     * The SET and GET rates of redis-benchmark's {@code --csv} output as it printed them,
     * {@code {set, get}}: lines {@code "SET","1418.44",...} (other lines, such as the cluster's
     * layout, are skipped).
     *
     * @throws IOException naming the command and the output when either rate is absent
     */
    static double[] parse(String csv, String command) throws IOException {
        double set = Double.NaN;
        double get = Double.NaN;
        for (String line : csv.split("\r?\n")) {
            String[] f = line.split(",");
            if (f.length < 2) {
                continue;
            }
            String test = unquote(f[0]);
            if (test.equals("SET") || test.equals("GET")) {
                double rps;
                try {
                    rps = Double.parseDouble(unquote(f[1]));
                } catch (NumberFormatException e) {
                    throw new IOException("redis-benchmark reported an unreadable rate '" + f[1] + "' for " + test + " (" + command + ")");
                }
                if (test.equals("SET")) {
                    set = rps;
                } else {
                    get = rps;
                }
            }
        }
        if (!(set > 0) || !(get > 0)) {
            throw new IOException(String.format(Locale.ROOT, "redis-benchmark reported no SET and GET rates (%s): %s", command, tail(csv)));
        }
        return new double[] {set, get};
    }

    /** The rates of a run of {@code requests} requests per test that printed the rates {@code printed} ({@code {set, get}}). */
    static Rates of(int requests, double[] printed) {
        double setSeconds = requests / printed[0];
        double getSeconds = requests / printed[1];
        return new Rates(corrected(requests, setSeconds), corrected(requests, getSeconds), setSeconds, getSeconds);
    }

    private static String unquote(String s) {
        String t = s.trim();
        return t.length() >= 2 && t.startsWith("\"") && t.endsWith("\"") ? t.substring(1, t.length() - 1) : t;
    }

    private static String tail(String text) {
        String t = text.strip();
        return t.length() > 600 ? "..." + t.substring(t.length() - 600) : t;
    }
}
