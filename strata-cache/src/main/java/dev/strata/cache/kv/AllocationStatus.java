package dev.strata.cache.kv;

/**
 * Outcome of {@link KvBlockManager#allocate}. Every outcome is expected; none is an error.
 *
 * <ul>
 *   <li>{@link #ALLOCATED}: the sequence has slots for the new tokens.</li>
 *   <li>{@link #WAIT}: not enough free slots now, but transfers in flight will give slots back
 *       (blocks waiting for their offload to land before eviction, or blocks no sequence holds
 *       whose copy is still under way): poll and try again (the slots obtained so far stay with
 *       the sequence).</li>
 *   <li>{@link #NO_SPACE}: every other slot is held by a running sequence; preempt or release a
 *       sequence first.</li>
 * </ul>
 *
 * <p>Immutable; any thread.
 */
public enum AllocationStatus {
    ALLOCATED,
    WAIT,
    NO_SPACE
}
