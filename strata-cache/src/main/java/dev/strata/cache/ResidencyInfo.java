package dev.strata.cache;

/**
 * Where one copy of an object is (a snapshot for inspection and tests). Immutable; any thread.
 *
 * @param tierName      the tier
 * @param chainIndex    its position in the chain
 * @param handle        the allocation handle in that tier
 * @param reservedBytes the allocation's size (the request rounded up)
 */
public record ResidencyInfo(String tierName, int chainIndex, long handle, long reservedBytes) {
}
