package dev.strata.analysis.kvsim;

import java.util.List;

/**
 * What a multi-machine replay ({@link ClusterReplaySimulator}) counted, per machine and over all,
 * in blocks, with bytes derived from the block size.
 *
 * <p>Every block reference is exactly one of: a local hit (served by the machine's own tiers,
 * counted by tier), a cluster hit (read from the cluster over the network), or recomputed.
 *
 * <p>Immutable; any thread.
 *
 * @param router           the router's name
 * @param write            when blocks were written to the cluster
 * @param clusterCapacity  the cluster's capacity in blocks (0: disabled)
 * @param machines         each machine's counts, by index
 * @param clusterEvictions blocks the cluster evicted to make room
 * @param clusterStored    blocks the cluster holds at the end
 * @param duplicateWrites  writes of a block the cluster already held (sent, nothing stored)
 * @param blockBytes       bytes of one block
 */
public record ClusterReplayResult(String router, ClusterReplaySimulator.WritePolicy write, long clusterCapacity,
                                  List<Machine> machines, long clusterEvictions, long clusterStored, long duplicateWrites,
                                  long blockBytes) {

    public ClusterReplayResult {
        machines = List.copyOf(machines);
    }

    /**
     * One machine's counts.
     *
     * @param local         its own tiers' counts, as a single-cache replay reports them: there,
     *                      {@link ReplayResult#recomputed()} is every block not served locally
     *                      (cluster hits included), since both are written into the top tier
     * @param clusterHits   blocks it read from the cluster
     * @param clusterWrites blocks it wrote to the cluster (sent)
     * @param clusterStores of those, blocks the cluster did not hold before
     */
    public record Machine(ReplayResult local, long clusterHits, long clusterWrites, long clusterStores) {

        public long requests() {
            return local.requests();
        }

        /** Block references of the requests it served. */
        public long references() {
            return local.accesses();
        }

        /** Blocks served by {@code tier} of its own. */
        public long localHits(int tier) {
            return local.hitsByTier()[tier];
        }

        /** Blocks served by its own tiers. */
        public long localHits() {
            return local.hits();
        }

        /** Blocks found nowhere, computed again by prefill. */
        public long recomputed() {
            return local.recomputed() - clusterHits;
        }

        /** Blocks it moved over the network: cluster reads plus writes sent. */
        public long networkBlocks() {
            return clusterHits + clusterWrites;
        }
    }

    /** Requests over all machines. */
    public long requests() {
        return machines.stream().mapToLong(Machine::requests).sum();
    }

    /** Block references over all machines. */
    public long references() {
        return machines.stream().mapToLong(Machine::references).sum();
    }

    /** Blocks served by {@code tier} of their own machine, over all machines. */
    public long localHits(int tier) {
        return machines.stream().mapToLong(m -> m.localHits(tier)).sum();
    }

    /** Blocks served by their own machine's tiers, over all machines. */
    public long localHits() {
        return machines.stream().mapToLong(Machine::localHits).sum();
    }

    /** Blocks read from the cluster, over all machines. */
    public long clusterHits() {
        return machines.stream().mapToLong(Machine::clusterHits).sum();
    }

    /** Blocks recomputed, over all machines. */
    public long recomputed() {
        return machines.stream().mapToLong(Machine::recomputed).sum();
    }

    /** Blocks written to the cluster (sent), over all machines. */
    public long clusterWrites() {
        return machines.stream().mapToLong(Machine::clusterWrites).sum();
    }

    /** Blocks moved over the network (cluster reads plus writes sent), over all machines. */
    public long networkBlocks() {
        return clusterHits() + clusterWrites();
    }

    /** Bytes of {@code blocks} blocks. */
    public long bytes(long blocks) {
        return Math.multiplyExact(blocks, blockBytes);
    }

    /** Bytes on the network, over all machines. */
    public long networkBytes() {
        return bytes(networkBlocks());
    }

    /** Share of all block references that {@code count} blocks are; 0 for an empty trace. */
    public double share(long count) {
        long refs = references();
        return refs == 0 ? 0 : (double) count / refs;
    }
}
