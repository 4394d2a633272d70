package dev.strata.cache;

import java.lang.foreign.MemorySegment;

/**
 * Told when a copy of an object leaves a HOST tier of the store by eviction (demoted to a lower
 * tier, dropped, or freed beside another copy), while its bytes are still in place: the hook of a
 * write-behind cache below the store, such as the CLUSTER tier of KV blocks.
 *
 * <p>Threads: called on the thread whose store operation evicts, under the store's lock. The sink
 * must not call back into the store, must not wait on anything outside this process, and must copy
 * what it keeps before it returns: {@code bytes} is freed right after.
 */
@FunctionalInterface
public interface EvictionSink {

    /** A sink that keeps nothing. */
    EvictionSink NONE = (key, kind, bytes) -> { };

    /**
     * @param key   the object's key
     * @param kind  its kind
     * @param bytes its whole contents in the HOST tier ({@code sizeBytes} long), valid during the call only
     */
    void evicting(ObjectKey key, ObjectKind kind, MemorySegment bytes);
}
