package dev.strata.analysis.kvsim;

import java.util.Arrays;

/**
 * What a replay counted, in blocks, with byte figures derived from the block size.
 *
 * <p>Immutable; any thread.
 *
 * @param policies           the policy name of each tier, by {@link KvReplaySimulator#DEVICE} index ("" when disabled)
 * @param requests           requests replayed
 * @param accesses           block references over all requests (hits + recomputed)
 * @param hitsByTier         [tier] blocks served from that tier (part of a request's cached prefix)
 * @param recomputed         blocks not served from any tier: prefilled again
 * @param moved              [from tier][to tier] blocks copied between tiers (offloads, reloads)
 * @param strandingEvictions victims that left a tier while a child of theirs was resident in it
 * @param unreachableDrops   blocks dropped because their parent left the last tier (the cascade)
 * @param blockBytes         bytes of one block
 */
public record ReplayResult(String[] policies, long requests, long accesses, long[] hitsByTier, long recomputed,
                           long[][] moved, long strandingEvictions, long unreachableDrops, long blockBytes) {

    public ReplayResult {
        policies = policies.clone();
        hitsByTier = hitsByTier.clone();
        moved = Arrays.stream(moved).map(long[]::clone).toArray(long[][]::new);
    }

    /** Blocks served from any tier. */
    public long hits() {
        return Arrays.stream(hitsByTier).sum();
    }

    /** Blocks served over block references; 0 for an empty trace. */
    public double hitRatio() {
        return accesses == 0 ? 0 : (double) hits() / accesses;
    }

    /** Share of block references served from {@code tier}. */
    public double hitRatio(int tier) {
        return accesses == 0 ? 0 : (double) hitsByTier[tier] / accesses;
    }

    /** Blocks copied from {@code from} to {@code to}. */
    public long moved(int from, int to) {
        return moved[from][to];
    }

    /** Bytes copied from {@code from} to {@code to}. */
    public long bytesMoved(int from, int to) {
        return moved[from][to] * blockBytes;
    }

    /** Bytes of KV computed again by prefill. */
    public long bytesRecomputed() {
        return recomputed * blockBytes;
    }

    @Override
    public long[] hitsByTier() {
        return hitsByTier.clone();
    }

    @Override
    public long[][] moved() {
        return Arrays.stream(moved).map(long[]::clone).toArray(long[][]::new);
    }

    @Override
    public String[] policies() {
        return policies.clone();
    }
}
