package dev.strata.analysis.kvsim;

import dev.strata.memory.Sizes;
import java.util.Arrays;
import java.util.Locale;

/**
 * Formats a multi-machine replay for people: per machine and over all, the block references split
 * into local hits by tier, cluster hits and recomputed blocks, and the bytes each moved over the
 * network; then the shares of all references and the cluster's state at the end.
 *
 * <p>Stateless; any thread.
 */
public final class ClusterReplayReport {
    private ClusterReplayReport() {
    }

    /** The report of one multi-machine replay run with {@code config}. */
    public static String format(ClusterReplayResult r, ClusterReplaySimulator.Config config) {
        KvReplaySimulator.Config machine = config.machine();
        long[] cap = machine.capacity();
        StringBuilder b = new StringBuilder();
        String policy = String.join("/", Arrays.stream(r.machines().get(0).local().policies()).filter(p -> !p.isEmpty()).distinct()
                .toArray(String[]::new));
        if (policy.isEmpty()) {
            policy = "none (no local tier)";
        }
        b.append(String.format(Locale.ROOT,
                "policy %s, router %s, %d machine%s x (device %d, host %d, disk %d blocks), cluster %s, write-%s: %d requests, %d block references%n",
                policy, r.router(), r.machines().size(), r.machines().size() == 1 ? "" : "s", cap[0], cap[1], cap[2],
                r.clusterCapacity() == 0 ? "disabled" : r.clusterCapacity() + " blocks", r.write().label(), r.requests(), r.references()));
        b.append(String.format(Locale.ROOT, "  %-8s %9s %11s %11s %11s %11s %11s %11s %14s %14s%n", "machine", "requests", "references",
                "device", "host", "disk", "cluster", "recompute", "net read", "net written"));
        for (int m = 0; m < r.machines().size(); m++) {
            ClusterReplayResult.Machine x = r.machines().get(m);
            row(b, Integer.toString(m), x.requests(), x.references(), new long[] {x.localHits(0), x.localHits(1), x.localHits(2)},
                    x.clusterHits(), x.recomputed(), r.bytes(x.clusterHits()), r.bytes(x.clusterWrites()), cap);
        }
        row(b, "all", r.requests(), r.references(), new long[] {r.localHits(0), r.localHits(1), r.localHits(2)}, r.clusterHits(),
                r.recomputed(), r.bytes(r.clusterHits()), r.bytes(r.clusterWrites()), cap);
        b.append(String.format(Locale.ROOT, "  shares of references: local %.4f (", r.share(r.localHits())));
        for (int t = 0; t < 3; t++) {
            b.append(t == 0 ? "" : ", ").append(KvReplaySimulator.TIER_NAMES[t]).append(' ')
                    .append(cap[t] == 0 ? "-" : String.format(Locale.ROOT, "%.4f", r.share(r.localHits(t))));
        }
        b.append(String.format(Locale.ROOT, "), cluster %.4f, recompute %.4f%n", r.share(r.clusterHits()), r.share(r.recomputed())));
        b.append(String.format(Locale.ROOT,
                "  network (block = %s): cluster reads %d blocks = %s, writes %d blocks = %s (%d stored, %d already held), total %s%n",
                Sizes.format(r.blockBytes()), r.clusterHits(), Sizes.format(r.bytes(r.clusterHits())), r.clusterWrites(),
                Sizes.format(r.bytes(r.clusterWrites())), r.clusterWrites() - r.duplicateWrites(), r.duplicateWrites(),
                Sizes.format(r.networkBytes())));
        if (r.clusterCapacity() > 0) {
            b.append(String.format(Locale.ROOT, "  cluster of %d blocks: %d stored at the end, %d evicted%n", r.clusterCapacity(),
                    r.clusterStored(), r.clusterEvictions()));
        }
        return b.toString();
    }

    private static void row(StringBuilder b, String name, long requests, long references, long[] local, long cluster, long recompute,
                            long read, long written, long[] cap) {
        b.append(String.format(Locale.ROOT, "  %-8s %9d %11d", name, requests, references));
        for (int t = 0; t < 3; t++) {
            b.append(String.format(Locale.ROOT, " %11s", cap[t] == 0 ? "-" : Long.toString(local[t])));
        }
        b.append(String.format(Locale.ROOT, " %11d %11d %14s %14s%n", cluster, recompute, Sizes.format(read), Sizes.format(written)));
    }
}
