package dev.strata.node.index;

import dev.strata.cache.ObjectKey;

/**
 * A snapshot of a {@link BlockIndex}, taken by a scan while other processes may change it (each
 * entry is read atomically, the whole is not).
 *
 * @param hashVersion      the block-hash version recorded in the index header
 * @param modelFingerprint the model fingerprint recorded in the index header
 * @param capacity         entries the index can hold
 * @param published        entries readable now
 * @param writing          entries reserved and being written
 * @param evicting         entries being evicted
 * @param quarantined      entries found corrupt and set aside
 * @param pinned           published entries with at least one live pin
 * @param livePins         live (unexpired, owner alive) pins
 * @param publishedBytes   sum of the lengths of the published blocks
 */
public record IndexStats(
        int hashVersion,
        ObjectKey modelFingerprint,
        long capacity,
        long published,
        long writing,
        long evicting,
        long quarantined,
        long pinned,
        long livePins,
        long publishedBytes) {
}
