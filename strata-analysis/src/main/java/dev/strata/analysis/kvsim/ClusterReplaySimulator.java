package dev.strata.analysis.kvsim;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Replays a prefix trace against N machines, each with its own DEVICE → HOST → DISK tiers (a
 * {@link KvReplaySimulator} of the same settings per machine), behind one CLUSTER tier of KV
 * blocks that every machine shares ({@link ClusterTierModel}: LRU, a block stored once).
 *
 * <p>Model, per request, in trace order:
 * <ol>
 *   <li>The router ({@link ReplayRouter}) picks the machine.</li>
 *   <li>The machine's cached prefix is found in its own tiers first (its local hits, by tier);
 *       the match continues in the cluster from the first block the machine lacks, and stops at
 *       the first block found nowhere (prefix semantics). The blocks found in the cluster are
 *       cluster hits: read over the network, each read refreshing the block's recency there;
 *       the rest are recomputed.</li>
 *   <li>The machine then replays the request exactly as a single cache does
 *       ({@link KvReplaySimulator#step}): a block loaded from the cluster is written into its
 *       top tier as a recomputed one is, so its own counts see both as "not served locally".</li>
 *   <li>Blocks are written to the cluster by the {@link WritePolicy}: write-through (the default)
 *       writes each recomputed block as it is computed; write-behind writes each block as it
 *       leaves the machine's tiers altogether (evicted from the last tier, dropped as
 *       unreachable, or never kept). A write of a block already stored stores nothing but is
 *       still sent (the store's {@code SET NX} carries the value).</li>
 * </ol>
 * Conservation, per machine and over all: local hits + cluster hits + recomputed = block
 * references. Network bytes are cluster reads plus writes sent, each one block of
 * {@link KvReplaySimulator.Config#blockBytes()}. With one machine and a cluster of 0 blocks the
 * machine's counts are those of {@link KvReplaySimulator#replay} on the same settings.
 *
 * <p>Threads: one simulator per thread; {@link #run} once.
 */
public final class ClusterReplaySimulator {

    /** When a machine writes a block to the cluster. */
    public enum WritePolicy {
        /** As it is computed (recomputed by prefill): the default. */
        THROUGH("through"),
        /** As it leaves the machine's tiers altogether. */
        BEHIND("behind");

        private final String label;

        WritePolicy(String label) {
            this.label = label;
        }

        /** {@code through} or {@code behind}. */
        public String label() {
            return label;
        }

        /**
         * Parses {@code through} or {@code behind} (also {@code write-through}, {@code write-behind},
         * and the values of {@code tiers.cluster.write}: {@code commit}, {@code eviction}).
         *
         * @throws IllegalArgumentException naming the text and the choices
         */
        public static WritePolicy parse(String text) {
            String t = text == null ? "" : text.trim().toLowerCase(Locale.ROOT).replace('_', '-');
            if (t.equals("commit")) {
                return THROUGH;
            }
            if (t.equals("eviction")) {
                return BEHIND;
            }
            for (WritePolicy w : values()) {
                if (w.label.equals(t) || ("write-" + w.label).equals(t)) {
                    return w;
                }
            }
            throw new IllegalArgumentException("unknown cluster write policy '" + text + "' (choose through or behind)");
        }
    }

    /**
     * A multi-machine replay's settings.
     *
     * @param machines      machines, at least 1
     * @param machine       each machine's tiers (capacities in blocks, policies, block size)
     * @param clusterBlocks the cluster's capacity in blocks, shared by all; 0 disables it
     * @param write         when blocks are written to the cluster
     * @param router        which router sends requests to machines
     * @param seed          the random router's seed
     */
    public record Config(int machines, KvReplaySimulator.Config machine, long clusterBlocks, WritePolicy write,
                         ReplayRouter.Kind router, long seed) {
        public Config {
            if (machines < 1) {
                throw new IllegalArgumentException("the number of machines must be at least 1, got " + machines);
            }
            Objects.requireNonNull(machine, "machine");
            if (clusterBlocks < 0) {
                throw new IllegalArgumentException("cluster capacity must not be negative, got " + clusterBlocks + " blocks");
            }
            Objects.requireNonNull(write, "write");
            Objects.requireNonNull(router, "router");
        }
    }

    private final PrefixTrace trace;
    private final Config config;
    private final KvReplaySimulator[] sims; // [machine]
    private final ClusterTierModel cluster;
    private final ReplayRouter router;
    private final long[] clusterHits; // [machine] blocks read from the cluster
    private final long[] writesSent; // [machine] blocks written to the cluster
    private final long[] writesStored; // [machine] of those, blocks the cluster did not hold
    private int writer; // the machine whose departures are being written (write-behind)
    private boolean ran;

    public ClusterReplaySimulator(PrefixTrace trace, Config config) {
        this.trace = trace;
        this.config = config;
        int n = config.machines();
        this.sims = new KvReplaySimulator[n];
        this.cluster = new ClusterTierModel(trace.blockCount(), config.clusterBlocks());
        this.router = new ReplayRouter(config.router(), trace, n, config.seed());
        this.clusterHits = new long[n];
        this.writesSent = new long[n];
        this.writesStored = new long[n];
        for (int m = 0; m < n; m++) {
            sims[m] = new KvReplaySimulator(trace, config.machine());
            if (config.write() == WritePolicy.BEHIND) {
                sims[m].onDeparture(this::writeFromWriter);
            }
        }
    }

    /** Replays {@code trace} over the machines of {@code config} and returns the counts. */
    public static ClusterReplayResult replay(PrefixTrace trace, Config config) {
        return new ClusterReplaySimulator(trace, config).run();
    }

    /** Replays the whole trace once. */
    public ClusterReplayResult run() {
        if (ran) {
            throw new IllegalStateException("a simulator replays its trace once");
        }
        ran = true;
        for (int r = 0; r < trace.requestCount(); r++) {
            replayRequest(r);
        }
        List<ClusterReplayResult.Machine> machines = new ArrayList<>();
        for (int m = 0; m < sims.length; m++) {
            machines.add(new ClusterReplayResult.Machine(sims[m].result(), clusterHits[m], writesSent[m], writesStored[m]));
        }
        return new ClusterReplayResult(config.router().label(), config.write(), config.clusterBlocks(), machines,
                cluster.evictions(), cluster.occupancy(), cluster.duplicateWrites(), config.machine().blockBytes());
    }

    private void replayRequest(int r) {
        int m = router.route(r);
        KvReplaySimulator sim = sims[m];
        int[] blocks = trace.blocksOf(r);
        int local = sim.cachedPrefix(r);
        int found = local;
        while (found < blocks.length && cluster.holds(blocks[found])) {
            cluster.read(blocks[found]);
            found++;
        }
        clusterHits[m] += found - local;
        writer = m;
        int prefix = sim.step(r);
        if (prefix != local) {
            throw new IllegalStateException("machine " + m + " served " + prefix + " blocks of request " + r + ", its lookup found " + local);
        }
        if (config.write() == WritePolicy.THROUGH) {
            for (int i = found; i < blocks.length; i++) {
                write(m, blocks[i]);
            }
        }
        if (config.machine().checkInvariants()) {
            cluster.checkInvariants();
        }
    }

    private void writeFromWriter(int block) {
        write(writer, block);
    }

    private void write(int m, int block) {
        boolean stored = !cluster.holds(block);
        if (cluster.write(block)) {
            writesSent[m]++;
            if (stored) {
                writesStored[m]++;
            }
        }
    }
}
