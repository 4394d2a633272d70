package dev.strata.cache;

import dev.strata.memory.TierKind;

/**
 * A snapshot of one tier of a {@link TieredStore}: occupancy and everything the store did there.
 * Counters run from the store's creation. Immutable; any thread.
 *
 * @param name            tier name
 * @param kind            tier kind
 * @param chainIndex      position in the demotion chain (0 is the top)
 * @param policy          name of the tier's eviction policy
 * @param capacityBytes   tier capacity
 * @param usedBytes       bytes the tier reports allocated (all users)
 * @param highWatermark   fraction of capacity above which a put or promotion evicts
 * @param lowWatermark    fraction of capacity eviction brings the tier back to
 * @param residentObjects copies of the store's objects held here
 * @param residentBytes   payload bytes of those copies
 * @param reservedBytes   allocation bytes of those copies (rounding included)
 * @param reusableBytes   allocation bytes of evicted copies' blocks the store keeps for its next
 *                        allocations here (tiers of uniform blocks; see {@code ReusableBlocks}):
 *                        {@code usedBytes} is {@code reservedBytes + reusableBytes} when the store
 *                        is the tier's only user
 * @param hits            gets served here
 * @param misses          gets that found no copy here and went lower (or missed)
 * @param puts            objects stored here by put
 * @param refusedPuts     puts aimed here that were refused
 * @param evictions       copies that left under pressure
 * @param demotions       evicted copies copied into a lower tier
 * @param promotions      copies made here by promotion
 * @param drops           objects dropped when their last copy left here
 * @param corruptCopies   copies found corrupt here and discarded
 * @param bytesIn         payload bytes copied in from other tiers
 * @param bytesOut        payload bytes copied out to other tiers
 */
public record StoreTierStats(
        String name,
        TierKind kind,
        int chainIndex,
        String policy,
        long capacityBytes,
        long usedBytes,
        double highWatermark,
        double lowWatermark,
        long residentObjects,
        long residentBytes,
        long reservedBytes,
        long reusableBytes,
        long hits,
        long misses,
        long puts,
        long refusedPuts,
        long evictions,
        long demotions,
        long promotions,
        long drops,
        long corruptCopies,
        long bytesIn,
        long bytesOut) {

    /** Hits over lookups that reached this tier, 0 if none. */
    public double hitRate() {
        long lookups = hits + misses;
        return lookups == 0 ? 0.0 : (double) hits / lookups;
    }

    /** Fraction of capacity in use. */
    public double occupancy() {
        return capacityBytes == 0 ? 0.0 : (double) usedBytes / capacityBytes;
    }
}
