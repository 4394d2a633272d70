package dev.strata.cache.kv;

/**
 * The paths a KV block takes, as the manager counts them.
 *
 * <ul>
 *   <li>{@link #OFFLOAD}: DEVICE slot → store (gather-write through the layout into the top tier).</li>
 *   <li>{@link #RELOAD}: store → DEVICE slot, on demand (a load, a resume, a required block).</li>
 *   <li>{@link #PREFETCH}: store → DEVICE slot ahead of need (lookahead of a progressive load).</li>
 *   <li>{@link #DISK_TO_HOST}: the first stage of a two-stage disk read, into HOST staging.</li>
 *   <li>{@link #STAGE}: store (HOST or DISK) → HOST staging buffer ahead of a preempted sequence's
 *       resume ({@link KvBlockManager#stageForResume}); its resume then takes the block as a
 *       {@link #PREFETCH}.</li>
 *   <li>{@link #SHARED_PUBLISH}: DEVICE slot → the cross-process shared pool.</li>
 *   <li>{@link #SHARED_READ}: the shared pool → DEVICE slot.</li>
 * </ul>
 *
 * <p>Immutable; any thread.
 */
public enum KvLink {
    OFFLOAD,
    RELOAD,
    PREFETCH,
    DISK_TO_HOST,
    STAGE,
    SHARED_PUBLISH,
    SHARED_READ
}
