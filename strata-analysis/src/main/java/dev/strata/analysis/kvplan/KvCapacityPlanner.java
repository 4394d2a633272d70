package dev.strata.analysis.kvplan;

import dev.strata.cache.kv.KvGeometry;
import java.util.ArrayList;
import java.util.List;

/**
 * Plans KV capacity across tiers: from a model, its tensor-parallel split and each rank's memory,
 * how many KV blocks and whole sequences each tier holds, and how many blocks each link can bring
 * to the device within one decode step.
 *
 * <p>Design note: everything is per rank, since under tensor parallelism each rank holds
 * {@code kvHeads / tp} of every block and moves its share over its own link. The device gives KV
 * what weights and overhead leave; every other tier gives its whole size. Block counts and
 * sequence counts are floors (a partial block or sequence is no capacity); a sequence of
 * {@code seqTokens} tokens takes {@code ceil(seqTokens / blockTokens)} blocks. A link moves one
 * block in {@code blockBytes / bandwidth}; the blocks per step are the whole blocks that fit in
 * the decode step. All sizes are bytes and bandwidths bytes per second; the report prints
 * decimal units (GB = 10⁹ bytes).
 *
 * <p>The CLUSTER tier is one memory shared by the machines: each rank keeps its share of a block
 * as one value, its bytes after a {@value #CLUSTER_VALUE_HEADER_BYTES}-byte header (the cluster
 * value format's), so the cluster holds {@code floor(bytes / (tp × (blockBytes + header)))}
 * blocks of the model, and one rank sees {@code bytes / tp} of it. Its link moves the whole value.
 * Redis's own overhead per key (the key, about 100 bytes, and its bookkeeping) is not counted:
 * leave it out of the size given.
 *
 * <p>Stateless; any thread.
 */
public final class KvCapacityPlanner {

    /** Bytes of the header before a block's bytes in a cluster value (the cluster's value format). */
    public static final int CLUSTER_VALUE_HEADER_BYTES = 56;

    private KvCapacityPlanner() {
    }

    /**
     * Plans one request.
     *
     * @throws IllegalArgumentException when the tensor-parallel degree does not fit the model's
     *                                  heads, or the device holds less than one block of KV
     */
    public static KvCapacityPlan plan(PlanRequest r) {
        KvGeometry g = r.rankGeometry();
        long block = g.bytesPerBlock();
        long perSequence = g.blocksFor(r.seqTokens());
        List<KvCapacityPlan.TierCapacity> tiers = new ArrayList<>();
        long deviceKv = r.deviceBytes() - r.weightsPerDevice() - r.overheadBytes();
        if (deviceKv < block) {
            throw new IllegalArgumentException("the device keeps " + PlanReport.decimal(deviceKv) + " for KV after weights and "
                    + "overhead, less than one block of " + PlanReport.decimal(block));
        }
        tiers.add(tier("device", deviceKv, block, perSequence));
        List<KvCapacityPlan.LinkBudget> links = new ArrayList<>();
        if (r.hostBytes() > 0) {
            tiers.add(tier("host", r.hostBytes(), block, perSequence));
            links.add(link("host->device", r.hostLinkBytesPerSecond(), block, perSequence, r));
        }
        if (r.poolBytes() > 0) {
            tiers.add(tier("pool", r.poolBytes(), block, perSequence));
            links.add(link("pool->device", r.poolLinkBytesPerSecond(), block, perSequence, r));
        }
        if (r.diskBytes() > 0) {
            tiers.add(tier("disk", r.diskBytes(), block, perSequence));
            links.add(link("disk->device", r.diskLinkBytesPerSecond(), block, perSequence, r));
        }
        KvCapacityPlan.ClusterCapacity cluster = null;
        if (r.cluster() != null) {
            PlanRequest.Cluster c = r.cluster();
            long value = block + CLUSTER_VALUE_HEADER_BYTES;
            long rankShare = c.bytes() / r.tp();
            long blocks = rankShare / value;
            tiers.add(new KvCapacityPlan.TierCapacity("cluster", rankShare, blocks, blocks / perSequence));
            links.add(link("cluster->device", c.linkBytesPerSecond(), value, perSequence, r));
            long perMachine = blocks / c.machines();
            cluster = new KvCapacityPlan.ClusterCapacity(c.bytes(), c.machines(), value, blocks, blocks / perSequence, perMachine,
                    perMachine / perSequence);
        }
        return new KvCapacityPlan(r, g, block, perSequence, List.copyOf(tiers), List.copyOf(links), cluster);
    }

    private static KvCapacityPlan.TierCapacity tier(String name, long kvBytes, long block, long perSequence) {
        long blocks = kvBytes / block;
        return new KvCapacityPlan.TierCapacity(name, kvBytes, blocks, blocks / perSequence);
    }

    private static KvCapacityPlan.LinkBudget link(String name, long bytesPerSecond, long block, long perSequence,
            PlanRequest r) {
        double nanosPerBlock = block * 1e9 / bytesPerSecond;
        // whole blocks in the step: exact in integers, step × bandwidth / (block × 10⁹)
        long blocksPerStep = java.math.BigInteger.valueOf(r.decodeStepNanos())
                .multiply(java.math.BigInteger.valueOf(bytesPerSecond))
                .divide(java.math.BigInteger.valueOf(block).multiply(java.math.BigInteger.valueOf(1_000_000_000L)))
                .longValueExact();
        return new KvCapacityPlan.LinkBudget(name, bytesPerSecond, nanosPerBlock, blocksPerStep,
                blocksPerStep * r.blockTokens(), nanosPerBlock * perSequence);
    }
}
