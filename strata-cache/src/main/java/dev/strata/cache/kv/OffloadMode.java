package dev.strata.cache.kv;

/**
 * When a committed block's KV is copied from its DEVICE slot into the store (HOST first, then
 * down the store's demotion chain).
 *
 * <ul>
 *   <li>{@link #WRITE_THROUGH}: at commit, asynchronously; eviction then only frees the slot. Costs
 *       link bandwidth for blocks that are never evicted, but a slot can always be freed at once.</li>
 *   <li>{@link #WRITE_BACK}: when the block is evicted from its slot (and at preemption); the slot
 *       is freed once the copy has landed. Copies only what leaves the device.</li>
 *   <li>{@link #NONE}: never; an evicted block is gone (the "no tiers" baseline).</li>
 * </ul>
 *
 * <p>Immutable; any thread.
 */
public enum OffloadMode {
    WRITE_THROUGH,
    WRITE_BACK,
    NONE
}
