package dev.strata.analysis.kvplan;

import dev.strata.cache.kv.KvGeometry;
import java.util.List;

/**
 * The answer of {@link KvCapacityPlanner}: how many KV blocks and sequences each tier of one rank
 * holds, and how many blocks each link can bring to the device within one decode step.
 *
 * <p>Immutable; any thread.
 *
 * @param request           what was asked
 * @param rankGeometry      the KV geometry of one rank
 * @param blockBytes        bytes of one block on one rank
 * @param blocksPerSequence blocks one sequence of {@code request.seqTokens()} tokens takes
 * @param tiers             capacity per tier, DEVICE first, tiers of size 0 left out (the CLUSTER tier last, as one
 *                          rank sees it: its share of the whole cluster)
 * @param links             transfer budget per link into the device, for the tiers present
 * @param cluster           the whole cluster's capacity and each machine's share of it, or null without a CLUSTER tier
 */
public record KvCapacityPlan(PlanRequest request, KvGeometry rankGeometry, long blockBytes, long blocksPerSequence,
        List<TierCapacity> tiers, List<LinkBudget> links, ClusterCapacity cluster) {

    /**
     * The CLUSTER tier as a whole. Every rank keeps its share of a block as a value of its own
     * ({@code blockBytes} and the value's header), so the cluster holds {@code blocks} blocks of
     * the whole model, seen by every machine; machines that share no prefix get
     * {@code blocks / machines} each.
     *
     * @param bytes               the cluster's memory for KV, bytes
     * @param machines            machines sharing it
     * @param valueBytes          bytes of one value: one rank's block and the value header
     * @param blocks              whole blocks of the model the cluster holds: {@code floor(bytes / (tp × valueBytes))}
     * @param sequences           whole sequences: {@code floor(blocks / blocksPerSequence)}
     * @param blocksPerMachine    {@code floor(blocks / machines)}
     * @param sequencesPerMachine {@code floor(blocksPerMachine / blocksPerSequence)}
     */
    public record ClusterCapacity(long bytes, int machines, long valueBytes, long blocks, long sequences, long blocksPerMachine,
            long sequencesPerMachine) {
    }

    /**
     * One tier of one rank.
     *
     * @param tier      tier name: device, host, pool or disk
     * @param kvBytes   bytes the tier gives to KV on one rank
     * @param blocks    whole blocks that fit: {@code floor(kvBytes / blockBytes)}
     * @param sequences whole sequences that fit: {@code floor(blocks / blocksPerSequence)}
     */
    public record TierCapacity(String tier, long kvBytes, long blocks, long sequences) {
    }

    /**
     * What one link can move into the device during one decode step.
     *
     * @param link                from which tier, e.g. {@code host->device}
     * @param bytesPerSecond      the link's bandwidth per rank
     * @param nanosPerBlock       time to move one block, ns
     * @param blocksPerStep       whole blocks moved in one decode step
     * @param tokensPerStep       tokens of KV those blocks hold
     * @param nanosPerSequence    time to move one whole sequence, ns
     */
    public record LinkBudget(String link, long bytesPerSecond, double nanosPerBlock, long blocksPerStep, long tokensPerStep,
            double nanosPerSequence) {
    }

    /** The device tier's row. */
    public TierCapacity device() {
        return tiers.getFirst();
    }

    /** Blocks held by all tiers together (one rank). */
    public long totalBlocks() {
        return tiers.stream().mapToLong(TierCapacity::blocks).sum();
    }

    /** Sequences held by all tiers together, each tier counting whole sequences. */
    public long totalSequences() {
        return tiers.stream().mapToLong(TierCapacity::sequences).sum();
    }
}
