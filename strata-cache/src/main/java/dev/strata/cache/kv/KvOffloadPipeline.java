package dev.strata.cache.kv;

import dev.strata.cache.Durability;
import dev.strata.cache.ObjectKey;
import dev.strata.cache.ObjectKind;
import dev.strata.cache.PriorityClass;
import dev.strata.cache.PutStatus;
import dev.strata.cache.TieredStore;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * The offload and publish side of a {@link KvBlockManager}: on the I/O thread, gather-writes a
 * block's slot segments into the store's top tier (a {@code KV_BLOCK} object of the configured
 * durability, LOSSY by default) and/or
 * publishes them in the shared pool, then hands the outcome back to the scheduler thread through
 * {@link KvAsync}. It changes no manager state itself: the {@link Landing} it is given applies the
 * outcome (and any eviction waiting for it).
 *
 * <p>Invariant: each started offload ends in exactly one landing, whatever the store or the pool
 * answered or threw.
 *
 * <p>Threads: {@link #start} on the scheduler thread; the copy on the I/O thread.
 */
final class KvOffloadPipeline {

    /** Applies a finished offload on the scheduler thread. */
    @FunctionalInterface
    interface Landing {
        void landed(DeviceBlock b, PutStatus put, SharedBlockStore.PublishStatus pub, RuntimeException error);
    }

    private final KvLayout layout;
    private final TokenSelection allTokens;
    private final TieredStore store; // null: DEVICE only
    private final SharedBlockStore shared; // null: no shared pool
    private final KvAsync async;
    private final Landing landing;
    private final Durability durability; // of the blocks put into the store

    KvOffloadPipeline(KvLayout layout, TieredStore store, SharedBlockStore shared, KvAsync async, Durability durability,
            Landing landing) {
        this.layout = layout;
        this.allTokens = TokenSelection.all(layout.geometry().blockTokens());
        this.store = store;
        this.shared = shared;
        this.async = async;
        this.landing = landing;
        this.durability = durability;
    }

    /** Starts copying {@code b} to the store and/or the shared pool ({@code b.inFlight} already counts it). */
    void start(DeviceBlock b, boolean toStore, boolean toShared) {
        async.begin();
        final ObjectKey key = b.key;
        final int slot = b.slot;
        final PriorityClass cls = b.priority == PriorityClass.ACTIVE ? PriorityClass.RECENT : b.priority;
        async.execute(() -> {
            PutStatus put = null;
            SharedBlockStore.PublishStatus pub = null;
            RuntimeException error = null;
            try {
                List<MemorySegment> src = KvLoadPipeline.segmentsOf(layout, allTokens, slot);
                if (toStore) {
                    put = store.put(key, ObjectKind.KV_BLOCK, durability, cls, src, 0);
                }
                if (toShared) {
                    pub = shared.publish(key, src);
                }
            } catch (RuntimeException e) {
                error = e;
            }
            final PutStatus p = put;
            final SharedBlockStore.PublishStatus s = pub;
            final RuntimeException err = error;
            async.hand(() -> landing.landed(b, p, s, err));
        });
    }
}
