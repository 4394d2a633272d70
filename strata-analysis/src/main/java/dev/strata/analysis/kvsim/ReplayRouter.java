package dev.strata.analysis.kvsim;

import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Sends each request of a replayed trace to one of N simulated machines.
 *
 * <p>Design note: these routers decide from the trace alone, in trace order, with no clock and no
 * model of the machines' caches, so that a replay is deterministic and cheap; the serving
 * routers, which book live loads and model each instance's cache, are in the node daemon.
 * <ul>
 *   <li>{@link Kind#ROUND_ROBIN}: request {@code i} of those routed goes to machine {@code i mod N}.</li>
 *   <li>{@link Kind#RANDOM}: a uniform machine drawn from a generator seeded with the seed given.</li>
 *   <li>{@link Kind#PREFIX_AFFINITY}: a hash of the request's first block picks the machine, so
 *       requests that share a first block (a session, a system prompt) always land on one
 *       machine; a request with no blocks goes to machine 0.</li>
 *   <li>{@link Kind#LEAST_LOADED}: the machine that has been sent the fewest block references so
 *       far (prompt work, whatever its cache then served), ties to the lowest index.</li>
 * </ul>
 *
 * <p>Threads: confined to the replay's thread (round-robin, random and least-loaded keep state).
 */
public final class ReplayRouter {
    /** The routers by name. */
    public enum Kind {
        ROUND_ROBIN("round-robin"),
        RANDOM("random"),
        PREFIX_AFFINITY("prefix-affinity"),
        LEAST_LOADED("least-loaded");

        private final String label;

        Kind(String label) {
            this.label = label;
        }

        /** The name flags and reports use, e.g. {@code prefix-affinity}. */
        public String label() {
            return label;
        }

        /**
         * Parses a router name ({@code round-robin}, {@code random}, {@code prefix-affinity},
         * {@code least-loaded}; case and {@code _}/{@code -} insensitive).
         *
         * @throws IllegalArgumentException naming the text and the choices
         */
        public static Kind parse(String text) {
            String t = text == null ? "" : text.trim().toLowerCase(Locale.ROOT).replace('_', '-');
            for (Kind k : values()) {
                if (k.label.equals(t)) {
                    return k;
                }
            }
            throw new IllegalArgumentException("unknown router '" + text
                    + "' (choose round-robin, random, prefix-affinity or least-loaded)");
        }
    }

    private final Kind kind;
    private final PrefixTrace trace;
    private final int machines;
    private final SplittableRandom random; // RANDOM only
    private final long[] sent; // [machine] block references routed to it (LEAST_LOADED)
    private long routed; // requests routed so far

    /**
     * @param kind     which router
     * @param trace    the trace whose requests are routed
     * @param machines machines to choose among, at least 1
     * @param seed     the random router's seed (ignored by the others)
     */
    public ReplayRouter(Kind kind, PrefixTrace trace, int machines, long seed) {
        if (machines < 1) {
            throw new IllegalArgumentException("a router needs at least 1 machine, got " + machines);
        }
        this.kind = kind;
        this.trace = trace;
        this.machines = machines;
        this.random = new SplittableRandom(seed);
        this.sent = new long[machines];
    }

    public Kind kind() {
        return kind;
    }

    /** The machine in {@code [0, machines)} that serves request {@code request}; called once per request, in trace order. */
    public int route(int request) {
        int[] blocks = trace.blocksOf(request);
        int m = switch (kind) {
            case ROUND_ROBIN -> (int) (routed % machines);
            case RANDOM -> random.nextInt(machines);
            case PREFIX_AFFINITY -> blocks.length == 0 ? 0 : (int) Long.remainderUnsigned(KvReplaySimulator.blockHash(blocks[0]), machines);
            case LEAST_LOADED -> leastSent();
        };
        routed++;
        sent[m] += blocks.length;
        return m;
    }

    private int leastSent() {
        int best = 0;
        for (int m = 1; m < machines; m++) {
            if (sent[m] < sent[best]) {
                best = m;
            }
        }
        return best;
    }
}
