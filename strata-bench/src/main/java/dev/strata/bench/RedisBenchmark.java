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
    private static final int CALL_ATTEMPTS = 10;        // redis-cli calls before a node that is not ready is an error
    private static final long CALL_RETRY_MILLIS = 500;  // between two of them

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
            return RedisBenchmark.uncertainty(Math.min(setSeconds, getSeconds));
        }

        /** The highest rate either test can have had: its requests over the reported duration less a whole tick. */
        public double highestPerSecond(int requests) {
            return highest(requests, Math.min(setSeconds, getSeconds));
        }
    }

    /** The largest relative error from the clock's tick of a rate over a test reported to last {@code reported} seconds. */
    static double uncertainty(double reported) {
        return TICK_SECONDS / 2 / reported;
    }

    /** The highest rate a test of {@code requests} reported to last {@code reported} seconds can have had: a whole tick taken off. */
    static double highest(int requests, double reported) {
        return requests / Math.max(TICK_SECONDS / 5, reported - TICK_SECONDS);
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
     * Runs one benchmark of SET then GET on {@code keysPerPrimary} keys of each primary, picked at
     * random: after the SET test has written them, the GET test's rate is a rate of values read
     * ({@link Rates#getHitFraction} says which share was). Its SET test mostly overwrites keys it
     * wrote before, which a node does in memory it already holds: {@link #setNewKeys} measures
     * writes of new keys. Where the SET test's random picks left a key of the cluster, as it was
     * after a flush, unwritten (redis-benchmark sends each connection's requests to one primary,
     * and on a loaded machine a connection whose primary answers late leaves its share to the
     * others: a primary may see only a few dozen of the requests), unmeasured SET tests of as many
     * requests follow, at most {@value #FILL_TESTS}, until every primary holds its keys or evicts.
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
        double set = invoke(node, password, valueBytes, depth, connections, requests, keysPerPrimary, "set")[0];
        for (int fill = 0; fill < FILL_TESTS; fill++) {
            Keyspace k = keyspace(node, password);
            if (k.keys() >= (long) keysPerPrimary * k.primaries() || k.evicted() > 0) {
                break; // every key written, or more than the primaries hold: the GETs' hit fraction says how many miss
            }
            invoke(node, password, valueBytes, depth, connections, requests, keysPerPrimary, "set");
        }
        double get = invoke(node, password, valueBytes, depth, connections, requests, keysPerPrimary, "get")[1];
        return of(requests, new double[] {set, get}, keyspace(node, password).hitFraction());
    }

    /** Most SET tests that {@link #run} adds to write keys its measured SET test's random picks left out. */
    static final int FILL_TESTS = 8;

    /** Keys per primary a new-key SET test picks from: so many that its requests almost never name a key twice. */
    static final int NEW_KEY_SPACE = 1_000_000_000;

    /**
     * The rate of one SET test whose requests write new keys (picked among {@value #NEW_KEY_SPACE}
     * on each primary), as a cache tier writes blocks it has not stored before, with what the
     * primaries held after it.
     *
     * @param perSecond SETs per second, corrected for the clock ({@link #corrected})
     * @param seconds   the test's duration as redis-benchmark reported it
     * @param keys      keys the primaries held after the test
     * @param evicted   keys the primaries evicted during it ({@code maxmemory}): a run that evicted
     *                  measured writes into a full node, not into free memory
     */
    public record NewKeys(double perSecond, double seconds, long keys, long evicted) {
        /** The largest relative error of the rate from the clock's tick. */
        public double uncertainty() {
            return RedisBenchmark.uncertainty(seconds);
        }

        /** The highest rate the test of {@code requests} can have had. */
        public double highestPerSecond(int requests) {
            return highest(requests, seconds);
        }
    }

    /**
     * Runs one SET test of {@code requests} requests on new keys into the cluster as it is (empty it
     * first with {@link #flushAll} to measure writes into free memory).
     *
     * @throws IOException naming the command (never the password) and its output when it fails or reports no rate
     */
    public static NewKeys setNewKeys(String node, String password, long valueBytes, int depth, int connections, int requests)
            throws IOException {
        double[] printed = invoke(node, password, valueBytes, depth, connections, requests, NEW_KEY_SPACE, "set");
        Keyspace k = keyspace(node, password);
        double seconds = requests / printed[0];
        return new NewKeys(corrected(requests, seconds), seconds, k.keys(), k.evicted());
    }

    /**
     * Resets the primaries' statistics, runs redis-benchmark's {@code tests} and returns the rates
     * it printed, {@code {set, get}} (NaN for a test not run).
     */
    private static double[] invoke(String node, String password, long valueBytes, int depth, int connections, int requests,
                                   int keysPerPrimary, String tests) throws IOException {
        int colon = node.lastIndexOf(':');
        List<String> cmd = new ArrayList<>(List.of(binary().toString(), "--cluster", "-h", node.substring(0, colon), "-p",
                node.substring(colon + 1), "-d", Long.toString(valueBytes), "-P", Integer.toString(depth), "-c",
                Integer.toString(connections), "-n", Integer.toString(requests), "-r", Integer.toString(keysPerPrimary), "-t", tests,
                "--csv"));
        String shown = String.join(" ", cmd);
        if (password != null) {
            cmd.addAll(List.of("-a", password));
        }
        callPrimaries(node, password, "CONFIG", "RESETSTAT");
        ToolRun run = runTool(new ProcessBuilder(cmd), "redis-benchmark", shown, 300);
        String out = password == null ? run.output() : run.output().replace(password, "****");
        if (run.exit() != 0) {
            throw new IOException("redis-benchmark failed (exit " + run.exit() + ", " + shown + "): " + tail(out));
        }
        return parse(out, shown, tests);
    }

    /** The exit status and the output (standard error included) of a tool that ran to its end. */
    private record ToolRun(int exit, String output) {
    }

    /**
     * Runs {@code pb}'s command to its end, at most {@code seconds}, its standard error joined to
     * its output; {@code name} and {@code shown} (the command without secrets) name it in errors.
     *
     * @throws IOException when it cannot start, outlives {@code seconds} (it is killed) or the wait is interrupted
     */
    private static ToolRun runTool(ProcessBuilder pb, String name, String shown, long seconds) throws IOException {
        Process p = pb.redirectErrorStream(true).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException(name + " did not finish within " + seconds + " s (" + shown + ")");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for " + name, e);
        }
        return new ToolRun(p.exitValue(), out);
    }

    /**
     * What the primaries report, summed over them: lookups since their statistics were last reset
     * (GETs that found their key and GETs that did not), keys evicted since then, keys held now,
     * and the smallest {@code maxmemory} among them.
     *
     * @param primaries primaries whose statistics were read
     * @param hits      their {@code keyspace_hits}
     * @param misses    their {@code keyspace_misses}
     * @param evicted   their {@code evicted_keys}
     * @param keys      keys in their database 0
     * @param maxmemory the smallest {@code maxmemory} of a primary, bytes; 0 when none has a limit
     */
    public record Keyspace(int primaries, long hits, long misses, long evicted, long keys, long maxmemory) {
        /** The fraction of lookups that found their key; 0 when there was none. */
        public double hitFraction() {
            return hits + misses == 0 ? 0 : (double) hits / (hits + misses);
        }
    }

    /**
     * The cluster's primaries, their lookups, evictions, keys and memory limit ({@code INFO stats
     * keyspace memory} on every primary).
     *
     * @throws IOException naming the command and its output when it fails or a primary's answer lacks the counters
     */
    public static Keyspace keyspace(String node, String password) throws IOException {
        return parseKeyspace(callPrimaries(node, password, "INFO", "stats", "keyspace", "memory"));
    }

    /**
     * Sums the counters of {@link Keyspace} over the answers of {@code redis-cli --cluster call NODE
     * INFO stats keyspace memory}: one block per primary, each with {@code keyspace_hits},
     * {@code keyspace_misses}, {@code evicted_keys} and {@code maxmemory}, and {@code db0:keys=N,...}
     * when its database holds a key.
     *
     * @throws IOException naming what is missing when no primary answered or one answered without a counter
     */
    static Keyspace parseKeyspace(String out) throws IOException {
        String[] counters = {"keyspace_hits:", "keyspace_misses:", "evicted_keys:", "maxmemory:"};
        int maxmemory = 3; // its index in counters: summed for the check, its smallest non-zero value kept
        int[] seen = new int[counters.length];
        long[] sum = new long[counters.length];
        long smallestLimit = Long.MAX_VALUE;
        long keys = 0;
        for (String line : out.split("\r?\n")) {
            String l = line.strip();
            try {
                for (int c = 0; c < counters.length; c++) {
                    if (l.startsWith(counters[c])) {
                        long v = Long.parseLong(l.substring(counters[c].length()));
                        sum[c] += v;
                        seen[c]++;
                        if (c == maxmemory && v > 0) {
                            smallestLimit = Math.min(smallestLimit, v);
                        }
                    }
                }
                if (l.startsWith("db0:keys=")) {
                    int comma = l.indexOf(',');
                    keys += Long.parseLong(l.substring("db0:keys=".length(), comma < 0 ? l.length() : comma));
                }
            } catch (NumberFormatException | StringIndexOutOfBoundsException e) {
                throw new IOException("a primary reported an unreadable counter '" + l + "' in INFO");
            }
        }
        for (int c = 0; c < counters.length; c++) {
            if (seen[c] == 0 || seen[c] != seen[0]) {
                throw new IOException("INFO of the primaries gave " + seen[0] + " " + counters[0].replace(":", "") + " and " + seen[c] + " "
                        + counters[c].replace(":", "") + " counters (one of each per primary expected): " + tail(out));
            }
        }
        return new Keyspace(seen[0], sum[0], sum[1], sum[2], keys, smallestLimit == Long.MAX_VALUE ? 0 : smallestLimit);
    }

    /**
     * Empties every primary of the cluster ({@code redis-cli --cluster call NODE FLUSHALL
     * --cluster-only-masters}; the replicas follow), so that each measured run starts from the
     * same empty cluster.
     *
     * @throws IOException naming the command and its output when it fails
     */
    public static void flushAll(String node, String password) throws IOException {
        callPrimaries(node, password, "FLUSHALL");
    }

    /**
     * Runs one command on every primary ({@code redis-cli --cluster call NODE COMMAND...
     * --cluster-only-masters}) and returns what redis-cli printed. The password travels in
     * {@code REDISCLI_AUTH}, which redis-cli honours, never on its command line. redis-cli first
     * reads every node, replicas included: a node that cannot answer yet (a replica still loading
     * its first copy of its primary) fails the call, which is tried again every half second, ten
     * times at most.
     *
     * @throws IOException naming the command and its output when it fails or a node refuses it
     */
    private static String callPrimaries(String node, String password, String... command) throws IOException {
        for (int attempt = 1; ; attempt++) {
            try {
                return callPrimariesOnce(node, password, command);
            } catch (IOException e) {
                boolean notReady = String.valueOf(e.getMessage()).contains("Unable to load info") || String.valueOf(e.getMessage())
                        .contains("LOADING");
                if (!notReady || attempt == CALL_ATTEMPTS) {
                    throw e;
                }
                try {
                    Thread.sleep(CALL_RETRY_MILLIS);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }

    private static String callPrimariesOnce(String node, String password, String... command) throws IOException {
        Path cli = binary().resolveSibling("redis-cli");
        List<String> cmd = new ArrayList<>(List.of(cli.toString(), "--cluster", "call", node));
        cmd.addAll(List.of(command));
        cmd.add("--cluster-only-masters");
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().remove("REDISCLI_AUTH");
        if (password != null) {
            pb.environment().put("REDISCLI_AUTH", password);
        }
        String shown = String.join(" ", command);
        ToolRun run = runTool(pb, "redis-cli " + shown, String.join(" ", cmd), 60);
        String out = run.output();
        String refusal = out.lines().filter(l -> l.contains("ERR") || l.contains("NOAUTH")).findFirst().orElse(null);
        if (run.exit() != 0 || refusal != null) {
            throw new IOException("redis-cli " + shown + " on the primaries failed (exit " + run.exit() + ", " + String.join(" ", cmd)
                    + "): " + (refusal != null ? refusal.strip() + "; output: " : "") + tail(out));
        }
        return out;
    }

    /**
     * The SET and GET rates of redis-benchmark's {@code --csv} output as it printed them,
     * {@code {set, get}}: lines {@code "SET","1418.44",...} (other lines, such as the cluster's
     * layout, are skipped), NaN for a test that {@code tests} ({@code set}, {@code get} or
     * {@code set,get}, as given to {@code -t}) does not name.
     *
     * @throws IOException naming the command and the output when a rate asked for is absent
     */
    static double[] parse(String csv, String command, String tests) throws IOException {
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
        boolean withSet = tests.contains("set");
        boolean withGet = tests.contains("get");
        if ((withSet && !(set > 0)) || (withGet && !(get > 0))) {
            throw new IOException(String.format(Locale.ROOT, "redis-benchmark reported no %s rate (%s): %s",
                    tests.toUpperCase(Locale.ROOT).replace(",", " and "), command, tail(csv)));
        }
        return new double[] {withSet ? set : Double.NaN, withGet ? get : Double.NaN};
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
