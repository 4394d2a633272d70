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
 * CONNECTIONS -n REQUESTS -r KEYS -t set,get --csv}. In cluster mode redis-benchmark gives each
 * primary its own hash tag and each request picks one of {@code KEYS} keys at random under the tag
 * of its connection's primary: {@code -r KEYS} names {@code KEYS} keys on every primary, the
 * primaries times as many in all (without {@code -r} each connection would SET and GET one key of
 * its node again and again: values that stay in the node's processor caches and a spread over the
 * primaries fixed by the connections, which with 256 KiB values ran SET at 1.1 to 1.4 times and GET
 * at 0.56 to 0.64 times the random-key rates of the same cluster). {@link #run} therefore takes
 * the keys per primary.
 *
 * <p>A GET of a key that is not there (never set, or evicted at {@code maxmemory}) is a nil reply
 * of five bytes, far cheaper than a value: a working set the nodes cannot hold, or a SET test too
 * short to write every key, turns the GET rate into a rate of misses (with 256 KiB values and three
 * times the keys a 256 MiB node holds, half the GETs missed and the rate nearly doubled). Each run
 * therefore resets the primaries' statistics first and reports which fraction of its GETs found
 * their key ({@link Rates#getHitFraction}), from the primaries' {@code keyspace_hits} and
 * {@code keyspace_misses} (a SET counts in neither).
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
     * @param getHitFraction the fraction of the GET test's requests that found their key, 0..1
     */
    public record Rates(double setPerSecond, double getPerSecond, double setSeconds, double getSeconds, double getHitFraction) {
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
     * @param keysPerPrimary keys on each primary the requests pick from at random ({@code -r}), at least 1
     * @throws IOException naming the command (never the password) and its output when it fails or
     *                     reports no rate
     */
    public static Rates run(String node, String password, long valueBytes, int depth, int connections, int requests,
                            int keysPerPrimary) throws IOException {
        if (keysPerPrimary < 1) {
            throw new IllegalArgumentException("redis-benchmark needs at least 1 key per primary to pick from, got " + keysPerPrimary);
        }
        int colon = node.lastIndexOf(':');
        List<String> cmd = new ArrayList<>(List.of(binary().toString(), "--cluster", "-h", node.substring(0, colon), "-p",
                node.substring(colon + 1), "-d", Long.toString(valueBytes), "-P", Integer.toString(depth), "-c",
                Integer.toString(connections), "-n", Integer.toString(requests), "-r", Integer.toString(keysPerPrimary), "-t", "set,get",
                "--csv"));
        String shown = String.join(" ", cmd);
        if (password != null) {
            cmd.addAll(List.of("-a", password));
        }
        callPrimaries(node, password, "CONFIG", "RESETSTAT");
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
        return of(requests, parse(out, shown), keyspace(node, password).hitFraction());
    }

    /**
     * GETs that found their key and GETs that did not, summed over the primaries since their
     * statistics were last reset, and how many primaries answered.
     *
     * @param primaries primaries whose statistics were read
     * @param hits      their {@code keyspace_hits}
     * @param misses    their {@code keyspace_misses}
     */
    public record Keyspace(int primaries, long hits, long misses) {
        /** The fraction of lookups that found their key; 0 when there was none. */
        public double hitFraction() {
            return hits + misses == 0 ? 0 : (double) hits / (hits + misses);
        }
    }

    /**
     * The cluster's primaries and their lookups ({@code INFO stats} on every primary).
     *
     * @throws IOException naming the command and its output when it fails or a primary's answer lacks the counters
     */
    public static Keyspace keyspace(String node, String password) throws IOException {
        return parseKeyspace(callPrimaries(node, password, "INFO", "stats"));
    }

    /**
     * Sums {@code keyspace_hits} and {@code keyspace_misses} over the answers of
     * {@code redis-cli --cluster call NODE INFO stats}: one block per primary, each with both counters.
     *
     * @throws IOException naming what is missing when no primary answered or one answered without a counter
     */
    static Keyspace parseKeyspace(String out) throws IOException {
        int hitsSeen = 0;
        int missesSeen = 0;
        long hits = 0;
        long misses = 0;
        for (String line : out.split("\r?\n")) {
            String l = line.strip();
            try {
                if (l.startsWith("keyspace_hits:")) {
                    hits += Long.parseLong(l.substring("keyspace_hits:".length()));
                    hitsSeen++;
                } else if (l.startsWith("keyspace_misses:")) {
                    misses += Long.parseLong(l.substring("keyspace_misses:".length()));
                    missesSeen++;
                }
            } catch (NumberFormatException e) {
                throw new IOException("a primary reported an unreadable counter '" + l + "' in INFO stats");
            }
        }
        if (hitsSeen == 0 || hitsSeen != missesSeen) {
            throw new IOException("INFO stats of the primaries gave " + hitsSeen + " keyspace_hits and " + missesSeen
                    + " keyspace_misses counters (one of each per primary expected): " + tail(out));
        }
        return new Keyspace(hitsSeen, hits, misses);
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
        callPrimaries(node, password, "FLUSHALL");
    }

    /**
     * Runs one command on every primary ({@code redis-cli --cluster call NODE COMMAND...
     * --cluster-only-masters}) and returns what redis-cli printed. The password travels in
     * {@code REDISCLI_AUTH}, which redis-cli honours, never on its command line.
     *
     * @throws IOException naming the command and its output when it fails or a node refuses it
     */
    private static String callPrimaries(String node, String password, String... command) throws IOException {
        Path cli = binary().resolveSibling("redis-cli");
        List<String> cmd = new ArrayList<>(List.of(cli.toString(), "--cluster", "call", node));
        cmd.addAll(List.of(command));
        cmd.add("--cluster-only-masters");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().remove("REDISCLI_AUTH");
        if (password != null) {
            pb.environment().put("REDISCLI_AUTH", password);
        }
        Process p = pb.start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String shown = String.join(" ", command);
        try {
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException("redis-cli " + shown + " did not finish within 60 s (" + String.join(" ", cmd) + ")");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for redis-cli", e);
        }
        if (p.exitValue() != 0 || out.contains("ERR") || out.contains("NOAUTH")) {
            throw new IOException("redis-cli " + shown + " on the primaries failed (exit " + p.exitValue() + ", " + String.join(" ", cmd)
                    + "): " + tail(out));
        }
        return out;
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

    /**
     * The rates of a run of {@code requests} requests per test that printed the rates
     * {@code printed} ({@code {set, get}}) and whose GETs found their key in {@code getHitFraction} of cases.
     */
    static Rates of(int requests, double[] printed, double getHitFraction) {
        double setSeconds = requests / printed[0];
        double getSeconds = requests / printed[1];
        return new Rates(corrected(requests, setSeconds), corrected(requests, getSeconds), setSeconds, getSeconds, getHitFraction);
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
