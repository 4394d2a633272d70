package dev.strata.analysis.kvsim;

import dev.strata.memory.Sizes;
import java.util.Locale;

/**
 * Formats a replay for people: the per-tier table, blocks and bytes per link, and Bélády's bound
 * at the same total capacity.
 *
 * <p>Stateless; any thread.
 */
public final class ReplayReport {
    private ReplayReport() {
    }

    /**
     * The report of one replay.
     *
     * @param r           the replay's counts
     * @param config      the replay's settings
     * @param beladyHits  {@link BeladyBound#hits} at {@link KvReplaySimulator.Config#totalCapacity()}
     */
    public static String format(ReplayResult r, KvReplaySimulator.Config config, long beladyHits) {
        StringBuilder b = new StringBuilder();
        String policy = String.join("/", distinct(r.policies()));
        b.append(String.format(Locale.ROOT, "policy %s: %d requests, %d block references, hit ratio %.4f%n", policy,
                r.requests(), r.accesses(), r.hitRatio()));
        b.append(String.format(Locale.ROOT, "  %-8s %12s  %-14s %12s %10s%n", "tier", "capacity", "policy", "hits", "hit ratio"));
        for (int t = 0; t < 3; t++) {
            long cap = config.capacity()[t];
            if (cap == 0) {
                b.append(String.format(Locale.ROOT, "  %-8s %12s%n", KvReplaySimulator.TIER_NAMES[t], "disabled"));
            } else {
                b.append(String.format(Locale.ROOT, "  %-8s %12d  %-14s %12d %10.4f%n", KvReplaySimulator.TIER_NAMES[t], cap,
                        r.policies()[t], r.hitsByTier()[t], r.hitRatio(t)));
            }
        }
        b.append(String.format(Locale.ROOT, "  %-8s %12d  %-14s %12d %10.4f%n", "all", config.totalCapacity(), "", r.hits(), r.hitRatio()));
        b.append(String.format(Locale.ROOT, "  blocks moved (block = %s):%n", Sizes.format(r.blockBytes())));
        int[] chain = java.util.stream.IntStream.range(0, 3).filter(t -> config.capacity()[t] > 0).toArray();
        for (int k = 0; k + 1 < chain.length; k++) { // links between neighbours in the chain
            link(b, r, chain[k + 1], chain[k], "reload");
            link(b, r, chain[k], chain[k + 1], "offload");
        }
        b.append(String.format(Locale.ROOT, "    %-16s %-9s %12d blocks %14s%n", "prefill", "recompute", r.recomputed(),
                Sizes.format(r.bytesRecomputed())));
        double optimum = r.accesses() == 0 ? 0 : (double) beladyHits / r.accesses();
        b.append(String.format(Locale.ROOT,
                "  Belady (optimal, one cache of %d blocks = the tiers' sum): hit ratio %.4f; this policy reaches %.3f of it%n",
                config.totalCapacity(), optimum, optimum == 0 ? 0 : r.hitRatio() / optimum));
        b.append(String.format(Locale.ROOT, "  evictions that left a resident child behind: %d; unreachable blocks dropped: %d%n",
                r.strandingEvictions(), r.unreachableDrops()));
        return b.toString();
    }

    private static void link(StringBuilder b, ReplayResult r, int from, int to, String what) {
        b.append(String.format(Locale.ROOT, "    %-16s %-9s %12d blocks %14s%n",
                KvReplaySimulator.TIER_NAMES[from] + " -> " + KvReplaySimulator.TIER_NAMES[to], what,
                r.moved(from, to), Sizes.format(r.bytesMoved(from, to))));
    }

    private static String[] distinct(String[] names) {
        return java.util.Arrays.stream(names).filter(s -> !s.isEmpty()).distinct().toArray(String[]::new);
    }
}
