package dev.strata.node.route;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Cache-aware routing, the baseline that cache-oblivious routing is compared with: send a request
 * to the instance that holds the longest prefix of its blocks in its local cache, unless that
 * instance is overloaded.
 *
 * <p>Design note: the router keeps its own model of each instance's local prefix cache: the
 * blocks of every request it sent there, in a bounded LRU of {@code blocksPerInstance} hashes
 * (a lookup refreshes recency, as a hit does in the engine). For a request it computes, per
 * instance, the number of leading block hashes that instance holds. Only instances under the load
 * cap compete: load ≤ {@code capFactor} × mean load + {@code capSlackTokens} (at least one
 * instance, the least loaded, is always under it). Among them the longest match wins, ties to
 * the lower load; with no match anywhere the least loaded wins. Without the cap (factor
 * infinite) this is pure affinity, which piles hot prefixes onto one instance.
 *
 * <p>Threads: any. Each instance's cache model is guarded by its own lock; a decision reads the
 * models one at a time, so concurrent decisions see a recent, not an atomic, picture.
 */
public final class PrefixAffinityRouter implements Router {
    private final int blocksPerInstance;
    private final double capFactor;
    private final long capSlackTokens;
    private final LruSet[] caches;

    /**
     * @param instances         engine instances
     * @param blocksPerInstance blocks each instance's local cache holds (its LRU bound)
     * @param capFactor         an instance above {@code capFactor} × mean load (+ slack) is not
     *                          chosen for affinity; {@link Double#POSITIVE_INFINITY} for no cap
     * @param capSlackTokens    tokens of slack on top of the cap (keeps the cap meaningful at low load)
     */
    public PrefixAffinityRouter(int instances, int blocksPerInstance, double capFactor, long capSlackTokens) {
        if (instances < 1 || blocksPerInstance < 1 || !(capFactor >= 1.0) || capSlackTokens < 0) {
            throw new IllegalArgumentException("prefix affinity router: instances " + instances + ", blocks per instance "
                    + blocksPerInstance + ", cap factor " + capFactor + ", slack " + capSlackTokens
                    + ": need instances >= 1, blocks >= 1, factor >= 1, slack >= 0");
        }
        this.blocksPerInstance = blocksPerInstance;
        this.capFactor = capFactor;
        this.capSlackTokens = capSlackTokens;
        this.caches = new LruSet[instances];
        for (int i = 0; i < instances; i++) {
            caches[i] = new LruSet(blocksPerInstance);
        }
    }

    @Override
    public String name() {
        return Double.isInfinite(capFactor) ? "prefix-affinity" : "prefix-affinity-capped";
    }

    /** The load above which an instance does not compete for affinity, given the current loads. */
    public long cap(InstanceLoads loads) {
        if (Double.isInfinite(capFactor)) {
            return Long.MAX_VALUE;
        }
        double mean = (double) loads.total() / loads.instances();
        return (long) Math.floor(capFactor * mean) + capSlackTokens;
    }

    /** Leading blocks of {@code hashes} that the model of {@code instance}'s cache holds now. */
    public int cachedPrefix(int instance, long[] hashes) {
        return caches[instance].leadingMatches(hashes);
    }

    @Override
    public int route(RouteRequest request, InstanceLoads loads) {
        if (loads.instances() != caches.length) {
            throw new IllegalArgumentException("loads of " + loads.instances() + " instances given to a router of " + caches.length);
        }
        long[] hashes = request.blockHashes();
        long cap = cap(loads);
        int best = -1;
        int bestMatch = -1;
        long bestLoad = Long.MAX_VALUE;
        int leastLoaded = 0;
        long leastLoad = Long.MAX_VALUE;
        for (int i = 0; i < caches.length; i++) {
            long load = loads.load(i);
            if (load < leastLoad) {
                leastLoad = load;
                leastLoaded = i;
            }
            if (load > cap) {
                continue;
            }
            int match = caches[i].leadingMatches(hashes);
            if (match > bestMatch || match == bestMatch && load < bestLoad) {
                best = i;
                bestMatch = match;
                bestLoad = load;
            }
        }
        int pick = best < 0 || bestMatch == 0 ? leastLoaded : best;
        loads.book(pick, request.cost());
        caches[pick].addAll(hashes);
        return pick;
    }

    /** A bounded LRU set of block hashes; one lock per instance. */
    private static final class LruSet {
        private final LinkedHashMap<Long, Boolean> entries;

        LruSet(int capacity) {
            this.entries = new LinkedHashMap<>(16, 0.75f, true) {
                private static final long serialVersionUID = 1L;

                @Override
                protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
                    return size() > capacity;
                }
            };
        }

        synchronized int leadingMatches(long[] hashes) {
            int n = 0;
            while (n < hashes.length && entries.get(hashes[n]) != null) {
                n++;
            }
            return n;
        }

        synchronized void addAll(long[] hashes) {
            for (long h : hashes) {
                entries.put(h, Boolean.TRUE);
            }
        }
    }

    /** Blocks each instance's cache model holds at most. */
    public int blocksPerInstance() {
        return blocksPerInstance;
    }
}
