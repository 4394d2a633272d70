package dev.strata.cache.kv;

/**
 * When committed blocks are published to the cross-process {@link SharedBlockStore}.
 *
 * <ul>
 *   <li>{@link #AT_COMMIT}: as soon as they are committed (other processes can share them at once).</li>
 *   <li>{@link #ON_EVICTION}: when they leave their DEVICE slot (and at preemption).</li>
 * </ul>
 *
 * <p>Immutable; any thread.
 */
public enum SharedPublishMode {
    AT_COMMIT,
    ON_EVICTION
}
